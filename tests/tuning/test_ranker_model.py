"""RankerCostModel: the contract, learning a task online, shipped and bad boosters, `tvm-cost train --ranker`, and the
GNN + ranker ensemble."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest
from cost_model_contract import assert_cost_model_contract, scores

from tvm_cost.errors import TvmCostError
from tvm_cost.features.trace_decisions import DECISION_COLUMNS, RAW_COLUMNS, decision_features, raw_decisions, \
    trace_json
from tvm_cost.train import pairwise_accuracy
from tvm_cost.tuning import EnsembleCostModel, RankerCostModel, checkpoints, make_cost_model
from tvm_cost.tuning.ranker import load_ranker, ranker_paths, save_ranker, train_booster
from tvm_cost.tuning.ranker_model import trace_checkpoint
from tvm_cost.tuning.replay import measured_latency_ms


def latencies(results) -> np.ndarray:
    return np.array([measured_latency_ms(r) for r in results])


def test_features_are_the_graph_rows_and_the_trace_decisions(task):
    context, candidates, _ = task
    model = RankerCostModel(None)
    f = model.features(context, candidates)
    graphs = model.featurizer.graphs(context, candidates)
    u = model.featurizer.task_globals(context)
    assert f.shape == (len(candidates), 2 * 164 + u.shape[1] + len(DECISION_COLUMNS))
    for row, graph, cand in zip(f, graphs, candidates, strict=True):
        np.testing.assert_allclose(row[:164], graph["x"][:, :164].sum(0), rtol=1e-6)
        np.testing.assert_array_equal(row[2 * 164:], graph["u"][0])
        decisions = decision_features(trace_json(cand.sch.trace))
        np.testing.assert_array_equal(graph["u"][0], np.concatenate([u[0], decisions]))


def test_trace_features_are_read_from_the_trace_alone(task, pretrained, tmp_path):
    context, candidates, _ = task
    model = RankerCostModel(trace_checkpoint(pretrained), features="trace")
    f = model.features(context, candidates)
    u = model.featurizer.task_globals(context)
    assert f.shape == (len(candidates), u.shape[1] + len(DECISION_COLUMNS) + len(RAW_COLUMNS))
    for row, cand in zip(f, candidates, strict=True):
        trace = trace_json(cand.sch.trace)
        np.testing.assert_array_equal(row, np.concatenate([u[0], decision_features(trace), raw_decisions(trace)]))
    assert model.featurizer.misses == model.featurizer.hits == 0  # no PerStoreFeature extraction at all
    assert_cost_model_contract(lambda: RankerCostModel(trace_checkpoint(pretrained), features="trace"), *task,
                               tmp_path)
    with pytest.raises(TvmCostError, match="a ranker on the 'rows' features, not the 'trace' ones"):
        RankerCostModel(pretrained, features="trace")
    model.save(str(tmp_path / "trace_state"))
    with pytest.raises(TvmCostError, match="saved on the 'trace' features, not 'rows'"):
        RankerCostModel(pretrained).load(str(tmp_path / "trace_state"))


def test_contract(task, pretrained, tmp_path):
    model = assert_cost_model_contract(lambda: RankerCostModel(pretrained), *task, tmp_path)
    assert model.describe()["refit"] and model.describe()["measured"] == len(task[1])
    assert model.booster.num_boosted_rounds() == model.base.num_boosted_rounds() + model.refit_rounds


def test_without_a_booster_scores_are_random_until_it_fits_one_that_learns_the_task(task):
    context, candidates, results = task
    model = RankerCostModel(None, min_fit=4)
    first = scores(model, context, candidates)
    assert (first > 0).all() and not np.array_equal(first, scores(model, context, candidates))  # drawn per call
    model.update(context, candidates[:2], results[:2])
    assert model.booster is None  # 2 < min_fit
    model.update(context, candidates[2:], results[2:])
    assert model.booster is not None
    assert pairwise_accuracy(latencies(results), scores(model, context, candidates)) >= 0.9


def test_failed_results_are_not_stored(task):
    from tvm.s_tir import meta_schedule as ms

    context, candidates, results = task
    model = RankerCostModel(None)
    failed = [ms.runner.RunnerResult([1e10], None), ms.runner.RunnerResult(None, "build error")]
    model.update(context, candidates[:2], failed)
    assert model.describe()["measured"] == 0 and model.booster is None


def test_the_booster_shipped_for_the_target_is_used(task, pretrained, tmp_path, monkeypatch, caplog):
    context, candidates, _ = task
    monkeypatch.setattr(checkpoints, "CHECKPOINT_DIR", pretrained.parent)
    model = RankerCostModel()
    expected = scores(RankerCostModel(pretrained), context, candidates)
    np.testing.assert_allclose(scores(model, context, candidates), expected)
    assert model.describe()["source"] == "shipped:llvm-2core"
    monkeypatch.setattr(checkpoints, "CHECKPOINT_DIR", tmp_path)
    with caplog.at_level(logging.WARNING):
        bare = RankerCostModel()
        scores(bare, context, candidates)
    assert bare.base is None and "no trained 'rows' ranker ships for target llvm-2core" in caplog.text


def test_bad_checkpoints_are_refused_in_one_line(pretrained, tmp_path):
    weights, meta = ranker_paths(pretrained)
    booster, info = load_ranker(pretrained)
    assert info["layout"] and info["extra"] == {"data": "SYNTHETIC"}

    def refused(path, words):
        with pytest.raises(TvmCostError) as err:
            RankerCostModel(path)
        assert words in str(err.value) and str(path.parent) in str(err.value) and "\n" not in str(err.value)

    truncated = tmp_path / "cut"
    ranker_paths(truncated)[0].write_bytes(weights.read_bytes()[:200])
    ranker_paths(truncated)[1].write_text(meta.read_text())
    refused(truncated, "cannot read the ranker booster")
    stale = tmp_path / "stale"
    ranker_paths(stale)[0].write_bytes(weights.read_bytes())
    ranker_paths(stale)[1].write_text(json.dumps({**info, "layout": "0123456789abcdef"}))
    refused(stale, "feature layout 0123456789abcdef")
    refused(tmp_path / "missing", "cannot read the ranker metadata")
    narrow = tmp_path / "narrow"  # a 5-feature booster under metadata copied from a real one
    save_ranker(narrow, train_booster(np.random.default_rng(0).random((8, 5)), np.arange(1.0, 9.0), np.zeros(8),
                                      rounds=2))
    ranker_paths(narrow)[1].write_text(meta.read_text())
    refused(narrow, f"booster has 5 features, its metadata says {booster.num_features()}")


def test_gnn_plus_ranker_weighs_both_from_the_first_call_and_shares_the_featurizer(task, pretrained, tmp_path):
    model = assert_cost_model_contract(lambda: make_cost_model("gnn+ranker", checkpoint=None, ranker=pretrained),
                                       *task, tmp_path)
    assert isinstance(model, EnsembleCostModel)
    assert model.current_weights() == (1.0, 1.0)
    assert model.xgb.featurizer is model.gnn.featurizer
    assert model.gnn.featurizer.hits > 0  # the ranker read the graphs the GNN had built


def test_train_ranker_command(tiny_logs, tmp_path, capsys):
    from tvm_cost.cli import main

    out = tmp_path / "r"
    assert main(["train", str(tiny_logs), "--ranker", "--out", str(out), "--exclude-families", "fam1"]) == 0
    booster, meta = load_ranker(out)
    assert meta["extra"]["excluded_families"] == ["fam1"] and meta["extra"]["data"][0]["records"] == 8
    assert "'rows' ranker trained on 8 candidates of 1 tasks" in capsys.readouterr().out
    assert main(["train", str(tiny_logs), "--ranker", "--ranker-features", "trace", "--out", str(out)]) == 0
    trace, meta = load_ranker(out, "trace")
    assert meta["features"] == "trace" and trace.num_features() < booster.num_features()
