"""Operator graph -> feature arrays (numpy) and a `torch_geometric.data.Data`, in `SCHEMA` column order."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from relay_passes.graph import OperatorGraph, OpNode, dtype_bytes
from tvm_cost.features.schema import NUM_STORE_FEATURES, OP_GROUP_NAMES, SCHEMA, op_group

if TYPE_CHECKING:
    from torch_geometric.data import Data


def _log(x: float) -> float:
    return float(np.log1p(max(x, 0.0)))


def node_vector(node: OpNode) -> np.ndarray:
    """One row of `x`: op-kind counts, static counts (log-scaled), loop kinds, aggregated store features."""
    counts = {g: 0 for g in OP_GROUP_NAMES}
    for op in node.op_kinds:
        counts[op_group(op)] += 1
    s = node.stats
    static = [
        *(counts[g] for g in OP_GROUP_NAMES),
        len(node.op_kinds), _log(s["flops"]), _log(s["anchor_flops"]), _log(s["bytes"]), _log(s["output_bytes"]),
        _log(node.intensity), _log(s["reduction_extent"]), len(node.output_shape), dtype_bytes(node.output_dtype),
        s["blocks"], s["loops"], s["max_loop_depth"], s["parallel_loops"], s["vectorized_loops"],
        s["unrolled_loops"], s["thread_loops"], _log(len(node.store_features)),
    ]
    stores = node.store_features
    if len(stores):
        agg = np.concatenate([stores.mean(axis=0), stores.max(axis=0)])
    else:
        agg = np.zeros(2 * NUM_STORE_FEATURES, np.float32)
    return np.concatenate([np.asarray(static, np.float32), agg.astype(np.float32)])


HARDWARE_GLOBALS = ("is_gpu", "hw_cores", "log_hw_peak_gflops", "log_hw_mem_bandwidth_gbs", "log_hw_l1_kb",
                    "log_hw_l2_kb", "log_hw_l3_kb", "hw_clock_ghz")
"""The columns of `u` that describe the target's hardware (the rest describe the graph)."""


def hardware_vector(g: dict[str, Any]) -> list[float]:
    """The `HARDWARE_GLOBALS` values from a graph's globals (``target_kind``, ``hw_cores`` ... ``hw_clock_mhz``)."""
    return [float(g["target_kind"] == "gpu"), g["hw_cores"], _log(g["hw_peak_gflops"]),
            _log(g["hw_mem_bandwidth_gbs"]), _log(g["hw_l1_kb"]), _log(g["hw_l2_kb"]), _log(g["hw_l3_kb"]),
            g["hw_clock_mhz"] / 1000.0]


def graph_arrays(graph: OperatorGraph) -> dict[str, np.ndarray]:
    """Arrays of `graph` under `SCHEMA`.

    Shapes:
        x: [N, len(SCHEMA.node)], edge_index: [2, E] (int64), edge_attr: [E, len(SCHEMA.edge)],
        u: [1, len(SCHEMA.globals)].
    """
    x = np.stack([node_vector(n) for n in graph.nodes]) if graph.nodes else \
        np.zeros((0, len(SCHEMA.node)), np.float32)
    edge_index = np.array([[e.src for e in graph.edges], [e.dst for e in graph.edges]], np.int64).reshape(2, -1)
    edge_attr = np.array([[_log(e.bytes), len(e.shape), dtype_bytes(e.dtype), float(e.dtype.startswith(("float",
                          "bfloat")))] for e in graph.edges], np.float32).reshape(-1, len(SCHEMA.edge))
    g = graph.globals
    u = np.array([[
        _log(g["total_flops"]), _log(g["total_bytes"]), g["num_nodes"], g["num_edges"], g["num_tasks"],
        _log(g["batch_size"]), *hardware_vector(g),
    ]], np.float32)
    assert x.shape[1] == len(SCHEMA.node) and u.shape[1] == len(SCHEMA.globals)
    return {"x": x, "edge_index": edge_index, "edge_attr": edge_attr, "u": u}


def to_pyg(graph: OperatorGraph) -> "Data":
    """A `torch_geometric.data.Data` with `x`, `edge_index`, `edge_attr`, `u` and the schema hash."""
    import torch
    from torch_geometric.data import Data

    arrays = graph_arrays(graph)
    return Data(
        x=torch.from_numpy(arrays["x"]), edge_index=torch.from_numpy(arrays["edge_index"]),
        edge_attr=torch.from_numpy(arrays["edge_attr"]), u=torch.from_numpy(arrays["u"]),
        num_nodes=len(graph.nodes), schema_hash=SCHEMA.hash,
    )
