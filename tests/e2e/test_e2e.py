"""End-to-end measurement: real TVM compile + VM timing on tiny models, resumable records, failures kept apart."""

from __future__ import annotations

import json

import pytest
import tvm

from tvm_cost.e2e.measure import measure_e2e
from tvm_cost.e2e.run import run_e2e, sample_specs
from tvm_cost.e2e.store import E2EStore
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
