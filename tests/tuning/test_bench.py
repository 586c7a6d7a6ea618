"""The online kernel benchmark: runs in a real MetaSchedule loop, resumes, and summarizes what it measured."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_tune import run_worker

from tvm_cost.errors import TvmCostError
from tvm_cost.tuning.bench import BenchRun, RunStore, _stem, plot_curves, summarize


@pytest.fixture(scope="module")
def dummy_bench(tmp_path_factory) -> tuple[dict, Path]:
    """A bench with real evolutionary search and DummyBuilder/DummyRunner (random times, not measurements),
    run twice over one store, with --keep-records: (what the worker returned, the bench folder)."""
    root = tmp_path_factory.mktemp("bench")
    return run_worker("dummy-bench", root, timeout=600)["dummy-bench"], root / "dummy-bench"


def test_bench_runs_each_kind_once_and_resumes(dummy_bench):
    out, _ = dummy_bench
    ran = [label for fresh, label in out["labels"] if fresh]
    skipped = [label for fresh, label in out["labels"] if not fresh]
    assert ran == ["matmul_relu random seed 0", "matmul_relu xgb-warm16 seed 0", "matmul_relu gnn seed 0"]
    assert skipped == ran  # the second pass found every run stored
    assert [k for k, _ in out["runs"]] == ["random", "xgb-warm16", "gnn"]
    for _, trials in out["runs"]:
        times = [t for t, _ in trials]
        assert len(trials) == 16 and times == sorted(times) and all(ms > 0 for _, ms in trials)
    # --keep-records: each run's database holds its measured schedules, the fastest is what the bench saw last
    first, again = out["remeasured"]
    assert again == first and out["measurers_made"] == 1  # the second found the group stored: no build pool
    assert [row["kind"] for row in first] == ["random", "xgb-warm16", "gnn"]
    for row, (_, trials) in zip(first, out["runs"]):
        assert row["tuned_ms"] == pytest.approx(min(ms for _, ms in trials))
        assert len(row["samples_ms"]) == 3 and row["remeasured_ms"] == pytest.approx(np.median(row["samples_ms"]))


def test_late_round_study_ranks_each_runs_later_candidates(dummy_bench, tiny_logs, tmp_path):
    """scripts/late_round_study.py on the dummy bench's kept records (SYNTHETIC latencies), a tiny checkpoint."""
    from tvm_cost.cli import main

    ckpt = tmp_path / "tiny"
    assert main(["train", str(tiny_logs), "--out", str(ckpt), "--epochs", "1", "--hidden", "8", "--layers", "1"]) == 0
    script = Path(__file__).parents[2] / "scripts" / "late_round_study.py"
    out = tmp_path / "late.json"
    subprocess.run([sys.executable, str(script), "--bench", str(dummy_bench[1]), "--checkpoint", str(ckpt),
                    "--seen", "8,16", "--round", "4", "--json", str(out)], capture_output=True, text=True, check=True)
    report = json.loads(out.read_text())
    assert report["results"]["16"] == {}  # the runs measured 16: nothing left to rank
    by_kind = report["results"]["8"]
    assert set(by_kind) == {"random", "xgb-warm16", "gnn"}
    for result in by_kind.values():
        assert result["runs"] == 1 and result["max_over_min_median"] >= 1.0
        assert set(result["metrics"]) == {"gnn", "gnn-online", "gnn-adapt", "gnn-top", "xgb", "ensemble",
                                          "random"}
        assert all(0.0 <= m["pairwise_acc"] <= 1.0 for m in result["metrics"].values())


def _run(task: str, kind: str, seed: int, latencies: list[float | None]) -> BenchRun:
    """A SYNTHETIC run: one trial per second."""
    return BenchRun(task, f"task{task}", kind, seed, len(latencies),
                    [(float(i + 1), v) for i, v in enumerate(latencies)], float(len(latencies)))


