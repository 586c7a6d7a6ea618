"""Offline kernel models: the family split, and `tvm-cost train` / `tvm-cost eval` end to end on a tiny real
MetaSchedule database whose run_secs are SYNTHETIC."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import torch

from tvm_cost.cli import main
from tvm_cost.errors import TvmCostError
from tvm_cost.features.program_schema import CANDIDATE_SCHEMA
from tvm_cost.train import load_checkpoint, read_metadata
from tvm_cost.tuning.cost_model import reads_store_features
from tvm_cost.tuning.offline import bound_settings, family_split, mean_over_folds, regression_metrics


def test_family_split_holds_out_tasks_only_test_families_contain():
    tasks = ["a", "b", "c", "a", "d"]
    families = {"a": {"gpt"}, "b": {"gpt", "resnet"}, "c": {"resnet"}, "d": {"mlp_mixer"}}
    train_idx, test_idx = family_split(tasks, families, ["gpt", "mlp_mixer"])
    assert test_idx.tolist() == [0, 3, 4] and train_idx.tolist() == [1, 2]  # b is also in resnet: it trains
    with pytest.raises(TvmCostError, match="no task of the families"):
        family_split(tasks, families, ["bert"])


def test_bound_settings_split_each_test_task_in_halves_and_train_on_the_rest():
    group = np.array([0, 0, 1, 1, 1, 1, 2, 2, 2])
    train, test = np.array([0, 1]), np.arange(2, 9)
    settings = bound_settings(train, test, group)
    assert [a.tolist() for a in settings["held_out"]] == [[0, 1], list(range(2, 9))]
    fit, score = settings["in_task_half"]
    assert np.bincount(group[fit], minlength=3).tolist() == [0, 2, 1]  # floor(n / 2) of each test task
    assert sorted(fit.tolist() + score.tolist()) == list(range(2, 9))
    plus_fit, plus_score = settings["training_families_plus_half"]
    assert plus_fit.tolist() == [0, 1, *fit.tolist()] and plus_score.tolist() == score.tolist()
    assert [a.tolist() for a in bound_settings(train, test, group)["in_task_half"]] == [fit.tolist(), score.tolist()]
    other = [bound_settings(train, test, group, seed=s)["in_task_half"][0].tolist() for s in range(1, 6)]
    assert any(o != fit.tolist() for o in other)  # the seed picks the half


def test_regression_metrics_single_out_kernels_slower_than_the_training_ones():
    latency, predicted = np.array([1.0, 2.0, 100.0, 50.0]), np.array([1.5, 5.0, 10.0, 60.0])
    m = regression_metrics(latency, predicted, train_latency=np.array([1.0, 2.0, 3.0]))
    assert m["within_2x"] == 0.5 and m["within_2x_slow"] == 0.5  # slow: 100 (10x under) and 50 (1.2x over)
    assert m["mape"] == pytest.approx((0.5 + 1.5 + 0.9 + 0.2) / 4)
    assert np.isnan(regression_metrics(latency, predicted, train_latency=np.array([1000.0]))["within_2x_slow"])


def test_mean_over_folds_averages_folds_and_keeps_an_all_nan_metric_nan_without_warning():
    def fold(acc: float, slow: float) -> dict:
        metrics = {"gnn": {"pairwise_acc": acc, "within_2x_slow": slow}}
        return {"per_seed": {0: metrics, 1: metrics}, "deep_ensemble": {"pairwise_acc": acc + 0.1}}

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        summary = mean_over_folds([fold(0.6, float("nan")), fold(0.8, float("nan"))])
    assert summary["mean"]["gnn"]["pairwise_acc"] == pytest.approx(0.7)
    assert np.isnan(summary["mean"]["gnn"]["within_2x_slow"])
    assert summary["deep_ensemble"]["pairwise_acc"] == pytest.approx(0.8)


def test_train_and_eval_commands(tiny_logs, tmp_path, capsys):
    ckpt = tmp_path / "model"
    small = ["--epochs", "2", "--hidden", "8", "--layers", "1", "--batch-size", "8"]
    assert main(["train", str(tiny_logs), "--out", str(ckpt), "--no-per-work", *small]) == 0
    assert "trained on 16 candidates of 2 tasks" in capsys.readouterr().out
    model, meta = load_checkpoint(ckpt, schema=CANDIDATE_SCHEMA)
    assert meta["extra"]["records"] == 16 and meta["extra"]["target"] == {"kind": "llvm", "num-cores": 1}
    assert meta["extra"]["measured_on"] == "SYNTHETIC CPU"  # the CPU in the data folder's MANIFEST
    assert meta["extra"]["gpu"] is None  # CPU records name no GPU
    assert meta["extra"]["calibration"]["records"] == 16 and meta["extra"]["calibration"]["scale"] > 0
    times, times_meta = load_checkpoint(tmp_path / "model-times", schema=CANDIDATE_SCHEMA)  # the times member
    assert meta["extra"]["times"] == "model-times" and times_meta["extra"]["role"] == "times"
    assert times_meta["extra"]["train_config"]["listwise_weight"] == 0 == times_meta["extra"]["train_config"][
        "task_mse_weight"] and meta["extra"]["train_config"]["listwise_weight"] == 1
    assert any(not torch.equal(a, b) for a, b in zip(times.state_dict().values(), model.state_dict().values()))

    assert model.config.work_globals == ()
    assert main(["train", str(tiny_logs), "--out", str(tmp_path / "no_fam1"), "--exclude-families", "fam1",
                 *small]) == 0  # per unit of work by default
    assert "trained on 8 candidates of 1 tasks" in capsys.readouterr().out
    assert main(["train", str(tiny_logs), "--out", str(tmp_path / "rank_only"), "--no-times", *small]) == 0
    assert "times member" not in capsys.readouterr().out and not (tmp_path / "rank_only-times.json").exists()
    assert read_metadata(tmp_path / "rank_only")["extra"]["times"] is None
    assert meta["extra"]["store_features"] and reads_store_features(model)
    assert main(["train", str(tiny_logs), "--out", str(tmp_path / "walk"), "--no-store-features", *small]) == 0
    for name in ("walk", "walk-times"):  # both networks ignore the rows, so a tune never extracts them
        walk, walk_meta = load_checkpoint(tmp_path / name, schema=CANDIDATE_SCHEMA)
        assert walk_meta["extra"]["store_features"] is False and not reads_store_features(walk)
    per_work, meta = load_checkpoint(tmp_path / "no_fam1", schema=CANDIDATE_SCHEMA)
    assert [CANDIDATE_SCHEMA.globals[c] for c in per_work.config.work_globals] == ["log_flops", "log_bytes"]
    assert meta["extra"]["excluded_families"] == ["fam1"] and meta["extra"]["tasks"] == 1

    report_path, png = tmp_path / "eval.json", tmp_path / "eval.png"
    assert main(["eval", str(tiny_logs), "--test-families", "fam1", "--seeds", "0,1", *small,
                 "--json", str(report_path), "--png", str(png)]) == 0
    report = json.loads(report_path.read_text())
    assert report["train_records"] == report["test_records"] == 8 and report["test_tasks"] == 1
    assert set(report["per_seed"]) == {"0", "1"}
    for name in ("random", "xgb", "gnn", "ensemble", "ranker", "gnn+ranker", "ranker-trace"):
        assert 0.0 <= report["mean"][name]["pairwise_acc"] <= 1.0
    for name in ("gnn", "gnn-rank-calibrated", "gnn-times-member", "gnn-uncalibrated", "work-fit", "xgb-reg"):
        assert np.isfinite(report["mean"][name]["mape"]) and 0.0 <= report["mean"][name]["within_2x"] <= 1.0
    assert "pairwise_acc" not in report["mean"]["work-fit"]  # regression only
    assert set(report["deep_ensemble"]) == {"pairwise_acc", "pairwise_acc_1.1x", "peak@1", "peak@5", "kendall_tau",
                                          "mape", "within_2x", "within_2x_slow"}
    for name in ("random", "xgb", "gnn", "ranker"):  # pairs 10 % apart: a subset of all pairs, so NaN or in [0, 1]
        apart = report["mean"][name]["pairwise_acc_1.1x"]
        assert np.isnan(apart) or 0.0 <= apart <= 1.0
    assert "deep ensemble of the seeds" in capsys.readouterr().out
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert main(["eval", str(tiny_logs), "--test-families", "each", "--seeds", "0", *small,
                 "--json", str(report_path), "--png", str(png)]) == 0  # leave one family out
    report = json.loads(report_path.read_text())
    assert set(report["folds"]) == {"fam0", "fam1"} and report["test_families"] == "each"
    assert report["deep_ensemble"] is None  # one seed: no ensemble of seeds
    assert all(f["train_records"] == f["test_records"] == 8 for f in report["folds"].values())
    for name in ("xgb", "gnn"):
        folds = [f["per_seed"]["0"][name]["pairwise_acc"] for f in report["folds"].values()]
        assert report["mean"][name]["pairwise_acc"] == pytest.approx(np.mean(folds))
    assert png.read_bytes()[:4] == b"\x89PNG"
    with_rows = report
    assert main(["eval", str(tiny_logs), "--test-families", "each", "--seeds", "0", *small, "--no-store-features",
                 "--json", str(report_path)]) == 0  # the GNN without the rows; XGBModel and the rankers keep them
    report = json.loads(report_path.read_text())
    assert "without PerStoreFeature rows" in capsys.readouterr().out and not report["store_features"]
    for name in ("xgb", "ranker"):
        assert report["mean"][name] == with_rows["mean"][name]
    assert report["mean"]["gnn-times-member"] != with_rows["mean"]["gnn-times-member"]
    assert main(["eval", str(tiny_logs), "--test-families", "bert", *small]) == 2  # one line, no traceback
    assert capsys.readouterr().err.count("\n") == 1


def _other_machine(tiny_logs, root, *, scale: float, target: dict | None = None):
    """A copy of `tiny_logs` as if measured on another CPU: every SYNTHETIC run_secs times `scale`."""
    import shutil

    shutil.copytree(tiny_logs, root)
    path = root / "database_tuning_record.json"
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for line in lines:
        line[1][1] = [t * scale for t in line[1][1]]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (root / "MANIFEST.json").write_text(json.dumps({"target": target or {"kind": "llvm", "num-cores": 1},
                                                   "cpu_model": "OTHER SYNTHETIC CPU"}))
    return root


def test_rank_data_from_another_machine_trains_the_ranking_not_the_absolute_times(tiny_logs, tmp_path, capsys):
    from tvm_cost.tuning.offline import load_kernel_dataset, predict_log_ms

    other = _other_machine(tiny_logs, tmp_path / "other", scale=1000.0)  # a machine 1000x slower
    small = ["--epochs", "60", "--hidden", "8", "--layers", "1", "--batch-size", "8", "--lr", "0.01"]
    own = load_kernel_dataset(tiny_logs)
    own_ms, items = own.latency_ms, [own[i] for i in range(len(own))]
    for extra in ([], ["--rank-data", str(other)]):
        ckpt = tmp_path / f"model{len(extra)}"
        assert main(["train", str(tiny_logs), "--out", str(ckpt), *extra, *small]) == 0
        model, meta = load_checkpoint(ckpt, schema=CANDIDATE_SCHEMA)
        log_ratio = np.mean(predict_log_ms(model, items) - np.log(own_ms))
        assert abs(log_ratio) < np.log(3.0), log_ratio  # this machine's times, not 1000x (or ~30x between)
    out = capsys.readouterr().out
    assert "trained on 16 candidates of 2 tasks" in out and f"ranking also from 16 of {other}" in out
    assert meta["extra"]["records"] == 16
    assert meta["extra"]["rank_data"] == [{"data": str(other), "records": 16, "measured_on": "OTHER SYNTHETIC CPU"}]

    report_path = tmp_path / "eval.json"
    assert main(["eval", str(tiny_logs), "--test-families", "fam1", "--seeds", "0", "--rank-data", str(other),
                 "--epochs", "2", "--hidden", "8", "--layers", "1", "--json", str(report_path)]) == 0
    report = json.loads(report_path.read_text())  # the other machine's fam1 task stays out of training
    assert report["rank_only_records"] == 8 and report["train_records"] == 16 and report["test_records"] == 8
    assert report["train_tasks"] == 2 and report["rank_data"] == [str(other)]

    cuda = _other_machine(tiny_logs, tmp_path / "cuda", scale=1.0, target={"kind": "cuda", "arch": "sm_90"})
    assert main(["train", str(tiny_logs), "--out", str(tmp_path / "x"), "--rank-data", str(cuda), *small]) == 2
    err = capsys.readouterr().err
    assert "--rank-data needs the same target" in err and str(cuda) in err and err.count("\n") == 1


def test_with_rank_only_flags_copies_and_keeps_machines_in_separate_groups():
    import torch
    from torch_geometric.data import Data

    from tvm_cost.tuning.offline import is_rank_only, with_rank_only

    own = [Data(group=torch.tensor([g])) for g in (0, 1, 1)]
    other = [Data(group=torch.tensor([g])) for g in (0, 0, 2)]
    both = with_rank_only(own, [other])
    assert [int(d.group) for d in both] == [0, 1, 1, 2, 2, 4]
    assert [is_rank_only(d) for d in both] == [False] * 3 + [True] * 3
    assert not hasattr(own[0], "rank_only") and int(other[2].group) == 2  # the inputs are untouched


def test_eval_refuses_families_without_tasks_of_their_own(tiny_logs, tmp_path, capsys):
    import shutil

    data = tmp_path / "shared"
    shutil.copytree(tiny_logs, data)
    tasks = json.loads((data / "tasks.json").read_text())
    for task in tasks.values():  # every task in both families: neither can be held out
        task["models"] = ["zoo:fam0,batch=1", "zoo:fam1,batch=1"]
    (data / "tasks.json").write_text(json.dumps(tasks))
    for held in ("fam0", "each"):
        assert main(["eval", str(data), "--test-families", held, "--epochs", "1", "--hidden", "8"]) == 2
        err = capsys.readouterr().err
        assert "no task belongs only to the held-out families" in err and err.count("\n") == 1


@pytest.mark.slow  # ~15 s: torchrun starts two fresh interpreters that import tvm
def test_train_under_torchrun_with_two_processes(tiny_logs, tmp_path):
    import subprocess
    import sys

    ckpt = tmp_path / "ddp"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           "-m", "tvm_cost.cli", "train", str(tiny_logs), "--out", str(ckpt), "--epochs", "2", "--hidden", "8",
           "--layers", "1", "--batch-size", "4"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "trained on 16 candidates" in done.stdout
    _, meta = load_checkpoint(ckpt, schema=CANDIDATE_SCHEMA)
    assert meta["extra"]["processes"] == 2


def test_online_adaptation_study_scores_every_model_on_the_unseen_candidates(tiny_logs, tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).parents[2] / "scripts" / "online_adaptation_study.py"
    small = ["--epochs", "2", "--hidden", "8", "--layers", "1", "--batch-size", "8"]
    assert main(["train", str(tiny_logs), "--out", str(tmp_path / "no_fam1"), "--exclude-families", "fam1",
                 *small]) == 0
    out = tmp_path / "study.json"
    run = [sys.executable, str(script), "--data", str(tiny_logs), "--test-families", "fam1", "--round", "2",
           "--measured", "4,8", "--splits", "2"]
    done = subprocess.run([*run, "--checkpoint", str(tmp_path / "no_fam1"), "--json", str(out)],
                          capture_output=True, text=True, check=True)
    assert "k=8: no test task has 10 or more candidates" in done.stdout  # fam1's task has 8
    assert "RuntimeWarning" not in done.stderr  # metrics no split defines are left out, not averaged as NaN
    report = json.loads(out.read_text())
    assert list(report["results"]) == ["4"] and report["results"]["4"]["tasks"] == 1
    mean = report["results"]["4"]["mean"]
    assert set(mean) == {"gnn", "gnn-online", "gnn-adapt", "gnn-top", "gnn-8x5e-4", "gnn-4x1e-3", "xgb", "ensemble",
                         "random"}
    assert all(0.0 <= m["pairwise_acc"] <= 1.0 for m in mean.values())
    subprocess.run([*run, "--checkpoint", str(tmp_path / "no_fam1"), "--json", str(out), "--variants", "gnn-top"],
                   capture_output=True, check=True)
    assert set(json.loads(out.read_text())["results"]["4"]["mean"]) == {"gnn", "gnn-online", "gnn-top", "xgb",
                                                                         "ensemble", "random"}
    unknown = subprocess.run([*run, "--checkpoint", str(tmp_path / "no_fam1"), "--variants", "gnn-fast"],
                             capture_output=True, text=True)
    assert unknown.returncode == 2 and "unknown variants ['gnn-fast']" in unknown.stderr

    assert main(["train", str(tiny_logs), "--out", str(tmp_path / "all"), *small]) == 0
    refused = subprocess.run([*run, "--checkpoint", str(tmp_path / "all")], capture_output=True, text=True)
    assert refused.returncode == 2 and "was trained on some of ['fam1']" in refused.stderr


def test_calibration_finetune_study_reports_raw_calibrated_shifted_and_member_times(tiny_logs, tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).parents[2] / "scripts" / "calibration_finetune_study.py"
    assert main(["train", str(tiny_logs), "--out", str(tmp_path / "no_fam1"), "--exclude-families", "fam1",
                 "--epochs", "2", "--hidden", "8", "--layers", "1", "--batch-size", "8"]) == 0
    done = subprocess.run([sys.executable, str(script), "--data", str(tiny_logs), "--checkpoint",
                           str(tmp_path / "no_fam1"), "--test-families", "fam1", "--seen", "2,4", "--round", "2",
                           "--min-candidates", "6", "--times-checkpoint", str(tmp_path / "no_fam1-times")],
                          capture_output=True, text=True, check=True)
    report = json.loads(done.stdout)
    assert report["tasks"] == 1 and report["calibration"]["records"] == 8  # fam0's 8 candidates
    shares = report["within_2x_mean_over_tasks"]
    assert set(shares) == {"2", "4"} and all(set(v) == {
        "pretrained", "pretrained calibrated", "fine-tuned", "fine-tuned calibrated", "fine-tuned calibrated + shift",
        "times member", "times member + shift", "pretrained calibrated and times member, mean",
        "fine-tuned calibrated and times member, mean + shift"} for v in shares.values())
    assert all(0.0 <= x <= 1.0 for v in shares.values() for x in v.values())


def test_kernel_data_scaling_trains_both_models_on_each_fraction_of_the_training_tasks(tiny_logs, tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).parents[2] / "scripts" / "kernel_data_scaling.py"
    out = tmp_path / "scaling.json"
    subprocess.run([sys.executable, str(script), "--data", str(tiny_logs), "--test-families", "fam1", "--fractions",
                    "0.5,1.0", "--draws", "2", "--epochs", "2", "--json", str(out)], capture_output=True, check=True)
    rows = json.loads(out.read_text())
    assert [(r["fraction"], r["draw"]) for r in rows] == [(0.5, 0), (0.5, 1), (1.0, 0)]
    assert all(r["train_tasks"] == 1 and r["train_candidates"] == r["test_candidates"] == 8 for r in rows)
    assert all(0.0 <= r[m]["pairwise_acc"] <= 1.0 for r in rows for m in ("xgb", "gnn"))


def test_structure_only_study_checks_the_walk_and_scores_each_variant(tiny_logs, tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).parents[2] / "scripts" / "structure_only_study.py"
    out = tmp_path / "study.json"
    subprocess.run([sys.executable, str(script), "--data", str(tiny_logs), "--test-families", "fam1", "--seeds", "0",
                    "--variants", "full,structure,structure-raw", "--epochs", "2", "--check-walk", "--json", str(out)],
                   capture_output=True, check=True)
    results = json.loads(out.read_text())["results"]
    assert results["walk_agreement"] == {"records": 16, "same": 16, "stores_differ": 0, "features_differ": 0}
    assert set(results) == {"walk_agreement", "xgb", "ranker-trace", "full/0", "structure/0", "structure-raw/0"}
    assert all(0.0 <= results[m]["pairwise_acc"] <= 1.0 for m in ("full/0", "structure/0", "structure-raw/0"))


def test_subset_records_keeps_a_range_of_records_and_their_re_timings(tiny_logs, tmp_path):
    import shutil
    import statistics
    import subprocess
    import sys
    from pathlib import Path

    from tvm_cost.collect.records import load_records
    from tvm_cost.tuning.offline import load_kernel_dataset

    src = tmp_path / "src"
    shutil.copytree(tiny_logs, src)
    records = list(load_records(src / "database_tuning_record.json"))
    means = [statistics.fmean(r.run_secs) for r in records]
    dropped = next(m for m in means[:8] if m not in means[8:])  # a record only the first task has
    noise = [{"stored_secs": s, "median": 1.0} for s in (dropped, means[12])]  # SYNTHETIC re-timings
    (src / "noise.json").write_text(json.dumps({"records": noise, "settings": {}, "summary": {}}))
    script = Path(__file__).parents[2] / "scripts" / "subset_records.py"
    out = tmp_path / "second_task"
    subprocess.run([sys.executable, str(script), "--data", str(src), "--start", "8", "--out", str(out)], check=True,
                   capture_output=True)
    ds = load_kernel_dataset(out)
    assert len(ds) == 8 and len(set(ds.groups)) == 1  # the second task's eight records, nothing else
    kept = [r.run_secs for r in load_records(out / "database_tuning_record.json.gz")]
    assert kept == [r.run_secs for r in records[8:]]
    assert json.loads((out / "noise.json").read_text())["records"] == noise[1:]
    assert json.loads((out / "MANIFEST.json").read_text())["subset"] == {
        "source": str(src), "start": 8, "end": None, "records": 8, "of": 16}
    again = subprocess.run([sys.executable, str(script), "--data", str(src), "--out", str(out)], capture_output=True,
                           text=True)
    assert again.returncode == 2 and f"{out}: already exists" in again.stderr  # never written over
