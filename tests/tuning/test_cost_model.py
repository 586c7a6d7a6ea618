"""GNNCostModel: the MetaSchedule contract, scores, online learning, checkpoints, uncertainty and the XGB fallback."""

from __future__ import annotations

import itertools
import logging

import numpy as np
import pytest
import torch
from cost_model_contract import assert_cost_model_contract, scores

from tvm_cost.errors import TvmCostError
from tvm_cost.features.program_schema import CANDIDATE_SCHEMA
from tvm_cost.models import ModelConfig, SeerNet
from tvm_cost.train import pairwise_accuracy, save_checkpoint
from tvm_cost.tuning import GNNCostModel, GNNCostModelConfig, checkpoints, scores_from_log_latency

SMALL = GNNCostModelConfig(hidden=32, layers=1, update_steps=4)


def untrained(config: GNNCostModelConfig = SMALL) -> GNNCostModel:
    return GNNCostModel(checkpoint=None, config=config)


def latencies(results) -> np.ndarray:
    return np.array([np.mean([float(s) for s in r.run_secs]) for r in results])


def test_contract(task, tmp_path):
    seeds = itertools.count()  # each fresh instance starts from other weights: load must restore them all
    model = assert_cost_model_contract(lambda: untrained(SMALL.replace(seed=next(seeds))), *task, tmp_path)
    info = model.describe()
    assert info["mode"] == "gnn" and info["buffered"] == len(task[1]) and info["updates"] == 2
    assert sorted(p.name for p in (tmp_path / "updated").iterdir()) == \
        ["buffer.npz", "model.json", "model.safetensors", "state.json"]


def test_scores_are_relative_predicted_throughput():
    pred = np.log([2.0, 1.0, 4.0])
    np.testing.assert_allclose(scores_from_log_latency(pred), [0.5, 1.0, 0.25])
    np.testing.assert_allclose(scores_from_log_latency(pred, temperature=2.0), np.sqrt([0.5, 1.0, 0.25]))
    far = scores_from_log_latency(np.array([0.0, 5000.0]))
    assert (far > 0).all() and far[0] == 1.0


def test_updates_learn_the_task(task):
    """Overfit check: SYNTHETIC latencies that depend on the inner tile become ranked right after updates."""
    context, candidates, results = task
    lat = latencies(results)
    model = untrained(GNNCostModelConfig(hidden=32, layers=1, update_steps=20, lr=3e-3, dropout=0.0))
    for _ in range(3):
        model.update(context, candidates, results)
    acc = pairwise_accuracy(lat, scores(model, context, candidates), np.zeros(len(lat), np.int64))
    assert acc > 0.85, acc


def test_failed_results_are_not_labels(task):
    from tvm.s_tir import meta_schedule as ms

    context, candidates, results = task
    failed = [ms.runner.RunnerResult(None, "build failed"), ms.runner.RunnerResult([1e10], None),
              ms.runner.RunnerResult([float("nan")], None)]
    model = untrained()
    model.update(context, candidates[:3], failed)
    assert model.describe()["buffered"] == 0
    model.update(context, candidates[:4], [*failed, results[3]])
    _, lat = model.buffer.task(model.buffer.tasks[0])
    np.testing.assert_allclose(lat, latencies(results[3:4]) * 1e3)  # mean run_secs, in ms


def test_uncertainty(task):
    context, candidates, _ = task
    mean, std = untrained(SMALL.replace(mc_samples=4)).predict_with_uncertainty(context, candidates)
    assert mean.shape == std.shape == (len(candidates),) and (std > 0).any() and np.isfinite(mean).all()
    deep = untrained(SMALL.replace(ensemble=2, dropout=0.0, mc_samples=2))
    mean2, std2 = deep.predict_with_uncertainty(context, candidates)
    assert (std2 > 0).all()
    np.testing.assert_allclose(deep.predict_with_uncertainty(context, candidates)[0], mean2)  # seeded
    s = scores(untrained(SMALL.replace(exploration=1.0, mc_samples=3)), context, candidates)
    assert (s > 0).all() and s.max() == 1.0


# --- checkpoints -----------------------------------------------------------------------------------------------
def small_seernet() -> SeerNet:
    return SeerNet(ModelConfig.for_schema(CANDIDATE_SCHEMA, hidden=16, layers=1))


