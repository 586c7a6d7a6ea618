"""`tvm-cost graph` end to end on a small zoo model."""

from __future__ import annotations

import json

from tvm_cost.cli import main


def test_graph_prints_a_table_and_writes_json(tmp_path, capsys):
    out = tmp_path / "mlp.json"
    assert main(["graph", "zoo:mlp,width=32,depth=2,batch=2", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "GFLOPs" in printed and "fused_matmul" in printed and "batch 2" in printed
    data = json.loads(out.read_text())
    assert {"nodes", "edges", "globals", "schema_version"} <= set(data)
    assert len(data["nodes"]) == data["globals"]["num_nodes"] >= 2
    first = data["nodes"][0]
    assert {"name", "task_name", "flops", "bytes"} <= set(first)
    assert first["flops"] == 2 * 2 * 784 * 32 + 2 * 32 * 2  # matmul + bias add + relu on [2, 32]


def test_op_level_has_more_nodes_than_fused(tmp_path):
    fused, flat = tmp_path / "f.json", tmp_path / "o.json"
    assert main(["graph", "zoo:mlp,width=32,depth=2", "--json", str(fused), "--no-store-features"]) == 0
    assert main(["graph", "zoo:mlp,width=32,depth=2", "--op-level", "--json", str(flat)]) == 0
    n_fused = len(json.loads(fused.read_text())["nodes"])
    n_flat = len(json.loads(flat.read_text())["nodes"])
    assert n_flat > n_fused
    assert json.loads(fused.read_text())["nodes"][0]["store_features"] is None


def test_bad_target_is_one_line(capsys):
    assert main(["graph", "zoo:mlp", "--target", "tpu-v9"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown target 'tpu-v9'" in err[0]
