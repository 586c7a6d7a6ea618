"""JSON and PyG exports, and their round trip."""

from __future__ import annotations

import json

import numpy as np
import torch

from relay_passes.build import build_operator_graph
from relay_passes.graph import OperatorGraph
from tvm_cost.features.arrays import to_pyg
from tvm_cost.features.schema import SCHEMA


def test_json_round_trip_keeps_graph_and_features(tiny_mod, tmp_path):
    graph = build_operator_graph(tiny_mod, "llvm")
    path = tmp_path / "g.json"
    graph.save_json(path)
    data = json.loads(path.read_text())
    assert {"nodes", "edges", "globals", "schema_version"} <= set(data)
    assert all({"name", "task_name", "flops", "bytes"} <= set(n) for n in data["nodes"])
    back = OperatorGraph.load_json(path)
    assert [n.name for n in back.nodes] == [n.name for n in graph.nodes]
    for a, b in zip(graph.nodes, back.nodes):
        np.testing.assert_array_equal(a.store_features, b.store_features)
    before, after = to_pyg(graph), to_pyg(back)
    for key in ("x", "edge_index", "edge_attr", "u"):
        assert torch.equal(before[key], after[key])


def test_pyg_shapes_follow_the_schema(tiny_mod):
    graph = build_operator_graph(tiny_mod, "llvm")
    data = to_pyg(graph)
    assert data.x.shape == (len(graph.nodes), len(SCHEMA.node))
    assert data.edge_index.shape == (2, len(graph.edges))
    assert data.edge_attr.shape == (len(graph.edges), len(SCHEMA.edge))
    assert data.u.shape == (1, len(SCHEMA.globals))
    assert data.schema_hash == SCHEMA.hash and torch.isfinite(data.x).all()


def test_schema_hash_changes_with_a_column_name():
    from dataclasses import replace

    assert replace(SCHEMA, node=SCHEMA.node[:-1] + ("renamed",)).hash != SCHEMA.hash
    assert replace(SCHEMA, version="999").hash != SCHEMA.hash