def test_a_per_work_checkpoint_scales_predictions_with_the_task_work(task, tmp_path):
    """The featurizer's globals carry the task's FLOPs and bytes, so a model that predicts per unit of work
    (`ModelConfig.work_globals`) predicts the same weights' latency times the work."""
    from tvm_cost.features.program_graph import workload_globals
    from tvm_cost.features.program_schema import WORK_GLOBALS

    context, candidates, _ = task
    plain = small_seernet()
    per_work = SeerNet(plain.config.replace(work_globals=WORK_GLOBALS))
    per_work.load_state_dict(plain.state_dict())
    for name, model in (("plain", plain), ("per_work", per_work)):
        save_checkpoint(tmp_path / name, model, schema=CANDIDATE_SCHEMA)
    mean = {name: GNNCostModel(checkpoint=tmp_path / name).predict_with_uncertainty(context, candidates)[0]
            for name in ("plain", "per_work")}
    u = workload_globals(context.mod, target_spec={"kind": "llvm", "num-cores": 2})[0]
    assert np.expm1(u[WORK_GLOBALS[0]]) >= 2 * 32**3  # a 32x32x32 matmul + relu: its FLOPs, not a placeholder
    np.testing.assert_allclose(mean["per_work"] - mean["plain"], np.logaddexp(*u[list(WORK_GLOBALS)]), rtol=1e-5)


def test_weights_trained_without_store_features_score_from_the_walk_alone(task, tmp_path, monkeypatch, caplog):
    """Weights whose PerStoreFeature columns standardize to 0 (std inf: constant in training, as `tvm-cost train
    --no-store-features` leaves them) never read those: `GNNCostModel` skips the extraction in predict and update,
    scores as the same weights do on the graphs with rows, keeps that through save -> load, and a fallback XGBModel
    starts unseeded. Untrained weights read the rows."""
    import tvm_cost.features.program_graph as program_graph
    from tvm_cost.features.program_graph import to_pyg_batch
    from tvm_cost.features.schema import NUM_STORE_FEATURES
    from tvm_cost.tuning.cost_model import reads_store_features
    from tvm_cost.tuning.replay import CandidateFeaturizer

    context, candidates, results = task
    net = small_seernet().eval()
    with torch.no_grad():
        net.x_std[:NUM_STORE_FEATURES] = float("inf")
    assert reads_store_features(small_seernet()) and not reads_store_features(net)
    assert untrained().store_features
    expected = scores_from_log_latency(net(to_pyg_batch(
        CandidateFeaturizer().graphs(context, candidates)))[:, 0].double().detach().numpy())
    save_checkpoint(tmp_path / "walk", net, schema=CANDIDATE_SCHEMA)

    def no_extraction(*args, **kwargs):
        raise AssertionError("PerStoreFeature ran")

    monkeypatch.setattr(program_graph, "store_feature_rows", no_extraction)
    model = GNNCostModel(checkpoint=tmp_path / "walk", config=SMALL.replace(fallback=False))
    assert not model.describe()["store_features"]
    np.testing.assert_allclose(scores(model, context, candidates), expected, rtol=1e-5)
    model.update(context, candidates, results)
    model.save(str(tmp_path / "saved"))
    again = untrained(SMALL.replace(fallback=False))
    again.load(str(tmp_path / "saved"))
    assert not again.describe()["store_features"] and again.describe()["buffered"] == len(candidates)
    np.testing.assert_allclose(scores(again, context, candidates), scores(model, context, candidates), rtol=1e-6)
    with caplog.at_level(logging.INFO, logger="tvm_cost.tuning"):
        again._inst._fall_back(RuntimeError("forced"), "predict")  # noqa: SLF001
    assert again.xgb.data_size == 0 and "unseeded" in caplog.text


