"""`tvm_cost.estimate` / `tvm-cost estimate`: the per-subgraph predictions add up to the end-to-end estimate;
JSON and PNG outputs; clear errors for a missing or mismatched estimator."""

from __future__ import annotations

import json

import pytest
import torch

from tvm_cost.cli import main
from tvm_cost.errors import TvmCostError
from tvm_cost.estimation.api import estimate
from tvm_cost.features.arrays import to_pyg
from tvm_cost.features.schema import SCHEMA
from tvm_cost.graph_api import operator_graph
from tvm_cost.models import EnsembleModel, ModelConfig
from tvm_cost.train import save_checkpoint

SPEC = "zoo:mlp,width=16,depth=2,in_features=32,batch=2"
TARGET = '{"kind": "llvm", "num-cores": 1}'


@pytest.fixture(scope="module")
def untrained_estimator(tmp_path_factory):
    """An untrained two-member KernelSumNet ensemble normalized on one real graph with synthetic node times."""
    data = to_pyg(operator_graph(SPEC, target=TARGET))
    data.node_ms = torch.linspace(0.01, 1.0, data.num_nodes)  # synthetic, for normalization only
    model = EnsembleModel(ModelConfig.for_schema(SCHEMA, hidden=16, layers=1), kind="kernel_sum", size=2)
    model.fit_normalization([data])
    return save_checkpoint(tmp_path_factory.mktemp("est") / "tiny", model, schema=SCHEMA)


def test_subgraphs_add_up_to_the_estimate(untrained_estimator):
    result = estimate(SPEC, target=TARGET, checkpoint=untrained_estimator)
    graph = operator_graph(SPEC, target=TARGET)
    assert len(result.subgraphs) == len(graph.nodes)
    ms = [s.predicted_ms for s in result.subgraphs]
    assert ms == sorted(ms, reverse=True) and all(m > 0 for m in ms)
    assert sum(ms) == pytest.approx(result.end_to_end_ms, rel=1e-6)
    assert sum(s.share for s in result.subgraphs) == pytest.approx(1.0, rel=1e-6)
    assert result.low_ms <= result.end_to_end_ms <= result.high_ms
    assert set(result.seconds) == {"lower", "features", "predict"} and result.schedules == "default"


def test_cli_writes_json_and_png(untrained_estimator, tmp_path, capsys):
    out, png = tmp_path / "e.json", tmp_path / "e.png"
    assert main(["estimate", SPEC, "--target", TARGET, "--checkpoint", str(untrained_estimator),
                 "--json", str(out), "--plot", str(png), "--top", "3"]) == 0
    report = json.loads(out.read_text())
    assert {"end_to_end_ms", "subgraphs", "target"} <= set(report)
    assert all({"name", "predicted_ms"} <= set(s) for s in report["subgraphs"])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "end to end" in capsys.readouterr().out


def test_no_estimator_for_gpus_and_wrong_checkpoints(untrained_estimator, tmp_path, capsys):
    with pytest.raises(TvmCostError, match="no end-to-end estimator for target cuda"):
        estimate(SPEC, target="cuda-sm80")
    kernel_model = EnsembleModel(ModelConfig.for_schema(SCHEMA, hidden=8, layers=1), kind="seernet", size=2)
    wrong = save_checkpoint(tmp_path / "wrong", kernel_model, schema=SCHEMA)
    with pytest.raises(TvmCostError, match="expected KernelSumNet"):
        estimate(SPEC, target=TARGET, checkpoint=wrong)
    stale = save_checkpoint(tmp_path / "stale", kernel_model, schema={"name": SCHEMA.name, "version": 0,
                                                                       "hash": "0" * 16})
    assert main(["estimate", SPEC, "--target", TARGET, "--checkpoint", str(stale)]) == 2
    assert "feature schema hash" in capsys.readouterr().err


def test_top_level_estimate_is_the_api_function():
    import tvm_cost
    import tvm_cost.estimation.api  # importing the subpackage must not shadow the function

    assert tvm_cost.estimate is tvm_cost.estimation.api.estimate
    assert "estimate" in tvm_cost.__all__


def test_an_estimator_from_another_cpu_warns_and_says_which(untrained_estimator, tmp_path, monkeypatch, caplog):
    from tvm_cost.collect import manifest
    from tvm_cost.train import load_checkpoint

    model, _ = load_checkpoint(untrained_estimator, schema=SCHEMA)
    path = save_checkpoint(tmp_path / "amd", model, schema=SCHEMA, extra={"measured_on": "AMD EPYC"})
    monkeypatch.setattr(manifest, "cpu_model", lambda: "Intel(R) Xeon(R) Processor")
    with caplog.at_level("WARNING", logger="tvm_cost.estimation.api"):
        result = estimate(SPEC, target=TARGET, checkpoint=path)
    assert result.measured_on == "AMD EPYC"
    assert "measured on AMD EPYC; this machine is Intel(R) Xeon(R) Processor" in caplog.text
    caplog.clear()
    monkeypatch.setattr(manifest, "cpu_model", lambda: "AMD EPYC")
    with caplog.at_level("WARNING", logger="tvm_cost.estimation.api"):
        estimate(SPEC, target=TARGET, checkpoint=path)
    assert "measured on" not in caplog.text


def test_estimate_with_per_kernel_trees(tmp_path):
    from tvm_cost.estimation.kernel_boost import KernelBoost

    data = to_pyg(operator_graph(SPEC, target=TARGET))
    data.node_ms = torch.linspace(0.01, 1.0, data.num_nodes).double()  # synthetic, to fit something
    path = KernelBoost(rounds=5, members=2).fit([data]).save(tmp_path / "kb", schema=SCHEMA)
    result = estimate(SPEC, target=TARGET, checkpoint=path)
    assert len(result.subgraphs) == data.num_nodes and result.low_ms <= result.end_to_end_ms <= result.high_ms
    assert sum(s.predicted_ms for s in result.subgraphs) == pytest.approx(result.end_to_end_ms, rel=1e-6)
