"""The online kernel benchmark: tune held-out tasks with each cost model at the same budget, side by side.

Each run is one ``ms.tune_tir`` of one task with one cost model and seed; a measure callback (`TrialLog`) keeps
every measured candidate in order with the seconds since the tune began, so one run to the largest budget gives
the best latency after every smaller budget too. Runs are appended to a JSON-lines file as they finish: an
interrupted bench resumes where it stopped. `summarize` turns the runs into the comparison the issue asks for
(best latency per budget relative to XGBModel's, and the trials and seconds the GNN needs to reach XGBModel's
best), `plot_curves` into a PNG of best latency against trials, and `pool_trials` pools the trials to XGBModel's
best over several seed sets' summaries.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tvm_cost.errors import TvmCostError

BENCH_KINDS: tuple[str, ...] = ("xgb", "xgb-warm16", "gnn", "ensemble", "ensemble-warm16", "ensemble-xgb2",
                                "gnn-adapt", "ensemble-adapt", "gnn-explore", "ensemble-acc", "gnn-top",
                                "ensemble-handoff", "ranker", "gnn+ranker", "ranker-trace", "ranker-screened",
                                "gnn-screened", "gnn-top-screened", "gnn-screened-fast", "gnn-sharp", "random")
ADAPT: dict[str, Any] = {"update_steps": 32, "lr": 1e-3}
"""Online fine-tuning of the "-adapt" kinds: 4x the steps at 2x the learning rate of the defaults of their time
(8 steps at 5e-4), to test whether a GNN that stalls after its first candidates learns the task faster."""
TOP: dict[str, Any] = {"update_steps": 16, "lr": 1e-3, "rank_top_weight": 8.0}
"""Online fine-tuning of "gnn-top": 2x the steps at 2x the learning rate of the defaults of its time, the ranking
loss weighted toward the fastest measured, the best of the settings scripts/late_round_study.py tried at ranking a
tune's late candidates (docs/kernel_model.md)."""
FAST: dict[str, Any] = {"update_steps": 2, "lr": 2e-3}
"""Online fine-tuning of "gnn-screened-fast": a quarter of the steps at 4x the learning rate of the defaults
before run twenty-seven, which benched it side by side with "gnn-screened" and then made it the default
(`GNNCostModelConfig`); kept so that run's records summarize under their name."""
SHARP: dict[str, Any] = {"temperature": 0.25}
"""Scores of "gnn-sharp": predicted throughput to the 4th power. Evolutionary search draws the parents it mutates
in proportion to the scores, so this is "gnn" with 4x the selection pressure (XGBModel's, and "gnn"'s, is plain
predicted throughput), to test whether a GNN that ranks well early gains from exploiting its ranking harder."""
REFERENCE_KINDS: tuple[str, ...] = ("xgb", "xgb-warm16")
EPS_GREEDY: dict[str, float] = {"gnn-explore": 0.25}
"""Share of each round's measured candidates that evolutionary search draws at random, where a kind differs from
MetaSchedule's 0.05: "gnn-explore" is "gnn" measuring 4 random candidates of 16, to test whether a GNN-led search
stalls for lack of coverage (docs/kernel_model.md, the offline replay)."""


@dataclass(frozen=True)
class BenchTask:
    """A task to tune: its structural hash, MetaSchedule name, FLOPs per call and the TIR module."""

    shash: str
    name: str
    flop: float
    mod: Any = field(repr=False, compare=False)


@dataclass
class BenchRun:
    """One tune: every measured candidate in order, as (seconds since the tune began, ms or None if it failed)."""

    task: str
    task_name: str
    kind: str
    seed: int
    max_trials: int
    trials: list[tuple[float, float | None]]
    wall_s: float

    def best_curve(self) -> np.ndarray:
        """Best latency (ms) after each trial; inf until the first success."""
        ms_ = np.array([np.inf if t is None else t for _, t in self.trials], dtype=float)
        return np.minimum.accumulate(ms_) if len(ms_) else ms_