def test_a_checkpoint_calibration_maps_times_and_keeps_scores(task, tmp_path):
    """The checkpoint's `Calibration` turns predicted log-latencies into real times (mean and std), survives
    save -> load, leaves the search's scores alone; a bad one is refused in one line naming the file."""
    from tvm_cost.features.program_schema import WORK_GLOBALS
    from tvm_cost.train import Calibration

    context, candidates, _ = task
    net = SeerNet(small_seernet().config.replace(work_globals=WORK_GLOBALS, dropout=0.2))
    cal = Calibration(scale=0.5, work=0.8, offset=-2.0, records=10)
    save_checkpoint(tmp_path / "raw", net, schema=CANDIDATE_SCHEMA)
    save_checkpoint(tmp_path / "cal", net, schema=CANDIDATE_SCHEMA, extra={"calibration": cal.to_dict()})
    config = SMALL.replace(mc_samples=4)
    raw, calibrated = (GNNCostModel(checkpoint=tmp_path / n, config=config) for n in ("raw", "cal"))
    (mean, std), (cmean, cstd) = (m.predict_with_uncertainty(context, candidates) for m in (raw, calibrated))
    work = np.logaddexp(*np.stack([g["u"][0, list(WORK_GLOBALS)] for g in
                                   raw.featurizer.graphs(context, candidates)]).T)
    np.testing.assert_allclose(cmean, 0.5 * (mean - work) + 0.8 * work - 2.0, rtol=1e-6)
    np.testing.assert_allclose(cstd, 0.5 * std, rtol=1e-6)
    assert std.max() > 0  # MC dropout: the std is scaled, not zero
    np.testing.assert_allclose(scores(raw, context, candidates), scores(calibrated, context, candidates))
    calibrated.save(str(tmp_path / "saved"))
    again = GNNCostModel(checkpoint=None, config=config)
    again.load(str(tmp_path / "saved"))
    assert again.describe()["calibration"] == cal.to_dict()
    np.testing.assert_allclose(again.predict_with_uncertainty(context, candidates)[0], cmean, rtol=1e-6)
    save_checkpoint(tmp_path / "bad", net, schema=CANDIDATE_SCHEMA,
                    extra={"calibration": {"scale": -1.0, "work": 1.0, "offset": 0.0}})
    with pytest.raises(TvmCostError, match="bad calibration") as err:
        GNNCostModel(checkpoint=tmp_path / "bad")
    assert "\n" not in str(err.value) and "bad" in str(err.value)


def test_a_times_member_joins_the_calibrated_head_and_measurements_shift_the_times_to_the_task(task, tmp_path):
    """A checkpoint naming a times member: `predict_with_uncertainty` is the mean of that network and the calibrated
    ranking head (std by the law of total variance), the search's scores stay the ranking network's, and once
    candidates of the task are measured the times move by the median measured-minus-predicted ln(ms). It survives
    save -> load; a missing member is refused in one line naming the file."""
    from tvm_cost.train import Calibration

    context, candidates, results = task
    rank, times = small_seernet(), SeerNet(small_seernet().config.replace(seed=7, dropout=0.2))
    save_checkpoint(tmp_path / "m-times", times, schema=CANDIDATE_SCHEMA)
    cal = Calibration(scale=0.5, work=0.8, offset=-2.0, records=10).to_dict()
    save_checkpoint(tmp_path / "m", rank, schema=CANDIDATE_SCHEMA, extra={"calibration": cal, "times": "m-times"})
    save_checkpoint(tmp_path / "cal", rank, schema=CANDIDATE_SCHEMA, extra={"calibration": cal})
    config = SMALL.replace(mc_samples=4, update_steps=0)
    model, head, alone = (GNNCostModel(checkpoint=tmp_path / n, config=config) for n in ("m", "cal", "m-times"))
    assert model.describe()["times"] == "calibrated ranking head + times member"
    assert head.describe()["times"] == "calibrated ranking head"
    (mean, std), (head_mean, head_std), (alone_mean, alone_std) = (
        m.predict_with_uncertainty(context, candidates) for m in (model, head, alone))
    np.testing.assert_allclose(mean, 0.5 * (head_mean + alone_mean), rtol=1e-6)
    spread = 0.5 * (head_mean - alone_mean)
    np.testing.assert_allclose(std, np.sqrt(0.5 * (head_std**2 + alone_std**2) + spread**2), rtol=1e-6)
    assert alone_std.max() > 0 and np.abs(spread).max() > 0
    np.testing.assert_allclose(scores(model, context, candidates), scores(head, context, candidates))

    model.update(context, candidates[:5], results[:5])  # no fine-tuning (update_steps=0): the shift alone
    point = GNNCostModel(checkpoint=tmp_path / "m", config=config.replace(mc_samples=1))  # no dropout
    shift = np.median(np.log(latencies(results[:5]) * 1e3) - point.predict_with_uncertainty(context, candidates[:5])[0])
    np.testing.assert_allclose(model.predict_with_uncertainty(context, candidates)[0], mean + shift, rtol=1e-6)
    model.save(str(tmp_path / "saved"))
    again = GNNCostModel(checkpoint=tmp_path / "saved")  # a saved folder restores the whole model, config too
    assert again.config == config and again.describe()["buffered"] == 5
    targeted = GNNCostModel(checkpoint=tmp_path / "saved", target={"kind": "llvm", "num-cores": 1})
    assert targeted.describe()["target"] == "llvm-1core"  # saved without a target: the given one stays
    np.testing.assert_allclose(again.predict_with_uncertainty(context, candidates)[0], mean + shift, rtol=1e-6)

    (tmp_path / "m-times.safetensors").unlink()
    with pytest.raises(TvmCostError, match="missing") as err:
        GNNCostModel(checkpoint=tmp_path / "m")
    assert "\n" not in str(err.value) and "m-times" in str(err.value)


