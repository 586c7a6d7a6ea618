"""ResNet-18 from the zoo, imported via ONNX and via torch.export: the graph is TVM's own kernels."""

from __future__ import annotations

import networkx as nx
import pytest
import torch
import tvm
from tvm import relax
import tvm_ffi
from tvm.s_tir import meta_schedule as ms

from relay_helpers import call_tir_count

from relay_passes.canonicalize import canonical_order

from tvm_cost import zoo
from tvm_cost.graph_api import operator_graph
from tvm_cost.importer import import_model

TARGET = {"kind": "llvm", "num-cores": 2}


@pytest.fixture(scope="module")
def resnet18():
    return zoo.build("resnet18", batch=1)


@pytest.fixture(scope="module")
def onnx_path(resnet18, tmp_path_factory):
    return zoo.export_onnx(resnet18, tmp_path_factory.mktemp("r18") / "resnet18.onnx")


@pytest.fixture(scope="module")
def graphs(resnet18, onnx_path):
    via_export = operator_graph(resnet18.module, example_inputs=resnet18.example_inputs, target=TARGET)
    via_onnx = operator_graph(str(onnx_path), target=TARGET)
    return via_export, via_onnx


def _tvm_fused(mod: tvm.IRModule) -> tvm.IRModule:
    """TVM's own fusion, as `static_shape_tuning_pipeline` runs it, after TVM's batch-norm folding (which torch's
    ONNX exporter has already done); independent of `relay_passes.lower`."""
    target = tvm.target.Target(TARGET)
    with target:
        mod = relax.transform.FoldConstant()(relax.transform.FoldBatchnormToConv2D()(mod))
        mod = relax.transform.DecomposeOpsForInference()(mod)
        return relax.get_pipeline("zero")(mod)


def test_node_count_and_task_names_match_tvm(graphs, onnx_path, resnet18):
    raw = {"onnx": import_model(str(onnx_path)).mod,
           "export": import_model(resnet18.module, example_inputs=resnet18.example_inputs).mod}
    target = tvm.target.Target(TARGET)
    for graph, mod in zip(graphs, (raw["export"], raw["onnx"])):
        # as many nodes as TVM's own fused module has kernels, whatever the binding order
        assert len(graph.nodes) == call_tir_count(_tvm_fused(mod))
        # and the same tasks (names and workload hashes) as extract_tasks on the canonically ordered module
        tasks = ms.relax_integration.extract_tasks(_tvm_fused(canonical_order(mod)), target)
        assert sorted(n.task_name for n in graph.nodes) == sorted(
            t.task_name for t in tasks for _ in range(t.weight))
        assert {n.workload_hash for n in graph.nodes} == {str(tvm_ffi.structural_hash(t.dispatched[0]))
                                                          for t in tasks}


def _closed_form_flops(module: torch.nn.Module, inputs) -> tuple[list[int], list[int]]:
    convs, denses = [], []

    def conv_hook(m, args, out):
        n, k, oh, ow = out.shape
        convs.append(2 * n * k * (m.in_channels // m.groups) * m.kernel_size[0] * m.kernel_size[1] * oh * ow)

    def dense_hook(m, args, out):
        denses.append(2 * out.numel() * m.in_features)

    handles = [m.register_forward_hook(conv_hook if isinstance(m, torch.nn.Conv2d) else dense_hook)
               for m in module.modules() if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))]
    with torch.no_grad():
        module(*inputs)
    for h in handles:
        h.remove()
    return sorted(convs), sorted(denses)


def test_conv_and_dense_flops_equal_closed_forms(graphs, resnet18):
    convs, denses = _closed_form_flops(resnet18.module, resnet18.example_inputs)
    assert len(convs) == 20 and sum(convs) + sum(denses) == 2 * 1_814_073_344  # torchvision's 1.814 GMACs
    for graph in graphs:
        got_convs = sorted(n.stats["anchor_flops"] for n in graph.nodes if n.op_kinds[0] == "conv2d")
        got_denses = sorted(n.stats["anchor_flops"] for n in graph.nodes if n.op_kinds[0] == "matmul")
        assert got_convs == convs and got_denses == denses


def _as_nx(graph) -> nx.DiGraph:
    g = nx.DiGraph()
    for i, n in enumerate(graph.nodes):
        g.add_node(i, key=(tuple(n.op_kinds), tuple(n.output_shape), n.flops, n.bytes))
    for e in graph.edges:
        g.add_edge(e.src, e.dst, shape=tuple(e.shape))
    return g


def test_both_import_paths_give_the_same_graph(graphs):
    via_export, via_onnx = graphs
    assert len(via_export.nodes) == len(via_onnx.nodes) == 24
    assert nx.is_isomorphic(_as_nx(via_export), _as_nx(via_onnx),
                            node_match=lambda a, b: a["key"] == b["key"],
                            edge_match=lambda a, b: a["shape"] == b["shape"])
    assert [n.task_name for n in via_export.nodes] == [n.task_name for n in via_onnx.nodes]
    # Same workloads, except the classifier, whose bias add has its operands swapped (bias + x from
    # torch.export, x + bias from ONNX): the same kernel that TVM hashes differently
    differ = [(a.task_name, b.task_name) for a, b in zip(via_export.nodes, via_onnx.nodes)
              if a.workload_hash != b.workload_hash]
    assert [a for a, _ in differ] == ["fused_matmul_add9"]