def cost_model_for(kind: str, *, target: Any, seed: int, checkpoint: str | Path | None = "auto",
                   ranker: str | Path | None = "auto") -> Any:
    """The cost model of a bench kind: "xgb-warm16" is TVM's XGBModel trusting its fit after 16 samples, not 100;
    "ensemble" is the ensemble with TVM's XGBModel as shipped (100 samples), "ensemble-warm16" the one
    ``tvm-cost tune --cost-model ensemble`` uses (XGBModel weighted in from 16 samples), "ensemble-xgb2" that one
    with XGBModel's full weight doubled (level with the GNN at 16 samples, twice its weight from 32); "gnn-adapt"
    and "ensemble-adapt" are "gnn" and "ensemble-warm16" with the GNN fine-tuned harder online (`ADAPT`);
    "gnn-explore" is "gnn" (its search differs, `EPS_GREEDY`); "ensemble-acc" is "ensemble-warm16" weighting
    each member by how well it ranked the last rounds (`EnsembleCostModel`'s ``weighting="accuracy"``); "gnn-top"
    is "gnn" fine-tuned with `TOP`; "ensemble-handoff" is "ensemble-warm16" handing off from the GNN to XGBModel
    between 32 and 96 measurements (``weighting="handoff"``); "gnn-top-screened" is "gnn-screened" with the GNN
    fine-tuned as in "gnn-top", "gnn-screened-fast" with it fine-tuned in fewer steps (`FAST`); "gnn-sharp" is
    "gnn" with sharper scores (`SHARP`); "ranker",
    "gnn+ranker", "ranker-trace", "ranker-screened" and "gnn-screened" are `make_cost_model`'s, with the booster
    `ranker`."""
    from tvm_cost.tuning.config import GNNCostModelConfig
    from tvm_cost.tuning.ensemble import XGB_WARMUP, EnsembleCostModel
    from tvm_cost.tuning.tune import make_cost_model
    from tvm_cost.tuning.xgb import make_xgb

    if kind == "xgb-warm16":
        return make_xgb(num_warmup_samples=XGB_WARMUP)
    configured = {"gnn-top": ("gnn", TOP), "gnn-top-screened": ("gnn-screened", TOP),
                  "gnn-screened-fast": ("gnn-screened", FAST), "gnn-adapt": ("gnn", ADAPT),
                  "ensemble-adapt": ("ensemble", ADAPT), "gnn-sharp": ("gnn", SHARP)}
    if kind in configured:
        shipped, settings = configured[kind]
        return make_cost_model(shipped, target=target, seed=seed, checkpoint=checkpoint,
                               ranker=ranker, gnn_config=GNNCostModelConfig(seed=seed, **settings))
    if kind in ("ensemble", "ensemble-xgb2", "ensemble-acc", "ensemble-handoff"):
        gnn = make_cost_model("gnn", target=target, seed=seed, checkpoint=checkpoint)
        if kind in ("ensemble-acc", "ensemble-handoff"):
            return EnsembleCostModel(gnn, weighting="accuracy" if kind == "ensemble-acc" else "handoff")
        if kind == "ensemble":
            return EnsembleCostModel(gnn, make_xgb())  # TVM's 100-sample warm-up
        return EnsembleCostModel(gnn, xgb_weight=2.0)  # the default XGB member, weighted twice
    if kind not in BENCH_KINDS:
        raise ValueError(f"unknown bench cost model {kind!r}; choose from {', '.join(BENCH_KINDS)}")
    shipped = {"ensemble-warm16": "ensemble", "gnn-explore": "gnn"}.get(kind, kind)
    return make_cost_model(shipped, target=target, seed=seed, checkpoint=checkpoint,
                           ranker=ranker)


def search_eps_greedy(kind: str) -> float:
    """The evolutionary search's random share for a bench kind (`EPS_GREEDY`, else MetaSchedule's 0.05)."""
    return EPS_GREEDY.get(kind, 0.05)


def _trial_log() -> Any:
    """A MeasureCallback that records each measured candidate's latency with the time since it was created."""
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.measure_callback import PyMeasureCallback

    from tvm_cost.tuning.replay import measured_latency_ms

    @derived_object
    class TrialLog(PyMeasureCallback):
        def __init__(self) -> None:
            self.start = time.perf_counter()
            self.trials: list[tuple[float, float | None]] = []

        def apply(self, task_scheduler: Any, task_id: int, measure_candidates: Any, builder_results: Any,
                  runner_results: Any) -> None:
            now = round(time.perf_counter() - self.start, 3)
            self.trials.extend((now, measured_latency_ms(r)) for r in runner_results)

    return TrialLog()