def test_summarize_uses_the_better_xgb_and_counts_trials_to_reach_it():
    runs = [
        _run("a", "xgb", 0, [9, 8, 8, 6]), _run("a", "xgb", 1, [9, 9, 7, 7]),          # median best@4: 6.5
        _run("a", "xgb-warm16", 0, [9, 5, 5, 5]), _run("a", "xgb-warm16", 1, [9, 9, 6, 6]),  # 5.5: the reference
        _run("a", "gnn", 0, [None, 7, 5, 4]), _run("a", "gnn", 1, [8, 8, 8, 8]),        # reach 5.5 at trial 3 / never
        _run("b", "xgb", 0, [4, 2, 2, 2]), _run("b", "xgb-warm16", 0, [4, 4, 3, 3]),    # reference 2
        _run("b", "gnn", 0, [2, 2, 1, 1]),                                               # reach at trial 1
    ]
    s = summarize(runs, [2, 4])
    assert s["tasks"] == 2
    assert s["per_task"]["a"]["reference_kind"] == "xgb-warm16" and s["per_task"]["a"]["reference_ms"] == 5.5
    assert s["per_task"]["b"]["reference_kind"] == "xgb" and s["per_task"]["b"]["reference_ms"] == 2
    assert s["per_task"]["a"]["trials_to_reference"] == {"xgb": [np.inf, np.inf], "xgb-warm16": [2.0, np.inf],
                                                         "gnn": [3.0, np.inf]}
    assert s["to_reference"]["gnn"] == {"median_trials": 3.0, "median_seconds": 3.0,  # of 3, inf, 1
                                        "reached": "2/3"}
    never = {"median_trials": np.inf, "median_seconds": np.inf, "reached": "1/3"}
    assert s["to_reference"]["xgb"] == never and s["to_reference"]["xgb-warm16"] == never  # XGBModel's own pace
    gnn_at_4 = np.sqrt((np.median([4, 8]) / 5.5) * (1 / 2))
    assert s["best_vs_reference_geomean"]["gnn"][4] == pytest.approx(gnn_at_4)
    assert s["best_vs_reference_geomean"]["xgb"][4] == pytest.approx(np.sqrt((6.5 / 5.5) * 1.0))