def test_shipped_checkpoint_is_found_for_the_target(task, tmp_path, monkeypatch, caplog):
    context, candidates, _ = task
    monkeypatch.setattr(checkpoints, "CHECKPOINT_DIR", tmp_path)
    save_checkpoint(tmp_path / "llvm-2core", small_seernet(), schema=CANDIDATE_SCHEMA)
    with caplog.at_level(logging.WARNING):
        eager = GNNCostModel(target={"kind": "llvm", "num-cores": 2})
        lazy = GNNCostModel()  # no target yet: found from the tune context at first use
        lazy_scores = scores(lazy, context, candidates)
    assert not caplog.records
    assert eager.describe()["source"] == lazy.describe()["source"] == "shipped:llvm-2core"
    np.testing.assert_allclose(scores(eager, context, candidates), lazy_scores)
    # another core count: the nearest llvm checkpoint, with a warning; a times member is never a target's
    save_checkpoint(tmp_path / "llvm-4core-times", small_seernet(), schema=CANDIDATE_SCHEMA)
    with caplog.at_level(logging.WARNING):
        near = GNNCostModel(target={"kind": "llvm", "num-cores": 4})
    assert near.describe()["source"] == "shipped:llvm-2core" and "llvm-4core" in caplog.text


def test_a_checkpoint_from_another_cpu_is_used_with_a_warning(tmp_path, caplog):
    from tvm_cost.collect.manifest import cpu_model

    other = save_checkpoint(tmp_path / "other", small_seernet(), schema=CANDIDATE_SCHEMA,
                            extra={"measured_on": "Some Other CPU"})
    here = save_checkpoint(tmp_path / "here", small_seernet(), schema=CANDIDATE_SCHEMA,
                           extra={"measured_on": cpu_model()})
    with caplog.at_level(logging.WARNING):
        GNNCostModel(checkpoint=here, target={"kind": "llvm", "num-cores": 1})
    assert not caplog.records
    with caplog.at_level(logging.WARNING):
        model = GNNCostModel(checkpoint=other, target={"kind": "llvm", "num-cores": 1})
    assert model.describe()["trained"] and "measured on Some Other CPU" in caplog.text


def test_no_shipped_checkpoint_starts_untrained_with_a_warning(task, tmp_path, monkeypatch, caplog):
    context, candidates, _ = task
    monkeypatch.setattr(checkpoints, "CHECKPOINT_DIR", tmp_path / "none")
    model = GNNCostModel(config=SMALL)
    with caplog.at_level(logging.WARNING, logger="tvm_cost.tuning"):
        s = scores(model, context, candidates)
    assert (s > 0).all() and model.describe()["source"] == "untrained"
    assert "untrained" in caplog.text and "llvm-2core" in caplog.text


def test_bad_checkpoints_are_refused_in_one_line(tmp_path):
    weights = save_checkpoint(tmp_path / "ok", small_seernet(), schema=CANDIDATE_SCHEMA)
    model = GNNCostModel(checkpoint=weights)
    assert model.describe()["trained"]
    truncated = tmp_path / "cut.safetensors"
    truncated.write_bytes(weights.read_bytes()[:100])
    (tmp_path / "cut.json").write_text((tmp_path / "ok.json").read_text())
    other = save_checkpoint(tmp_path / "other", small_seernet(), schema={"name": "x", "version": "0", "hash": "0" * 16})
    for bad, words in [(truncated, "truncated"), (other, "feature schema"), (tmp_path / "missing", "missing")]:
        with pytest.raises(TvmCostError, match=words) as err:
            GNNCostModel(checkpoint=bad)
        assert "\n" not in str(err.value)
        with pytest.raises(TvmCostError, match=words):
            model.load(str(bad))  # the Python-side load surfaces the same error
    (tmp_path / "state_only").mkdir()
    with pytest.raises(TvmCostError, match="state"):
        model.load(str(tmp_path / "state_only"))