def run_one(task: BenchTask, kind: str, *, seed: int, target: Any, max_trials: int, trials_per_iter: int = 16,
            builder: Any = None, runner: Any = None, population_size: int = 128,
            measure_callbacks: Sequence[Any] | None = None, checkpoint: str | Path | None = "auto",
            ranker: str | Path | None = "auto", records_dir: str | Path | None = None) -> BenchRun:
    """Tune `task` with cost model `kind` for `max_trials` measured candidates.

    The search is MetaSchedule's evolutionary search with a population of `population_size` (the collection
    setting; MetaSchedule's 512 spends most of a small budget predicting) and the same settings for every kind.
    `measure_callbacks` replace MetaSchedule's default ones (the trial log is always added). `checkpoint` is the
    GNN's weights for the "gnn" and "ensemble" kinds (default: the one shipped for the target), `ranker` the
    booster of the "ranker" kinds. With
    `records_dir`, the tune's MetaSchedule database (every measured schedule, in order) is kept in its subfolder
    `record_folder` (a stale one from an interrupted run is replaced), for `tvm-cost bench remeasure`.
    """
    from tvm.s_tir import meta_schedule as ms

    from tvm_cost.tuning.tune import _tvm_target, tune_tir

    tvm_target = _tvm_target(target)
    log = _trial_log()
    if measure_callbacks is None:
        measure_callbacks = ms.measure_callback.MeasureCallback.create("default")
    callbacks = [*measure_callbacks, log]
    strategy = ms.search_strategy.EvolutionarySearch(
        population_size=population_size, init_min_unmeasured=max(1, min(50, population_size // 4)),
        genetic_num_iters=2, eps_greedy=search_eps_greedy(kind))
    start = time.perf_counter()
    with contextlib.ExitStack() as stack:
        if records_dir is None:
            work_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="tvm-cost-bench-"))
        else:
            work_dir = str(Path(records_dir) / record_folder(task.shash, kind, seed))
            shutil.rmtree(work_dir, ignore_errors=True)
        tune_tir(task.mod, target=tvm_target,
                 cost_model=cost_model_for(kind, target=tvm_target, seed=seed, checkpoint=checkpoint,
                                           ranker=ranker),
                 max_trials=max_trials, work_dir=work_dir, builder=builder, runner=runner, seed=seed,
                 num_trials_per_iter=trials_per_iter, strategy=strategy, measure_callbacks=callbacks)
    return BenchRun(task.shash, task.name, kind, seed, max_trials, list(log.trials)[:max_trials],
                    round(time.perf_counter() - start, 2))


def record_folder(task: str, kind: str, seed: int) -> str:
    """The subfolder of a bench's records folder that holds one run's MetaSchedule database."""
    return f"{task}-{kind}-seed{seed}"


def _stem(name: str) -> str:
    """``fused_conv2d3_add7_relu2`` -> ``fused_conv2d_add_relu``: the op kinds of a task name."""
    return re.sub(r"\d+(?=_|$)", "", name)


def held_out_tasks(models: Sequence[str], target: Any, *, exclude: Iterable[str] = (), n: int = 6,
                   min_flop: float = 1e6, max_flop: float = 2e8) -> list[BenchTask]:
    """`n` tasks of `models` (zoo specs or ONNX paths) whose workloads are not in `exclude` (shashes).

    Picks the largest tasks within [min_flop, max_flop] FLOPs, one per kind of fused op first (by task name
    without numbers), so the set spans convolutions, matmuls and the rest. The bounds keep a candidate's time
    measurable and the run short.
    """
    from tvm_cost.collect.tasks import extract_tasks
    from tvm_cost.importer import import_model
    from tvm_cost.tuning.tune import _tvm_target

    tvm_target = _tvm_target(target)
    skip = set(exclude)
    tasks = [t for t in extract_tasks([(m, import_model(m).mod) for m in models], tvm_target)
             if t.shash not in skip and min_flop <= t.flop <= max_flop]
    tasks.sort(key=lambda t: -t.flop)
    first: dict[str, Any] = {}
    for t in tasks:
        first.setdefault(_stem(t.name), t)
    picked = list(first.values())[:n]
    picked += [t for t in tasks if t not in picked][: n - len(picked)]
    if not picked:
        raise TvmCostError(f"no task of {', '.join(models)} is held out and within {min_flop:g}-{max_flop:g} FLOPs")
    return [BenchTask(t.shash, t.name, t.flop, t.mod) for t in picked]


