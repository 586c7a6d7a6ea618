"""End-to-end measurement: real TVM compile + VM timing on tiny models, resumable records, failures kept apart."""

from __future__ import annotations

import json

import pytest
import tvm

from tvm_cost.data.e2e_dataset import align_kernel_times
from tvm_cost.e2e.measure import measure_e2e
from tvm_cost.e2e.run import run_e2e, sample_specs
from tvm_cost.e2e.store import E2EStore
from tvm_cost.errors import TvmCostError
from tvm_cost.importer import import_model

TINY = "zoo:mlp,width=16,depth=1,in_features=32,batch=1"


def test_measure_a_tiny_model():
    imported = import_model(TINY)
    import numpy as np

    result = measure_e2e(imported.mod, tvm.target.Target({"kind": "llvm", "num-cores": 1}),
                         (np.zeros((1, 32), "float32"),), repeat=3, min_repeat_ms=1)
    assert len(result.repeats_ms) == 3 and result.latency_ms > 0
    assert result.planned_memory_bytes is not None and result.planned_memory_bytes > 0


def test_run_resumes_and_keeps_failures_apart(tmp_path):
    out = tmp_path / "e2e.jsonl"
    summary = run_e2e([TINY, "zoo:no_such_family"], target='{"kind": "llvm", "num-cores": 1}', out=out,
                      repeat=2, min_repeat_ms=1)
    assert (summary["measured"], summary["failed"]) == (1, 1)
    records = list(E2EStore(out).records())
    ok, failed = [r for r in records if r["status"] == "ok"], [r for r in records if r["status"] == "failed"]
    assert len(ok) == 1 and "latency_ms" in ok[0] and ok[0]["tvm"] == tvm.__version__
    assert ok[0]["hardware_spec"]["name"] == ok[0]["hardware"] and ok[0]["hardware_spec"]["kind"] == "cpu"
    assert "latency_ms" not in failed[0] and "unknown zoo family" in failed[0]["error"]
    again = run_e2e([TINY], target='{"kind": "llvm", "num-cores": 1}', out=out, repeat=2, min_repeat_ms=1)
    assert (again["measured"], again["skipped"]) == (0, 1)


def test_a_broken_trailing_line_is_skipped_and_redone(tmp_path, caplog):
    store = E2EStore(tmp_path / "e.jsonl")
    store.append({"key": "a", "status": "ok"})
    with store.path.open("a") as f:
        f.write('{"key": "b", "sta')  # a writer killed mid-line
    assert store.done_keys() == {"a"}
    assert "broken line" in caplog.text
    store.append({"key": "b", "status": "ok"})
    assert store.done_keys() == {"a", "b"}
    assert json.loads(store.path.read_text().splitlines()[-1])["key"] == "b"


def test_sampler_respects_the_flop_budget():
    from tvm_cost.e2e.run import torch_gflops

    specs = sample_specs(3, seed=1, family="mlp", max_gflops=0.01)
    assert len(specs) == 3 and all(torch_gflops(s) <= 0.01 for s in specs)
    with pytest.raises(Exception, match="under"):
        sample_specs(2, seed=0, family="mlp", max_gflops=1e-9)


def test_kernel_times_follow_the_operator_graph():
    import numpy as np

    from tvm_cost.graph_api import operator_graph

    spec = "zoo:resnet18,width=0.25,resolution=32,batch=1"
    imported = import_model(spec)
    result = measure_e2e(imported.mod, tvm.target.Target({"kind": "llvm", "num-cores": 1}),
                         (np.zeros((1, 3, 32, 32), "float32"),), repeat=3, min_repeat_ms=1, kernel_runs=3)
    graph = operator_graph(spec, target='{"kind": "llvm", "num-cores": 1}')
    names = [n.func_name for n in graph.nodes]
    node_ms = align_kernel_times(names, result.kernels_ms)
    # every node ran as a kernel except the reshapes TVM's VM turns into views
    assert {name for name, ms in zip(names, node_ms) if ms == 0} <= {"reshape"}
    total = sum(ms for _, ms in result.kernels_ms)
    assert all(ms > 0 for _, ms in result.kernels_ms) and total == pytest.approx(float(node_ms.sum()), rel=1e-5)
    # the kernels are the model's work: their sum is most of one inference (bounds loose: CI machines are shared)
    assert 0.5 * min(result.repeats_ms) < total < 2.0 * max(result.repeats_ms)


def test_kernel_times_that_do_not_fit_the_graph_are_refused():
    assert align_kernel_times(["a", "reshape", "b"], [["a", 1.0], ["b", 2.0]]).tolist() == [1.0, 0.0, 2.0]
    with pytest.raises(TvmCostError, match="'c' does not match"):
        align_kernel_times(["a", "b"], [["a", 1.0], ["c", 2.0]], source="x.jsonl")


def test_another_cpus_records_are_never_extended(tmp_path):
    out = tmp_path / "e2e.jsonl"
    E2EStore(out).append({"key": "x", "status": "ok", "hardware": "Some Other CPU", "latency_ms": 1.0})
    with pytest.raises(TvmCostError, match="e2e.jsonl: measured on .Some Other CPU."):
        run_e2e([TINY], target='{"kind": "llvm", "num-cores": 1}', out=out, repeat=2, min_repeat_ms=1)
    assert len(list(E2EStore(out).records())) == 1  # nothing measured, nothing appended
