"""The operator-graph pass on a tiny model: nodes are TVM's kernels, edges its tensors, features per schedule."""

from __future__ import annotations

import numpy as np
import pytest
import tvm
from tvm import relax
from tvm.s_tir import meta_schedule as ms

from relay_helpers import call_tir_count

from relay_passes.build import build_operator_graph, graph_from_lowered
from relay_passes.lower import lower
from relay_passes.schedule import workload_module
from tvm_cost.errors import TvmCostError


@pytest.fixture(scope="module")
def llvm_graph(tiny_mod):
    return build_operator_graph(tiny_mod, "llvm", source="tiny", batch_size=2)


def test_nodes_are_the_kernels_tvm_tunes(tiny_mod, llvm_graph):
    target = tvm.target.Target({"kind": "llvm", "num-cores": 2})
    fused = lower(tiny_mod, target).mod
    assert len(llvm_graph.nodes) == call_tir_count(fused)
    tasks = ms.relax_integration.extract_tasks(fused, target)
    assert {n.task_name for n in llvm_graph.nodes} == {t.task_name for t in tasks}
    weights = {t.task_name: t.weight for t in tasks}
    for name, weight in weights.items():
        assert sum(n.task_name == name for n in llvm_graph.nodes) == weight


def test_edges_follow_tensors(llvm_graph):
    nodes = llvm_graph.nodes
    # conv1's output is both conv2's input and the residual: the fused kernel takes it once
    conv1, conv2 = [i for i, n in enumerate(nodes) if n.op_kinds[0] == "conv2d"]
    into_conv2 = [e for e in llvm_graph.edges if e.dst == conv2]
    assert [e.src for e in into_conv2] == [conv1]
    assert all(e.shape == [2, 8, 16, 16] and e.bytes == 2 * 8 * 16 * 16 * 4 for e in into_conv2)
    assert all(e.src < e.dst for e in llvm_graph.edges)


def test_conv_flops_and_globals(llvm_graph):
    conv1 = next(n for n in llvm_graph.nodes if n.op_kinds[0] == "conv2d")
    assert conv1.stats["anchor_flops"] == 2 * 2 * 8 * 3 * 3 * 3 * 16 * 16
    g = llvm_graph.globals
    assert g["num_nodes"] == len(llvm_graph.nodes) and g["batch_size"] == 2
    assert g["total_flops"] == pytest.approx(sum(n.flops for n in llvm_graph.nodes))
    assert g["target_kind"] == "cpu" and g["hw_cores"] == 2


def test_default_cpu_schedule_features(llvm_graph):
    for node in llvm_graph.nodes:
        assert node.schedule_source == "default"
        assert node.store_features.shape[1] == 164 and len(node.store_features) >= 1
        assert np.isfinite(node.store_features).all()


def test_cuda_sm90_features_without_a_gpu(tiny_mod, llvm_graph):
    graph = build_operator_graph(tiny_mod, "cuda-sm90")
    assert len(graph.nodes) == len(llvm_graph.nodes)
    assert graph.globals["target_kind"] == "gpu" and graph.target["arch"] == "sm_90"
    for node in graph.nodes:
        assert node.store_features.shape[1] == 164 and len(node.store_features) >= 1
        assert node.stats["thread_loops"] >= 1  # DLight bound the kernel to threads


def test_database_record_gives_the_schedule(tiny_mod, llvm_graph, tmp_path):
    target = tvm.target.Target({"kind": "llvm", "num-cores": 2})
    fused = lower(tiny_mod, target).mod
    conv = next(n for n in llvm_graph.nodes if n.op_kinds[0] == "conv2d")
    workload = workload_module(fused[conv.func_name])
    sch = tvm.s_tir.Schedule(workload)
    block = sch.get_sblock("conv2d_nchw")
    outer = sch.get_loops(block)[1]
    sch.parallel(outer)
    db = ms.database.JSONDatabase(str(tmp_path / "w.json"), str(tmp_path / "r.json"))
    db.commit_tuning_record(ms.database.TuningRecord(
        sch.trace, db.commit_workload(workload), [1e-3], target, ms.arg_info.ArgInfo.from_prim_func(workload["main"])))
    graph = build_operator_graph(tiny_mod, "llvm", database=db)
    tuned = next(n for n in graph.nodes if n.name == conv.name)
    assert tuned.schedule_source == "database" and tuned.stats["parallel_loops"] == 1
    assert not np.array_equal(tuned.store_features, conv.store_features)
    assert all(n.schedule_source == "default" for n in graph.nodes if n.name != conv.name)


def test_a_module_without_kernels_is_an_empty_graph():
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((2, 2), "float32"))
    with bb.function("main", [x]):
        bb.emit_func_output(x)
    with pytest.raises(TvmCostError, match="empty graph"):
        build_operator_graph(bb.get(), "llvm", source="identity")


def test_kernels_dlight_matmul_fails_on_get_the_other_cuda_rules(caplog):
    """DLight's Matmul rule raises on a conv fused with a long add/multiply chain (skip/none-only NB201 cells run
    as HELP ran them); those kernels are scheduled by the other rules and say so, the rest keep TVM's default."""
    from tvm_cost.data.external.nasbench201_relax import nb201_to_relax
    from tvm_cost.targets import resolve_target

    resolved = resolve_target("cuda-2080ti")
    cell = "|skip_connect~0|+|none~0|skip_connect~1|+|none~0|none~1|skip_connect~2|"
    mod = nb201_to_relax(cell, as_run=True, channels=4, cells_per_stage=2, batch=2)
    graph = graph_from_lowered(lower(mod, resolved.tvm_target()), resolved, batch_size=2)
    fallback = [n for n in graph.nodes if n.schedule_source == "default-fallback"]
    assert fallback and all(n.op_kinds[0] == "conv2d" and len(n.op_kinds) > 8 for n in fallback)
    assert any(n.schedule_source == "default" for n in graph.nodes)
    assert all(n.store_features.shape[0] > 0 for n in fallback)
    assert "scheduled without it" in caplog.text