def workload_hashes(folder: str | Path) -> set[str]:
    """Structural hashes of the workloads in a tuning-log folder (the tasks a checkpoint may have seen)."""
    from tvm_cost.collect.records import load_workloads, resolve

    path = Path(folder) / "database_workload.json"
    try:
        resolve(path)
    except FileNotFoundError as err:
        raise TvmCostError(f"{folder}: no database_workload.json[.gz] to exclude tasks by") from err
    return {w[0] for w in load_workloads(path) if w is not None}


class RunStore:
    """The bench's runs, one JSON object per line; a rerun skips the (task, kind, seed, max_trials) it holds."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.runs: list[BenchRun] = []
        if self.path.exists():
            for lineno, line in enumerate(self.path.read_text(encoding="utf-8").splitlines(), 1):
                try:
                    obj = json.loads(line)
                    obj["trials"] = [tuple(t) for t in obj["trials"]]
                    self.runs.append(BenchRun(**obj))
                except (ValueError, TypeError, KeyError) as err:
                    raise TvmCostError(f"{self.path}:{lineno}: not a bench run ({err})") from err

    def has(self, task: str, kind: str, seed: int, max_trials: int) -> bool:
        return any((r.task, r.kind, r.seed, r.max_trials) == (task, kind, seed, max_trials) for r in self.runs)

    def add(self, run: BenchRun) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(asdict(run)) + "\n")
        self.runs.append(run)


def run_bench(tasks: Sequence[BenchTask], kinds: Sequence[str], seeds: Sequence[int], *, store: RunStore,
              target: Any, max_trials: int, on_run: Callable[[BenchRun | None, str], None] | None = None,
              **run_kwargs: Any) -> list[BenchRun]:
    """Every (task, seed, kind) not yet in `store`, tuned and stored; the kinds of one task and seed run together.

    `on_run(run, label)` is called after each one (run None: skipped, already stored).
    """
    for task in tasks:
        for seed in seeds:
            for kind in kinds:
                label = f"{task.name} {kind} seed {seed}"
                if store.has(task.shash, kind, seed, max_trials):
                    if on_run:
                        on_run(None, label)
                    continue
                run = run_one(task, kind, seed=seed, target=target, max_trials=max_trials, **run_kwargs)
                store.add(run)
                if on_run:
                    on_run(run, label)
    keys = {(t.shash, k, s) for t in tasks for k in kinds for s in seeds}
    return [r for r in store.runs if (r.task, r.kind, r.seed) in keys and r.max_trials == max_trials]


def _best_at(run: BenchRun, budget: int) -> float:
    curve = run.best_curve()
    return float(curve[min(budget, len(curve)) - 1]) if len(curve) else np.inf


def write_json(path: str | Path, summary: dict[str, Any]) -> None:
    """`summary` (of `summarize` or a re-measure) as strict JSON, which other tools (jq, browsers) parse: a
    non-finite number (a run that never reached a latency: infinitely many trials) is written as null."""

    def strict(value: Any) -> Any:
        if isinstance(value, float) and not math.isfinite(value):
            return None
        if isinstance(value, dict):
            return {k: strict(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [strict(v) for v in value]
        return value

    Path(path).write_text(json.dumps(strict(summary), indent=1, allow_nan=False) + "\n", encoding="utf-8")


def summarize(runs: Sequence[BenchRun], budgets: Sequence[int], *,
              reference: Sequence[str] = REFERENCE_KINDS) -> dict[str, Any]:
    """The comparison over tasks and seeds.

    The reference latency of a task is the best after the largest budget of the better `reference` kind (lower
    median over seeds). Reports, per kind and budget, the geometric mean over tasks of (median over seeds of the
    best latency) / reference, below 1 is better; and for every kind ("to_reference"), the trials and seconds
    (search, builds and runs included) its runs need to reach the reference, median over (task, seed), inf where
    never reached. For the reference kinds that is XGBModel's own pace to its median seed's best, the yardstick for
    the others.
    """
    top = max(budgets)
    by_task: dict[str, list[BenchRun]] = {}
    for r in runs:
        by_task.setdefault(r.task, []).append(r)
    kinds = sorted({r.kind for r in runs}, key=lambda k: (BENCH_KINDS + (k,)).index(k))
    per_task: dict[str, Any] = {}
    ratios: dict[str, dict[int, list[float]]] = {k: {b: [] for b in budgets} for k in kinds}
    reached: dict[str, list[tuple[float, float]]] = {k: [] for k in kinds}
    for shash, task_runs in by_task.items():
        best = {k: {b: float(np.median([_best_at(r, b) for r in task_runs if r.kind == k])) for b in budgets}
                for k in kinds if any(r.kind == k for r in task_runs)}
        refs = {k: best[k][top] for k in reference if k in best}
        if not refs or not np.isfinite(min(refs.values())):
            continue
        ref_kind = min(refs, key=refs.__getitem__)
        ref = refs[ref_kind]
        for k, row in best.items():
            for b, v in row.items():
                ratios[k][b].append(v / ref)
        to_ref: dict[str, list[float]] = {k: [] for k in best}
        for r in task_runs:
            hit = np.nonzero(r.best_curve() <= ref)[0]
            trial, seconds = (float(hit[0] + 1), float(r.trials[hit[0]][0])) if len(hit) else (np.inf, np.inf)
            reached[r.kind].append((trial, seconds))
            to_ref[r.kind].append(trial)
        per_task[shash] = {"task_name": task_runs[0].task_name, "reference_kind": ref_kind, "reference_ms": ref,
                           "best_ms": best, "trials_to_reference": to_ref}
    geo = {k: {b: float(np.exp(np.mean(np.log(v)))) if v else None for b, v in row.items()}
           for k, row in ratios.items()}
    return {"budgets": list(budgets), "tasks": len(per_task), "seeds": sorted({r.seed for r in runs}),
            "best_vs_reference_geomean": geo,
            "to_reference": {k: _reach_summary(v) for k, v in reached.items()},
            "median_wall_s": {k: float(np.median([r.wall_s for r in runs if r.kind == k])) for k in kinds},
            "per_task": per_task}


def _reach_summary(reached: Sequence[tuple[float, float]]) -> dict[str, Any]:
    """Median trials and seconds to the reference over runs (inf where never reached), and how many reached it."""
    trials, seconds = np.array([t for t, _ in reached], float), np.array([s for _, s in reached], float)
    return {"median_trials": float(np.median(trials)) if len(trials) else None,
            "median_seconds": float(np.median(seconds)) if len(seconds) else None,
            "reached": f"{int(np.isfinite(trials).sum())}/{len(trials)}"}


def pool_trials(summaries: Sequence[tuple[str, dict[str, Any], str]], *, versus: str | None = None,
                versus_from: Sequence[tuple[str, dict[str, Any]]] | None = None, resamples: int = 2000,
                seed: int = 0) -> dict[str, Any]:
    """Trials to the reference pooled over seed sets: `summaries` are (label, a `summarize` output as read back
    from its JSON, the kind to read). Each set keeps its own reference; a run that never reached it counts as
    infinitely many trials, so a median is finite only where more than half the runs reached it.

    With two sets or more, the pooled median gets a 95 % interval from a bootstrap over whole seed sets
    (`resamples` draws, seeded): the runs of one set share its reference and its machine state, so they are not
    independent, and resampling single runs would understate how far the median moves from one set to the next.

    `versus` names a second kind read from the same summaries (XGBModel's, say). Its pooled median is divided by
    the first kind's, and that ratio (how many times the trials the second kind needs) gets an interval from the
    same draws of sets, so each draw compares the two kinds on the same sets and references (a paired bootstrap).
    `versus_from` reads `versus` from other (label, summary) pairs instead, one for each of `summaries` in order:
    the same seed sets tuned with other weights, say, whose runs had the same tasks and references.

    Raises:
        TvmCostError: A summary without per-run trials of a kind (one line naming the label and the kinds), or a
            `versus_from` summary whose tasks or references differ from its partner's (or one too many or few).
    """
    if versus_from is not None:
        if versus is None or len(versus_from) != len(summaries):
            raise TvmCostError(f"pair each of the {len(summaries)} summaries with one to read the versus kind from "
                               f"(got {len(versus_from)}{'' if versus else ' and no versus kind'})")
        for (label, summary, _), (other_label, other) in zip(summaries, versus_from):
            _check_same_references(label, summary, other_label, other)
    partners = versus_from or [(label, summary) for label, summary, _ in summaries]
    sets: list[dict[str, Any]] = []
    # None: each summary's own kind
    pooled: dict[str | None, list[list[float]]] = {None: []} if versus is None else {None: [], versus: []}
    for (label, summary, kind), (other_label, other) in zip(summaries, partners):
        runs = _runs_to_reference(label, summary, kind)
        pooled[None].append(runs)
        sets.append({"label": label, "kind": kind, "seeds": summary.get("seeds"), **_trials_summary(runs)})
        if versus is not None:
            pooled[versus].append(_runs_to_reference(other_label, other, versus))
    rows = {k: _trials_summary([t for runs in per_set for t in runs]) for k, per_set in pooled.items()}
    medians = {}  # each kind's pooled median per draw of sets; one set has nothing to resample
    if len(summaries) > 1:
        draws = np.random.default_rng(seed).integers(len(summaries), size=(resamples, len(summaries)))
        medians = {k: _pooled_medians(per_set, draws) for k, per_set in pooled.items()}
        for k, row in rows.items():
            row["median_ci95"] = _ci95(medians[k])
    out: dict[str, Any] = {"sets": sets, "pooled": rows[None]}
    if versus is not None:
        vs = out["versus"] = {"kind": versus, **({"from": [lb for lb, _ in versus_from]} if versus_from else {}),
                              **rows[versus],
                              "ratio": _ratio(rows[versus]["median_trials"], rows[None]["median_trials"])}
        if medians:
            vs["ratio_ci95"] = _ci95(_ratio(medians[versus], medians[None]))
    return out


def _check_same_references(label: str, summary: dict[str, Any], other_label: str, other: dict[str, Any]) -> None:
    """Runs of two summaries pair only where each task's reference (XGBModel's best, the bar both count trials to)
    is the same: the same seed set's XGBModel runs, merged with each."""
    def refs(s: dict[str, Any]) -> dict[str, Any]:
        return {task: v.get("reference_ms") for task, v in s.get("per_task", {}).items()}

    if refs(summary) != refs(other):
        raise TvmCostError(f"{other_label}: its tasks or their references differ from {label}'s, so their runs "
                           "cannot be paired (merge the same XGBModel runs into both)")


