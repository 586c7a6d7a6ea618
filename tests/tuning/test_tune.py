"""Entry points: cost-model kinds, and the GNN cost model inside real MetaSchedule loops."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tuning_tasks import matmul_relu
from tvm.s_tir import meta_schedule as ms

from tvm_cost.tuning import COST_MODEL_KINDS, EnsembleCostModel, GNNCostModel, RankerCostModel, auto_kind, \
    make_cost_model, tune_tir
from tvm_cost.tuning.ranker_model import MIN_FIT
from tvm_cost.tuning.screen import ScreenedCostModel
from tvm_cost.tuning.xgb import is_xgb

HERE = Path(__file__).parent


def test_make_cost_model_kinds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tvm_cost.tuning import checkpoints

    monkeypatch.setattr(checkpoints, "CHECKPOINT_DIR", tmp_path)  # nothing shipped: untrained GNN
    assert COST_MODEL_KINDS == ("auto", "gnn", "xgb", "ensemble", "ranker", "gnn+ranker", "ranker-trace",
                                "ranker-screened", "gnn-screened", "random")
    assert isinstance(make_cost_model("gnn", target="llvm"), GNNCostModel)
    assert is_xgb(make_cost_model("xgb"))
    assert isinstance(make_cost_model("ensemble", target="llvm"), EnsembleCostModel)
    assert isinstance(make_cost_model("ranker", target="llvm"), RankerCostModel)
    both = make_cost_model("gnn+ranker", target="llvm")
    assert isinstance(both, EnsembleCostModel) and isinstance(both.xgb, RankerCostModel)
    assert both.xgb_warmup == MIN_FIT and both.current_weights() == (1.0, 0.0)  # no ranker shipped: weighed in later
    trace = make_cost_model("ranker-trace", target="llvm")
    assert isinstance(trace, RankerCostModel) and trace.feature_set == "trace"
    screened = make_cost_model("ranker-screened", target="llvm")
    assert isinstance(screened, ScreenedCostModel) and screened.screen.feature_set == "trace"
    assert screened.model.feature_set == "rows" and screened.screen.featurizer is screened.model.featurizer
    gnn_screened = make_cost_model("gnn-screened", target="llvm")
    assert isinstance(gnn_screened, ScreenedCostModel) and isinstance(gnn_screened.model, GNNCostModel)
    assert gnn_screened.screen.feature_set == "trace"
    assert gnn_screened.screen.featurizer is gnn_screened.model.featurizer
    assert isinstance(make_cost_model("random", seed=1), ms.cost_model.RandomModel)
    mine = GNNCostModel(checkpoint=None)
    assert make_cost_model(mine) is mine
    for bad in ("mlp", "GNN", 3, None):
        with pytest.raises(ValueError, match="choices: auto, gnn, xgb, ensemble, ranker, gnn\\+ranker, ranker-trace, "
                                             "ranker-screened, gnn-screened, random"):
            make_cost_model(bad)


def test_the_tune_command_offers_every_kind():
    from tvm_cost.cli import build_parser

    parser = build_parser()
    tune = next(a for a in parser._subparsers._group_actions[0].choices["tune"]._actions  # noqa: SLF001
                if a.dest == "cost_model")
    assert tuple(tune.choices) == COST_MODEL_KINDS and tune.default == "auto"


def test_auto_takes_the_ranker_where_one_ships_else_the_ensemble(tmp_path, monkeypatch):
    from tvm_cost.tuning import checkpoints
    from tvm_cost.tuning.tune import AUTO_WITH_RANKER

    assert AUTO_WITH_RANKER in COST_MODEL_KINDS and AUTO_WITH_RANKER != "auto"
    assert AUTO_WITH_RANKER == "ranker-trace"
    assert auto_kind("llvm") == AUTO_WITH_RANKER  # llvm-1core-ranker-trace ships (for any core count)
    assert auto_kind({"kind": "llvm", "num-cores": 8}) == AUTO_WITH_RANKER
    assert auto_kind("cuda-sm90") == "ensemble"  # no CUDA ranker ships
    assert isinstance(make_cost_model("auto", target="cuda-sm90"), EnsembleCostModel)
    with pytest.raises(ValueError, match="needs the target"):
        make_cost_model("auto")
    monkeypatch.setattr(checkpoints, "CHECKPOINT_DIR", tmp_path)  # nothing shipped
    assert auto_kind("llvm") == "ensemble"


def test_entry_points_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        tune_tir(matmul_relu(8), "llvm")  # type: ignore[call-arg]


def run_worker(modes: str, work_dir, timeout: float) -> dict:
    proc = subprocess.run([sys.executable, str(HERE / "tune_worker.py"), modes, str(work_dir)], capture_output=True,
                          text=True, timeout=timeout, check=False)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    return json.loads(lines[-1].removeprefix("RESULT "))


@pytest.fixture(scope="module")
def dummy_tunes(tmp_path_factory) -> dict:
    """Both dummy tunes in one subprocess (one tvm import, one intrinsics import)."""
    return run_worker("dummy-tir,dummy-model", tmp_path_factory.mktemp("dummy"), timeout=600)


def test_metaschedule_loop_with_dummy_builder_and_runner(dummy_tunes):
    """16 trials of real evolutionary search on a tiny matmul; DummyRunner's times are random (not measured)."""
    out = dummy_tunes["dummy-tir"]
    assert len(out["run_secs"]) == 16
    assert out["calls"]["predict"] >= 2 and out["calls"]["update"] == 2, out["calls"]
    info = out["info"]
    assert info["mode"] == "gnn" and info["buffered"] == 16 and info["updates"] == 2, info


def test_tune_model_with_dummy_builder_and_runner(dummy_tunes):
    """A whole (tiny) model: imported, lowered and fused, its kernels tuned by MetaSchedule with the GNN."""
    out = dummy_tunes["dummy-model"]
    assert len(out["run_secs"]) == 8 and out["calls"]["predict"] >= 1
    info = out["info"]
    assert info["buffered"] == 8 and info["tasks"] >= 1 and info["mode"] == "gnn", info


@pytest.mark.tune
def test_short_real_tune(tmp_path):
    """8 real trials (default builder + LocalRunner) of a tiny matmul guided by the GNN cost model."""
    out = run_worker("real-tir", tmp_path, timeout=900)["real-tir"]
    measured = [s for s in out["run_secs"] if s and all(v < 1e9 for v in s)]
    assert len(out["run_secs"]) == 8 and measured, out["run_secs"]
    info = out["info"]
    assert info["mode"] == "gnn" and info["buffered"] == len(measured) and info["updates"] >= 1, info
