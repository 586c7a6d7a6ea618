"""The checkpoints shipped in the package (CPU: llvm-1core, without PerStoreFeature rows; GPU: cuda-h200; each
with its times member ``-times``; the CPU ranker llvm-1core-ranker): small, safetensors / XGBoost binary + JSON
only, current feature schema, loaded by `GNNCostModel()` and `RankerCostModel()` for their target; a stale schema
is refused in one line."""

from __future__ import annotations

import json
import shutil

import pytest

from tvm_cost.errors import TvmCostError
from tvm_cost.features.program_schema import CANDIDATE_SCHEMA, PROGRAM_SCHEMA
from tvm_cost.models import ModelConfig, SeerNet
from tvm_cost.train import load_checkpoint, read_metadata, save_checkpoint
from tvm_cost.tuning import CHECKPOINT_DIR, GNNCostModel, RankerCostModel
from tvm_cost.tuning.cost_model import reads_store_features
from tvm_cost.tuning.ranker import LAYOUTS, load_ranker
from tvm_cost.tuning.ranker_model import SUFFIXES

SHIPPED = CHECKPOINT_DIR / "llvm-1core.safetensors"


@pytest.mark.parametrize("name,kind,rows", [("llvm-1core", "llvm", False), ("cuda-h200", "cuda", True)])
def test_shipped_checkpoint_matches_the_schema_and_loads_without_pickle(name, kind, rows):
    shipped = CHECKPOINT_DIR / f"{name}.safetensors"
    assert shipped.is_file() and shipped.with_suffix(".json").is_file()
    assert shipped.stat().st_size < 5e6
    assert sorted(p.name for p in CHECKPOINT_DIR.iterdir() if p.name.startswith(f"{name}.")) == \
        [f"{name}.json", f"{name}.safetensors"]  # nothing pickled beside it
    meta = read_metadata(shipped)
    assert meta["feature_schema"] == {"name": CANDIDATE_SCHEMA.name, "version": CANDIDATE_SCHEMA.version,
                                      "hash": CANDIDATE_SCHEMA.hash}
    assert meta["extra"]["target"]["kind"] == kind and meta["extra"]["records"] > 0
    calibration = meta["extra"]["calibration"]  # fitted on every training candidate (docs/kernel_model.md)
    assert calibration["records"] == meta["extra"]["records"] and 0 < calibration["scale"] < 1
    model, _ = load_checkpoint(shipped, schema=CANDIDATE_SCHEMA)
    assert not model.training
    times = CHECKPOINT_DIR / f"{meta['extra']['times']}.safetensors"  # the times member, trained beside it
    assert times.name == f"{name}-times.safetensors" and times.stat().st_size < 5e6
    times_meta = read_metadata(times)
    assert times_meta["extra"]["role"] == "times" and times_meta["extra"]["records"] == meta["extra"]["records"]
    assert times_meta["extra"]["train_config"]["listwise_weight"] == 0
    # The CPU GNN reads the walk and the trace alone (run forty: it tuned faster), so a tune never runs the
    # PerStoreFeature extractor for it; the GPU one keeps the rows.
    times_model, _ = load_checkpoint(times, schema=CANDIDATE_SCHEMA)
    assert reads_store_features(model) == reads_store_features(times_model) == rows
    target = {"kind": "llvm", "num-cores": 1} if kind == "llvm" else "cuda-h200"
    assert meta["extra"].get("store_features", True) == rows == GNNCostModel(target=target).store_features


def test_the_cpu_checkpoint_predicts_per_unit_of_work():
    """Kernels slower than any in its training data scale with their FLOPs and bytes (docs/kernel_model.md)."""
    model, _ = load_checkpoint(SHIPPED, schema=CANDIDATE_SCHEMA)
    assert [CANDIDATE_SCHEMA.globals[c] for c in model.config.work_globals] == ["log_flops", "log_bytes"]


def test_gnn_cost_model_loads_it_for_its_target(caplog):
    cpu = GNNCostModel(target={"kind": "llvm", "num-cores": 1}).describe()
    assert cpu["source"] == "shipped:llvm-1core" and cpu["times"] == "calibrated ranking head + times member"
    assert GNNCostModel(target="cuda-h200").describe()["source"] == "shipped:cuda-h200"
    meta = read_metadata(CHECKPOINT_DIR / "cuda-h200.safetensors")
    assert meta["extra"]["gpu"]["name"] == "NVIDIA H200"  # the GPU its latencies were timed on
    # Any other sm_90 target (an H100) takes the nearest CUDA checkpoint, with a warning.
    assert GNNCostModel(target={"kind": "cuda", "arch": "sm_90"}).describe()["source"] == "shipped:cuda-h200"
    assert "no shipped checkpoint for target cuda-sm90" in caplog.text


def test_a_stale_schema_is_refused_in_one_line(tmp_path):
    stale = tmp_path / "llvm-1core.safetensors"
    shutil.copy(SHIPPED, stale)
    meta = json.loads(SHIPPED.with_suffix(".json").read_text())
    meta["feature_schema"]["hash"] = "0" * len(CANDIDATE_SCHEMA.hash)
    stale.with_suffix(".json").write_text(json.dumps(meta))
    with pytest.raises(TvmCostError, match="feature schema hash") as err:
        GNNCostModel(checkpoint=stale)
    assert "\n" not in str(err.value)


def test_a_checkpoint_of_program_graphs_without_trace_decisions_is_refused(tmp_path):
    """Checkpoints before `CANDIDATE_SCHEMA` read 14 globals of `PROGRAM_SCHEMA` (v1): refused, naming both."""
    old = save_checkpoint(tmp_path / "v1", SeerNet(ModelConfig.for_schema(PROGRAM_SCHEMA, hidden=8, layers=1)),
                          schema=PROGRAM_SCHEMA)
    with pytest.raises(TvmCostError, match=r"tvm-cost-program v1\).*tvm-cost-candidate v1\); re-extract") as err:
        GNNCostModel(checkpoint=old)
    assert "\n" not in str(err.value) and "v1.json" in str(err.value)


@pytest.mark.parametrize("features", ["rows", "trace"])
def test_the_shipped_rankers_match_their_layouts_and_load_for_their_target(features):
    weights = CHECKPOINT_DIR / f"llvm-1core{SUFFIXES[features]}"
    assert sorted(p.name for p in CHECKPOINT_DIR.iterdir() if p.name.startswith("llvm-1core-ranker")) == \
        ["llvm-1core-ranker-trace.json", "llvm-1core-ranker-trace.ubj", "llvm-1core-ranker.json",
         "llvm-1core-ranker.ubj"] and weights.stat().st_size < 5e6
    booster, meta = load_ranker(weights, features)
    assert meta["layout"] == LAYOUTS[features] and meta["extra"]["target"] == {"kind": "llvm", "num-cores": 1}
    assert [d["records"] > 1000 for d in meta["extra"]["data"]] == [True, True]  # EPYC, + Xeon as ranking data
    model = RankerCostModel(target={"kind": "llvm", "num-cores": 1}, features=features)
    assert model.describe()["source"] == "shipped:llvm-1core" and model.base.num_features() == booster.num_features()