def _runs_to_reference(label: str, summary: dict[str, Any], kind: str) -> list[float]:
    runs = []
    for task in summary.get("per_task", {}).values():
        to_ref = task.get("trials_to_reference", {})
        if kind not in to_ref:
            raise TvmCostError(f"{label}: no runs of kind {kind!r} to the reference (it has: "
                               f"{', '.join(sorted(to_ref)) or 'none'})")
        runs += [math.inf if t is None else float(t) for t in to_ref[kind]]
    return runs


def _pooled_medians(sets: Sequence[Sequence[float]], draws: np.ndarray) -> np.ndarray:
    """The pooled median of each draw (a row of set indices, drawn with replacement)."""
    return np.array([np.median(np.concatenate([sets[i] for i in draw])) for draw in draws])


def _ci95(values: np.ndarray) -> list[float]:
    # inverted_cdf picks observed values: no interpolation towards an infinite one
    return [float(q) for q in np.quantile(values, [0.025, 0.975], method="inverted_cdf")]


def _ratio(num: Any, den: Any) -> Any:
    """num / den for trials, where never (inf) over never counts as 1: neither kind got there."""
    num, den = np.asarray(num, float), np.asarray(den, float)
    with np.errstate(invalid="ignore"):
        ratio = np.where(np.isinf(num) & np.isinf(den), 1.0, num / den)
    return float(ratio) if ratio.ndim == 0 else ratio


def _trials_summary(trials: Sequence[float]) -> dict[str, Any]:
    return {"runs": len(trials), "reached": int(np.isfinite(trials).sum()) if trials else 0,
            "median_trials": float(np.median(trials)) if trials else None}


def plot_curves(runs: Sequence[BenchRun], path: str | Path) -> Path:
    """PNG: for each task, best latency (median over seeds) against trials, one line per cost model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = list(dict.fromkeys(r.task for r in runs))
    cols = min(3, len(tasks))
    rows = -(-len(tasks) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax, shash in zip(axes.flat, tasks):
        task_runs = [r for r in runs if r.task == shash]
        for kind in dict.fromkeys(r.kind for r in task_runs):
            curves = [r.best_curve() for r in task_runs if r.kind == kind]
            n = min(len(c) for c in curves)
            if n == 0:
                continue
            ax.plot(np.arange(1, n + 1), np.median([c[:n] for c in curves], axis=0), label=kind)
        ax.set_title(task_runs[0].task_name, fontsize=8)
        ax.set_xlabel("measured trials")
        ax.set_ylabel("best latency (ms)")
        ax.set_xscale("log", base=2)
    for ax in list(axes.flat)[len(tasks):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