# --- fallback ----------------------------------------------------------------------------------------------------
class BrokenSeerNet(SeerNet):
    def forward(self, data):  # noqa: ARG002
        raise RuntimeError("boom: the GNN broke")


def test_predict_failure_falls_back_to_xgb(task, caplog):
    context, candidates, results = task
    model = GNNCostModel(model=BrokenSeerNet(ModelConfig.for_schema(CANDIDATE_SCHEMA, hidden=8, layers=1)))
    with caplog.at_level(logging.WARNING, logger="tvm_cost.tuning"):
        s = scores(model, context, candidates)  # through the FFI, as the search calls it: no crash
    assert (s > 0).all() and np.isfinite(s).all()
    assert "boom" in caplog.text and "XGBModel" in caplog.text
    info = model.describe()
    assert info["mode"] == "xgb" and "boom" in info["fallback_reason"]
    model.update(context, candidates, results)  # goes to XGB now
    assert model.xgb.data_size == len(candidates)


def test_update_failure_falls_back_to_a_seeded_xgb(task, monkeypatch, caplog):
    context, candidates, results = task
    model = untrained()
    model.update(context, candidates[:6], results[:6])

    def broken(*args, **kwargs):
        raise ValueError("featurizer broke")

    monkeypatch.setattr(model.featurizer, "graphs", broken)
    with caplog.at_level(logging.WARNING, logger="tvm_cost.tuning"):
        model.update(context, candidates[6:], results[6:])
    assert model.describe()["mode"] == "xgb" and "featurizer broke" in caplog.text
    assert model.xgb.data_size == len(candidates)  # 6 from the replay buffer + the 6 of the failing call
    assert (scores(model, context, candidates) > 0).all()


def test_fallback_state_survives_save_and_load(task, tmp_path):
    context, candidates, results = task
    model = untrained()
    model.update(context, candidates, results)
    model.predict(context, candidates)
    model._inst.mode = "gnn"  # noqa: SLF001
    model._inst._fall_back(RuntimeError("forced"), "predict")  # noqa: SLF001
    model.save(str(tmp_path / "m"))
    back = untrained()
    back.load(str(tmp_path / "m"))
    assert back.describe()["mode"] == "xgb" and back.xgb.data_size == len(candidates)


def test_fallback_can_be_disabled(task):
    context, candidates, _ = task
    model = GNNCostModel(model=BrokenSeerNet(ModelConfig.for_schema(CANDIDATE_SCHEMA, hidden=8, layers=1)),
                         config=SMALL.replace(fallback=False))
    with pytest.raises(RuntimeError, match="boom"):
        model._inst.predict(*task[:2])  # noqa: SLF001


def test_two_tasks_keep_separate_buffers(task, task16):
    model = untrained()
    model.update(*task)
    model.update(*task16)
    assert model.describe()["tasks"] == 2 and model.describe()["buffered"] == len(task[1]) + len(task16[1])
    assert (scores(model, *task16[:2]) > 0).all()
    assert torch.get_num_threads() == 1


def test_cuda_candidates_are_scored_without_a_gpu():
    """CUDA schedules featurize on the CPU; the target (H100 tag) names the checkpoint family cuda-sm90."""
    import tvm
    from tuning_tasks import matmul_relu
    from tvm.s_tir import Schedule
    from tvm.s_tir import meta_schedule as ms

    from relay_passes.schedule import feature_context

    mod = matmul_relu(32)
    candidates = []
    for threads in (32, 64, 128, 256):
        sch = Schedule(mod)
        for block in ("C", "D"):
            i, j, *_ = sch.get_loops(sch.get_sblock(block))
            bx, tx = sch.split(sch.fuse(i, j), [None, threads])
            sch.bind(bx, "blockIdx.x")
            sch.bind(tx, "threadIdx.x")
        candidates.append(ms.MeasureCandidate(sch, ms.arg_info.ArgInfo.from_prim_func(sch.mod["main"])))
    context = feature_context(mod, tvm.target.Target("nvidia/nvidia-h100"))
    model = untrained()
    assert (scores(model, context, candidates) > 0).all() and model.describe()["target"] == "cuda-sm90a"
    model.update(context, candidates, [ms.runner.RunnerResult([1e-5 * (k + 1)], None) for k in range(4)])
    assert model.describe()["buffered"] == 4 and model.describe()["mode"] == "gnn"