def test_bench_summarize_cli_summarizes_stored_runs_without_tuning(tmp_path):
    from tvm_cost.cli import main
    from tvm_cost.tuning.bench import RunStore

    store = RunStore(tmp_path / "runs.jsonl")
    for run in (_run("a", "xgb", 0, [9, 8, 8, 6]), _run("a", "gnn", 0, [9, 6, 5, 5]), _run("a", "gnn", 1, [9, 9])):
        store.add(run)  # the two-trial run is of another budget: left out
    assert main(["bench", "summarize", "--out", str(tmp_path), "--budgets", "2,4"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["per_task"]["a"]["trials_to_reference"] == {"xgb": [4.0], "gnn": [2.0]}  # to 6 ms
    assert (tmp_path / "curves.png").stat().st_size > 0
    proc = subprocess.run([sys.executable, "-m", "tvm_cost.cli", "bench", "summarize", "--out", str(tmp_path),
                           "--budgets", "8"], capture_output=True, text=True, check=False, timeout=120)
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0 and "no runs of 8 trials" in proc.stderr


def test_a_task_whose_reference_failed_is_left_out():
    runs = [_run("a", "xgb", 0, [None, None]), _run("a", "gnn", 0, [3, 2]),
            _run("b", "xgb", 0, [4, 2]), _run("b", "gnn", 0, [4, 4])]
    s = summarize(runs, [2])
    assert s["tasks"] == 1 and list(s["per_task"]) == ["b"]
    assert s["best_vs_reference_geomean"]["gnn"][2] == pytest.approx(2.0)


def test_run_store_round_trips_and_names_a_broken_line(tmp_path):
    store = RunStore(tmp_path / "runs.jsonl")
    run = _run("a", "gnn", 2, [3.0, None])
    store.add(run)
    again = RunStore(tmp_path / "runs.jsonl")
    assert again.runs == [run] and again.has("a", "gnn", 2, 2) and not again.has("a", "gnn", 1, 2)
    with open(tmp_path / "runs.jsonl", "a", encoding="utf-8") as f:
        f.write('{"task": "b"\n')
    with pytest.raises(TvmCostError, match=r"runs.jsonl:2: not a bench run"):
        RunStore(tmp_path / "runs.jsonl")


def test_plot_curves_writes_a_png(tmp_path):
    runs = [_run(t, k, s, list(np.linspace(5, 1, 8) * (1 + s))) for t in "ab" for k in ("xgb", "gnn") for s in (0, 1)]
    path = plot_curves(runs, tmp_path / "curves.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_task_stems_group_kernels_by_op_kinds():
    assert _stem("fused_conv2d3_add7_relu2") == "fused_conv2d_add_relu"
    assert _stem("fused_matmul_add") == "fused_matmul_add"


def test_cli_refuses_an_unknown_cost_model(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "tvm_cost.cli", "bench", "kernel", "--cost-models", "xgb,mlp",
                           "--out", str(tmp_path)], capture_output=True, text=True, check=False, timeout=120)
    assert proc.returncode == 2 and "unknown cost model(s) mlp" in proc.stderr, proc.stderr


def test_summaries_are_strict_json_with_null_for_never(tmp_path):
    from tvm_cost.tuning.bench import write_json

    write_json(tmp_path / "s.json", {"trials_to_reference": {"gnn": [34.0, float("inf")]}, "nan": (float("nan"),)})

    def refuse(name):
        raise ValueError(name)

    assert json.loads((tmp_path / "s.json").read_text(), parse_constant=refuse) == {
        "trials_to_reference": {"gnn": [34.0, None]}, "nan": [None]}


def _summary_with_trials(trials: dict[str, list[float | None]], seeds: list[int]) -> dict:
    """A `summarize` output of one task as read back from its JSON (synthetic trials per kind, never = null)."""
    return {"seeds": seeds, "per_task": {"t0": {"trials_to_reference": trials}}}


def test_pooling_seed_sets_counts_never_reached_runs_as_infinitely_many_trials():
    from tvm_cost.tuning.bench import pool_trials

    first = _summary_with_trials({"gnn": [10.0, 30.0, None]}, [1, 2, 3])
    second = {"seeds": [4], "per_task": {"a": {"trials_to_reference": {"gnn": [None, 20.0], "gnn-old": [5.0]}},
                                         "b": {"trials_to_reference": {"gnn": [50.0], "gnn-old": [7.0]}}}}
    pooled = pool_trials([("first", first, "gnn"), ("second", second, "gnn")])
    assert [(s["runs"], s["reached"], s["median_trials"]) for s in pooled["sets"]] == [(3, 2, 30.0), (3, 2, 50.0)]
    assert pooled["pooled"] == {"runs": 6, "reached": 4, "median_trials": 40.0,  # (30 + 50) / 2
                                "median_ci95": [30.0, 50.0]}  # first twice: 30, second twice: 50
    never = _summary_with_trials({"gnn": [10.0, None]}, [5])  # half reached: the median is never
    assert pool_trials([("never", never, "gnn")])["pooled"] == {"runs": 2, "reached": 1, "median_trials": np.inf}
    assert pool_trials([("second", second, "gnn-old")])["pooled"]["median_trials"] == 6.0
    with pytest.raises(TvmCostError, match="second: no runs of kind 'ranker'.*gnn, gnn-old"):
        pool_trials([("second", second, "ranker")])


def test_the_pooled_median_interval_resamples_whole_seed_sets():
    """Sets of 10s and of 100s: only drawing one set twice moves the pooled median off 55, so the interval is
    [10, 100]; a bootstrap over single runs would put it near 55 and hide that the sets disagree."""
    from tvm_cost.tuning.bench import pool_trials

    tens, hundreds = (_summary_with_trials({"gnn": [v] * 9}, [i]) for i, v in enumerate((10.0, 100.0)))
    pooled = pool_trials([("a", tens, "gnn"), ("b", hundreds, "gnn")], resamples=400, seed=3)["pooled"]
    assert pooled["median_trials"] == 55.0 and pooled["median_ci95"] == [10.0, 100.0]
    same = pool_trials([("a", tens, "gnn"), ("a2", tens, "gnn")])["pooled"]
    assert same["median_ci95"] == [10.0, 10.0]
    never = _summary_with_trials({"gnn": [None] * 3}, [9])  # a set that never reached: the upper end is never
    assert pool_trials([("a", tens, "gnn"), ("n", never, "gnn")])["pooled"]["median_ci95"] == [10.0, np.inf]


def test_the_paired_ratio_draws_the_same_sets_for_both_kinds():
    """XGBModel needs twice the GNN's trials in each set, but the sets differ tenfold: drawn in pairs every draw
    gives 2.0; drawing the two kinds' sets apart would give anything from 0.2 to 20."""
    from tvm_cost.tuning.bench import pool_trials

    a = _summary_with_trials({"gnn": [10.0] * 5, "xgb": [20.0] * 5}, [1])
    b = _summary_with_trials({"gnn": [100.0] * 5, "xgb": [200.0] * 5}, [2])
    out = pool_trials([("a", a, "gnn"), ("b", b, "gnn")], versus="xgb", resamples=300, seed=1)
    assert out["pooled"]["median_trials"] == 55.0 and out["versus"]["median_trials"] == 110.0
    assert out["versus"]["kind"] == "xgb" and out["versus"]["median_ci95"] == [20.0, 200.0]
    assert out["versus"]["ratio"] == 2.0 and out["versus"]["ratio_ci95"] == [2.0, 2.0]
    assert pool_trials([("a", a, "gnn"), ("b", b, "gnn")], resamples=300, seed=1)["pooled"] == out["pooled"]
    never = _summary_with_trials({"gnn": [None, None], "xgb": [None, None], "fast": [4.0, 4.0]}, [3])
    assert pool_trials([("n", never, "gnn")], versus="xgb")["versus"]["ratio"] == 1.0  # neither got there
    assert pool_trials([("n", never, "fast")], versus="xgb")["versus"]["ratio"] == np.inf
    with pytest.raises(TvmCostError, match="n: no runs of kind 'ranker'"):
        pool_trials([("n", never, "gnn")], versus="ranker")


def test_versus_read_from_partner_summaries_pairs_them_by_set_and_refuses_other_references():
    """The same sets tuned by two GNNs, each merged with the set's XGBModel runs: both kinds are named gnn, so the
    second is read from the partner summaries; partners whose references differ do not pair."""
    from tvm_cost.tuning.bench import pool_trials

    def merged(trials: list[float], ref: float, seed: int) -> dict:
        return {"seeds": [seed], "per_task": {"t0": {"reference_ms": ref, "trials_to_reference": {"gnn": trials}}}}

    walk = [("w1", merged([10.0] * 3, 1.0, 1), "gnn"), ("w2", merged([100.0] * 3, 2.0, 2), "gnn")]
    rows = [("r1", merged([30.0] * 3, 1.0, 1)), ("r2", merged([300.0] * 3, 2.0, 2))]
    out = pool_trials(walk, versus="gnn", versus_from=rows, resamples=300, seed=1)
    assert out["pooled"]["median_trials"] == 55.0 and out["versus"]["median_trials"] == 165.0
    assert out["versus"]["from"] == ["r1", "r2"] and out["versus"]["ratio_ci95"] == [3.0, 3.0]
    assert pool_trials(walk, versus="gnn")["versus"]["ratio"] == 1.0  # without partners: each summary against itself
    with pytest.raises(TvmCostError, match="r2: its tasks or their references differ from w1's"):
        pool_trials(walk, versus="gnn", versus_from=rows[::-1])
    with pytest.raises(TvmCostError, match="pair each of the 2 summaries"):
        pool_trials(walk, versus="gnn", versus_from=rows[:1])
    with pytest.raises(TvmCostError, match="no versus kind"):
        pool_trials(walk, versus_from=rows)


def test_bench_pool_cli_reads_a_kind_per_summary_and_refuses_a_bad_file_in_one_line(tmp_path, capsys):
    from tvm_cost.cli import main
    from tvm_cost.tuning.bench import write_json

    write_json(tmp_path / "a.json", _summary_with_trials({"gnn": [20.0, float("inf")]}, [1]))
    write_json(tmp_path / "b.json", _summary_with_trials({"gnn": [None], "gnn-decisions": [40.0]}, [2]))
    out = tmp_path / "pooled.json"
    assert main(["bench", "pool", str(tmp_path / "a.json"), f"{tmp_path / 'b.json'}:gnn-decisions",
                 "--json", str(out)]) == 0
    pooled = json.loads(out.read_text())
    assert [s["kind"] for s in pooled["sets"]] == ["gnn", "gnn-decisions"]
    assert pooled["pooled"] == {"runs": 3, "reached": 2, "median_trials": 40.0, "median_ci95": [40.0, None]}
    assert main(["bench", "pool", str(tmp_path / "b.json"), str(tmp_path / "b.json"), "--kind", "gnn-decisions",
                 "--vs", "gnn", "--json", str(out)]) == 0
    versus = json.loads(out.read_text())["versus"]
    assert (versus["kind"], versus["median_trials"], versus["ratio"]) == ("gnn", None, None)  # never, in JSON
    capsys.readouterr()
    assert main(["bench", "pool", str(tmp_path / "b.json"), "--kind", "gnn", "--vs", "gnn-decisions"]) == 0
    assert "gnn-decisions / the kinds above: 0x (the kinds above never got there)" in capsys.readouterr().out
    assert main(["bench", "pool", str(tmp_path / "a.json"), "--vs", "gnn", "--vs-from", str(tmp_path / "a.json")]) == 0
    assert "gnn of --vs-from / the kinds above: 1.00x" in capsys.readouterr().out
    (tmp_path / "bad.json").write_text("{not json")
    proc = subprocess.run([sys.executable, "-m", "tvm_cost.cli", "bench", "pool", str(tmp_path / "bad.json")],
                          capture_output=True, text=True, check=False, timeout=120)
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0 and "bad.json" in proc.stderr, proc.stderr


@pytest.mark.slow
def test_bench_kernel_cli_measures_a_tiny_task(tmp_path):
    """The whole command with real builds and runs: 1 held-out task of a tiny MLP, 2 cost models, 8 trials."""
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "database_workload.json").write_text("")
    proc = subprocess.run(
        [sys.executable, "-m", "tvm_cost.cli", "bench", "kernel", "--model", "zoo:mlp,width=64,depth=1,in_features=64",
         "--exclude", str(tmp_path / "empty"), "--min-flop", "0", "--tasks", "1", "--cost-models", "xgb,random",
         "--seeds", "0",
         "--budgets", "4,8", "--trials-per-iter", "4", "--population", "32", "--keep-records",
         "--out", str(tmp_path / "bench")],
        capture_output=True, text=True, check=False, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((tmp_path / "bench" / "summary.json").read_text())
    assert summary["tasks"] == 1 and set(summary["best_vs_reference_geomean"]) == {"xgb", "random"}
    assert (tmp_path / "bench" / "curves.png").exists()
    proc = subprocess.run([sys.executable, "-m", "tvm_cost.cli", "bench", "remeasure", "--times", "3",
                           "--out", str(tmp_path / "bench")], capture_output=True, text=True, check=False, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    remeasured = json.loads((tmp_path / "bench" / "remeasure.json").read_text())
    assert set(remeasured["best_vs_reference_geomean"]) == {"xgb", "random"}
    assert all(0.2 < v < 5 for v in remeasured["tuned_over_remeasured_median"].values())
    proc = subprocess.run([sys.executable, "-m", "tvm_cost.cli", "bench", "remeasure", "--out",
                           str(tmp_path / "bench")], capture_output=True, text=True, check=False,
                          timeout=600)  # every group stored: a summary only
    assert proc.returncode == 0, proc.stderr[-3000:]
    again = json.loads((tmp_path / "bench" / "remeasure.json").read_text())
    assert again["command"] == remeasured["command"] and "--times 3" in again["command"]  # the timing command


def test_gnn_kinds_take_the_given_checkpoint(tmp_path):
    from test_cost_model import small_seernet

    from tvm_cost.features.program_schema import CANDIDATE_SCHEMA
    from tvm_cost.train import save_checkpoint
    from tvm_cost.tuning.bench import cost_model_for

    weights = save_checkpoint(tmp_path / "held_out_families", small_seernet(), schema=CANDIDATE_SCHEMA)
    gnn = cost_model_for("gnn", target={"kind": "llvm", "num-cores": 1}, seed=0, checkpoint=weights)
    assert gnn.describe()["source"] == str(weights)
    ensemble = cost_model_for("ensemble", target={"kind": "llvm", "num-cores": 1}, seed=0, checkpoint=weights)
    assert ensemble.gnn.describe()["source"] == str(weights) and ensemble.xgb_warmup == 100  # TVM's warm-up
    early = cost_model_for("ensemble-warm16", target={"kind": "llvm", "num-cores": 1}, seed=0, checkpoint=weights)
    assert early.gnn.describe()["source"] == str(weights)
    assert early.xgb_warmup == 16 and early.xgb.num_warmup_samples == 16
    late = cost_model_for("ensemble-xgb2", target={"kind": "llvm", "num-cores": 1}, seed=0, checkpoint=weights)
    assert late.gnn.describe()["source"] == str(weights) and late.xgb_warmup == 16
    assert (late.gnn_weight, late.xgb_weight) == (1.0, 2.0)
    adapt = cost_model_for("gnn-adapt", target={"kind": "llvm", "num-cores": 1}, seed=3, checkpoint=weights)
    assert adapt.describe()["source"] == str(weights)
    assert (adapt.config.update_steps, adapt.config.lr, adapt.config.seed) == (32, 1e-3, 3)
    both = cost_model_for("ensemble-adapt", target={"kind": "llvm", "num-cores": 1}, seed=0, checkpoint=weights)
    assert both.gnn.config.update_steps == 32 and both.xgb_warmup == 16
    explore = cost_model_for("gnn-explore", target={"kind": "llvm", "num-cores": 1}, seed=0, checkpoint=weights)
    assert explore.describe()["source"] == str(weights) and explore.config == gnn.config
    acc = cost_model_for("ensemble-acc", target={"kind": "llvm", "num-cores": 1}, seed=0, checkpoint=weights)
    assert acc.gnn.describe()["source"] == str(weights) and acc.weighting == "accuracy" and acc.xgb_warmup == 16
    handoff = cost_model_for("ensemble-handoff", target={"kind": "llvm", "num-cores": 1}, seed=0, checkpoint=weights)
    assert handoff.weighting == "handoff" and handoff.handoff == (32, 96) and handoff.xgb_warmup == 16
    top = cost_model_for("gnn-top", target={"kind": "llvm", "num-cores": 1}, seed=2, checkpoint=weights)
    assert top.describe()["source"] == str(weights)
    assert (top.config.update_steps, top.config.lr, top.config.rank_top_weight, top.config.seed) == (16, 1e-3, 8.0, 2)
    screened = cost_model_for("gnn-top-screened", target={"kind": "llvm", "num-cores": 1}, seed=2, checkpoint=weights)
    assert screened.model.describe()["source"] == str(weights) and screened.model.config == top.config
    assert screened.screen.feature_set == "trace" and screened.screen.featurizer is screened.model.featurizer
    fast = cost_model_for("gnn-screened-fast", target={"kind": "llvm", "num-cores": 1}, seed=1, checkpoint=weights)
    assert fast.model.describe()["source"] == str(weights) and fast.screen.feature_set == "trace"
    assert (fast.model.config.update_steps, fast.model.config.lr, fast.model.config.seed) == (2, 2e-3, 1)
    sharp = cost_model_for("gnn-sharp", target={"kind": "llvm", "num-cores": 1}, seed=0, checkpoint=weights)
    assert sharp.describe()["source"] == str(weights) and sharp.config.temperature == 0.25
    assert sharp.config == dataclasses.replace(gnn.config, temperature=0.25)


def test_only_gnn_explore_changes_the_search():
    from tvm_cost.tuning.bench import BENCH_KINDS, search_eps_greedy

    assert {k: search_eps_greedy(k) for k in BENCH_KINDS if search_eps_greedy(k) != 0.05} == {"gnn-explore": 0.25}


def test_the_bench_states_trials_to_the_reference_in_words():
    from tvm_cost.cli_bench import _reach_text
    from tvm_cost.tuning.bench import _reach_summary

    assert _reach_text(_reach_summary([(30.0, 12.34), (50.0, 20.0), (np.inf, np.inf)])) == \
        "reached in 2/3 runs, after a median of 50 trials, 20.0 s"
    assert _reach_text(_reach_summary([(30.0, 12.34), (np.inf, np.inf)])) == "reached in 1/2 runs, too few for a median"
    assert _reach_text(_reach_summary([])) == "no runs stored"


def test_default_exclusion_covers_every_measured_folder(tmp_path):
    from tvm_cost.cli_bench import _measured_folders

    layout = {"a": ["database_workload.json"], "b": ["database_workload.json.gz"], "c": ["tasks.json"]}
    for name, files in layout.items():
        (tmp_path / name).mkdir()
        for f in files:
            (tmp_path / name / f).write_text("")
    assert [p.name for p in _measured_folders(tmp_path)] == ["a", "b"]
