"""Cost-model overhead in one run: `GNNCostModel`, `RankerCostModel` (on rows, on the trace alone, and the trace
ranker screening the rows one or the GNN) and the GNN with the ranker vs TVM's `XGBModel` on a real measured task.

- predict(): 2,048 candidates of the task (its measured traces replayed with freshly sampled decisions), feature
  extraction included (both models extract from the schedules inside `predict`).
- update(): one batch of the task's measured candidates with their measured ``run_secs``; `XGBModel` as TVM ships
  it (retrains only when its data grew by a fifth) and one that retrains on every update ("xgb-retrain").

- in a tune (``--tune-trials N``): the seconds each model spends in predict() and update() during a real
  evolutionary search of the same task (TVM's defaults: population 512, 4 genetic iterations), driven by
  MetaSchedule's DummyBuilder/DummyRunner (their run_secs are random, not measurements; they only move the loop).
  Here the GNN's graph cache counts: the search scores about a fifth of its candidates again in later rounds, and
  update() receives candidates predict() has already featurized. Each model drives its own search there, so the
  candidates differ between models (and so does the cost of extracting their features); the script therefore also
  records the calls XGBModel's tune made and replays that same stream of predict() and update() calls into every
  model ("in_tune_replayed"): the ratios of equal work.

- ``--chunk-sizes 128,256``: the GNN again with its featurizer extracting that many candidates a call
  (`CandidateFeaturizer.chunk_size`; "gnn" itself has the default), in the same rotation of predict() calls.
- ``--also-gnn NAME=CHECKPOINT``: another GNN's weights, timed per call beside the others (e.g. weights trained
  with ``--no-store-features``, whose graphs come from the walk alone).
- ``--breakdown``: where the CPU time of one cold predict goes: PerStoreFeature on one thread and on N, the
  Python side of the program graphs alone (hash, walk, structure, decisions), and the two pipelined as the GNN
  runs them. When extraction on N threads plus that Python side already fill N cores, running them side by side
  cannot hide the Python side.

Both models start as a tune would: `XGBModel` already holds the measured records of every other task of the data
folder (TVM retrains its booster on all of them in `update`), `GNNCostModel` loads its shipped checkpoint. One
thread each (torch intra-op, xgboost ``nthread``, the extractor's), or N with ``--threads N`` (the extractor runs
PerStoreFeature on N threads for every model; the GNN's Python-side featurization runs beside it). The per-call
timings start each repeat with an empty graph cache (cold), so they are what one call costs on candidates never
seen; each repeat times the models in another order.

    python scripts/bench_cost_model_overhead.py --data /tmp/kdata/llvm-1core --candidates 2048 --repeat 3 \
        --tune-trials 64
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import statistics
import time
from pathlib import Path
from typing import Any


def task_candidates(data: str, task_name: str | None) -> tuple[Any, Any, list[Any], list[Any], str]:
    """(mod, target, measured candidates, their runner results, task hash) of the task with the most records."""
    import tvm
    from tvm.s_tir import Schedule
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.schedule import Trace

    from tvm_cost.data.kernel_dataset import _read_raw

    tasks = json.load(open(f"{data}/tasks.json"))
    raw = _read_raw(Path(data))
    pick = [t for t in raw.values() if task_name is None or task_name in tasks.get(t.shash, {}).get("task_name", "")]
    task = max(pick, key=lambda t: (len(t.records), tasks.get(t.shash, {}).get("flop", 0)))
    mod = ms.database.Workload.from_json([task.shash, task.workload]).mod
    cands, results = [], []
    for trace, run_secs in task.records:
        sch = Schedule(mod)
        Trace.apply_json_to_schedule(trace, sch)
        cands.append(ms.MeasureCandidate(sch, ms.arg_info.ArgInfo.from_prim_func(sch.mod["main"])))
        results.append(ms.runner.RunnerResult([float(s) for s in run_secs], None))
    return mod, tvm.target.Target(task.target), cands, results, task.shash


def resampled(mod: Any, measured: list[Any], count: int) -> list[Any]:
    """`count` candidates: the measured traces replayed without their decisions (new samples per seed)."""
    from tvm.s_tir import Schedule
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.schedule import Trace

    traces = [Trace(c.sch.trace.insts, {}) for c in measured]
    out: list[Any] = []
    seed = 0
    while len(out) < count and seed < 20 * count:
        sch = Schedule(mod, seed=seed + 1)
        try:
            traces[seed % len(traces)].apply_to_schedule(sch, remove_postproc=False)
            out.append(ms.MeasureCandidate(sch, ms.arg_info.ArgInfo.from_prim_func(sch.mod["main"])))
        except Exception:  # noqa: BLE001 - a sampled decision a postprocessor rejects: draw again
            pass
        seed += 1
    return out


def in_tune_seconds(mod: Any, target: Any, models: dict[str, Any], *, trials: int, seed: int = 0,
                    record: str | None = None,
                    threads: int = 1) -> tuple[dict[str, dict[str, Any]], list[tuple[Any, list, Any]]]:
    """Seconds spent in each model's predict() and update() during one DummyRunner tune of `mod` per model, and
    the calls (context, candidates, results or None for a predict) that the tune of the model `record` made."""
    import tempfile

    from tvm.ir.utils import derived_object
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.meta_schedule.cost_model import PyCostModel
    from tvm.s_tir.meta_schedule.testing.dummy_object import DummyBuilder, DummyRunner

    @derived_object
    class Timed(PyCostModel):
        def __init__(self, inner: Any, calls: list | None) -> None:
            self.inner, self.calls, self.seconds = inner, calls, {"predict_s": 0.0, "update_s": 0.0,
                                                                  "predict_calls": 0, "candidates_scored": 0}

        def load(self, path: str) -> None:
            self.inner.load(path)

        def save(self, path: str) -> None:
            self.inner.save(path)

        def update(self, context: Any, candidates: Any, results: Any) -> None:
            if self.calls is not None:
                self.calls.append((context, list(candidates), list(results)))
            t0 = time.perf_counter()
            self.inner.update(context, candidates, results)
            self.seconds["update_s"] += time.perf_counter() - t0

        def predict(self, context: Any, candidates: Any) -> Any:
            if self.calls is not None:
                self.calls.append((context, list(candidates), None))
            t0 = time.perf_counter()
            out = self.inner.predict(context, candidates)
            self.seconds["predict_s"] += time.perf_counter() - t0
            self.seconds["predict_calls"] += 1
            self.seconds["candidates_scored"] += len(candidates)
            return out

    spent: dict[str, dict[str, Any]] = {}
    calls: list[tuple[Any, list, Any]] = []
    for name, model in models.items():
        timed = Timed(model, calls if name == record else None)
        with tempfile.TemporaryDirectory() as work_dir:
            ms.tune_tir(mod, target=target, work_dir=work_dir, max_trials_global=trials, num_trials_per_iter=16,
                        builder=DummyBuilder(), runner=DummyRunner(), cost_model=timed, seed=seed,
                        num_tuning_cores=threads,
                        strategy=ms.search_strategy.EvolutionarySearch(),
                        measure_callbacks=[ms.measure_callback.AddToDatabase(), ms.measure_callback.UpdateCostModel()])
        spent[name] = dict(timed.seconds)
    return spent, calls


def rotated(names: list[str], i: int) -> list[str]:
    """`names` starting at position ``i`` (mod its length): the order of the i-th round, so that each model takes
    each place in turn and a slower stretch of a shared machine falls on all of them alike."""
    return names[i % len(names):] + names[:i % len(names)]


def replayed_seconds(models: dict[str, Any], calls: list[tuple[Any, list, Any]]) -> dict[str, dict[str, Any]]:
    """Seconds each model spends in predict() and update() when given the same recorded stream of `calls`.

    Call by call, every model in turn (`rotated`)."""
    spent: dict[str, dict[str, Any]] = {name: {"predict_s": 0.0, "update_s": 0.0} for name in models}
    names = list(models)
    for i, (context, candidates, results) in enumerate(calls):
        for name in rotated(names, i):
            t0 = time.perf_counter()
            if results is None:
                models[name].predict(context, candidates)
                spent[name]["predict_s"] += time.perf_counter() - t0
            else:
                models[name].update(context, candidates, results)
                spent[name]["update_s"] += time.perf_counter() - t0
    return spent


OURS = ("gnn", "ranker", "ranker-trace", "ranker-screened", "gnn+ranker", "gnn-screened")
"""The project's cost models timed against XGBModel."""


def ours(target: Any, threads: int) -> dict[str, Any]:
    """`OURS` as `make_cost_model` builds them (shipped weights), the GNN with `threads` torch threads."""
    from tvm_cost.tuning import GNNCostModelConfig, make_cost_model

    return {k: make_cost_model(k, target=target, gnn_config=GNNCostModelConfig(num_threads=threads)) for k in OURS}


def featurized(model: Any) -> list[Any]:
    """The members of `model` (itself alone, an ensemble's or a screened model's two) that own a featurizer."""
    if hasattr(model, "gnn"):
        members = [model.gnn, model.xgb]
    elif hasattr(model, "screen"):
        members = [model.screen, model.model]
    else:
        members = [model]
    return [m for m in members if hasattr(m, "featurizer")]


def cold(models: dict[str, Any]) -> None:
    """Empty every graph cache (the members of an ensemble or a screened model keep sharing one)."""
    from tvm_cost.tuning.replay import CandidateFeaturizer

    for model in models.values():
        members = featurized(model)
        if members:
            old = members[0].featurizer
            fresh = CandidateFeaturizer(walk=old.walk, chunk_size=old.chunk_size)
            for member in members:
                member.featurizer = fresh


def breakdown(mod: Any, target: Any, candidates: list[Any], *, threads: int, repeat: int) -> dict[str, float]:
    """Median seconds of the parts of one cold GNN predict() on `candidates` (`--breakdown`), rotated per repeat."""
    from tvm_ffi import structural_hash

    from relay_passes.schedule import feature_context
    from tvm_cost.features.program_graph import extract_pipelined, store_feature_rows
    from tvm_cost.tuning.replay import CandidateFeaturizer

    one, many = feature_context(mod, target, num_threads=1), feature_context(mod, target, num_threads=threads)
    featurizer = CandidateFeaturizer()
    u = featurizer.task_globals(many)
    size = featurizer.chunk_size
    chunks = [candidates[i:i + size] for i in range(0, len(candidates), size)]

    def python_side(chunk: list[Any]) -> Any:
        return [structural_hash(c.sch.mod) for c in chunk], featurizer._python_side(many, chunk, u)  # noqa: SLF001

    parts = {"extract, 1 thread": lambda: store_feature_rows(one, candidates),
             f"extract, {threads} threads": lambda: store_feature_rows(many, candidates),
             "python side alone": lambda: python_side(candidates),
             f"both pipelined, {threads} threads": lambda: extract_pipelined(many, chunks, python_side,
                                                                             lambda rows, side: (rows, side))}
    spent: dict[str, list[float]] = {name: [] for name in parts}
    for r in range(repeat):
        for name in rotated(list(parts), r):
            gc.collect()
            t0 = time.perf_counter()
            parts[name]()
            spent[name].append(time.perf_counter() - t0)
    return {name: statistics.median(v) for name, v in spent.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="a tuning-log folder (a snapshot of tuning_logs/llvm-1core)")
    parser.add_argument("--task-name", help="substring of the task name to pick (default: most records)")
    parser.add_argument("--candidates", type=int, default=2048)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tune-trials", type=int, default=0,
                        help="also time both models inside a DummyRunner tune of this many trials")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads of every model: feature extraction (the tune context's), xgboost, torch")
    parser.add_argument("--chunk-sizes", default="",
                        help="comma-separated: also time the GNN's predict with these featurizer chunk sizes")
    parser.add_argument("--breakdown", action="store_true", help="also time the parts of a cold GNN predict")
    parser.add_argument("--also-gnn", action="append", default=[], metavar="NAME=CHECKPOINT",
                        help="also time a GNN with these weights per call, in the same rotation (repeatable; e.g. "
                             "one trained with --no-store-features, which never runs the extractor)")
    parser.add_argument("--json", help="write the timings as JSON")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("tvm.s_tir.meta_schedule").setLevel(logging.ERROR)
    import numpy as np
    import torch

    from relay_passes.schedule import feature_context
    from tvm_cost.features.schema import NUM_STORE_FEATURES
    from tvm_cost.tuning import GNNCostModelConfig, make_cost_model, make_xgb
    from tvm_cost.tuning.offline import load_kernel_dataset
    from tvm_cost.tuning.replay import CandidateFeaturizer
    from tvm_cost.tuning.xgb import seed_xgb

    torch.set_num_threads(args.threads)
    mod, target, measured, results, shash = task_candidates(args.data, args.task_name)
    context = feature_context(mod, target, num_threads=args.threads)
    candidates = resampled(mod, measured, args.candidates)
    ds = load_kernel_dataset(args.data)
    groups: dict[str, tuple[list[np.ndarray], list[float]]] = {}
    for d in ds:
        if d.task != shash:
            rows, costs = groups.setdefault(d.task, ([], []))
            rows.append(d.x[:, :NUM_STORE_FEATURES].numpy())
            costs.append(d.latency_ms * 1e-3)
    other_tasks = {k: (r, np.asarray(c)) for k, (r, c) in groups.items()}
    del ds, groups  # a tune holds no dataset: its millions of objects made each full garbage collection take
    gc.collect()    # ~0.3 s, charged to whichever timed call it fell in
    xgb, xgb_retrain = make_xgb(num_threads=args.threads), make_xgb(num_threads=args.threads)
    seeded = seed_xgb(xgb, other_tasks)
    seed_xgb(xgb_retrain, other_tasks)
    # TVM retrains only once its data grew by a fifth since the last training; this one retrains every update
    xgb_retrain._inst.adaptive_training = False  # noqa: SLF001
    models = {**ours(target, args.threads), "xgb": xgb, "xgb-retrain": xgb_retrain}
    gnn = models["gnn"]
    chunked = [f"gnn@chunk{size}" for size in args.chunk_sizes.split(",") if size]
    for name in chunked:
        models[name] = ours(target, args.threads)["gnn"]
        models[name].featurizer = CandidateFeaturizer(chunk_size=int(name.removeprefix("gnn@chunk")))
    also = dict(spec.split("=", 1) for spec in args.also_gnn)
    for name, path in also.items():
        models[name] = make_cost_model("gnn", target=target, checkpoint=path,
                                       gnn_config=GNNCostModelConfig(num_threads=args.threads))
    timings: dict[str, dict[str, list[float]]] = {name: {"predict_s": [], "update_s": []} for name in models}
    timed = [*OURS, *chunked, *also, "xgb"]  # xgb-retrain predicts exactly like xgb
    for r in range(args.repeat):
        cold(models)  # these candidates were never seen
        for name in rotated(timed, r):  # each repeat in another order
            t0 = time.perf_counter()
            scores = models[name].predict(context, candidates)
            timings[name]["predict_s"].append(time.perf_counter() - t0)
            assert len(scores) == len(candidates)
    names = [name for name in models if name not in chunked]
    for r in range(args.repeat):
        cold(models)
        for name in rotated(names, r):
            t0 = time.perf_counter()
            models[name].update(context, measured, results)
            timings[name]["update_s"].append(time.perf_counter() - t0)
    median = {n: {k: statistics.median(v) if v else float("nan") for k, v in t.items()}
              for n, t in timings.items()}
    report = {"task": shash, "task_name": json.load(open(f"{args.data}/tasks.json")).get(shash, {}).get("task_name"),
              "candidates": len(candidates), "update_batch": len(measured), "xgb_seeded_with": seeded,
              "gnn_source": gnn.describe()["source"], "repeat": args.repeat, "threads": args.threads,
              "timings_s": timings,
              "median_s": median, "ratio_gnn_over_xgb": {k: median["gnn"][k] / median["xgb"][k]
                                                         for k in ("predict_s", "update_s")},
              "ratio_over_xgb": {n: {k: median[n][k] / median["xgb"][k] for k in ("predict_s", "update_s")}
                                 for n in [*OURS, *chunked, *also] if n != "gnn"},
              "also_gnn": {name: models[name].describe() for name in also},
              "ratio_gnn_over_xgb_retrain_update": median["gnn"]["update_s"] / median["xgb-retrain"]["update_s"]}
    print(f"task {report['task_name']} ({shash}); predict on {len(candidates)} candidates, update with "
          f"{len(measured)} measured; XGBModel holds {seeded} records of other tasks; GNN: {report['gnn_source']}")
    print(f"{'':22}{'predict (s)':>14}{'update (s)':>14}")
    for name in models:
        print(f"{name:22}{median[name]['predict_s']:>14.3f}{median[name]['update_s']:>14.3f}")
    ratio = report["ratio_gnn_over_xgb"]
    print(f"{'gnn/xgb':22}{ratio['predict_s']:>13.2f}x{ratio['update_s']:>13.2f}x   (median of {args.repeat}); "
          f"gnn/xgb-retrain update {median['gnn']['update_s'] / median['xgb-retrain']['update_s']:.2f}x")
    for name, r in report["ratio_over_xgb"].items():
        print(f"{name + '/xgb':22}{r['predict_s']:>13.2f}x{r['update_s']:>13.2f}x")
    if args.breakdown:
        report["breakdown_s"] = breakdown(mod, target, candidates, threads=args.threads, repeat=args.repeat)
        print(f"one cold GNN predict, in parts (median of {args.repeat}):")
        for name, secs in report["breakdown_s"].items():
            print(f"{name:34}{secs:>8.3f} s")
    if args.tune_trials:
        fresh_xgb = make_xgb(num_threads=args.threads)
        seed_xgb(fresh_xgb, other_tasks)
        in_tune = {**ours(target, args.threads), "xgb": fresh_xgb}
        tune, calls = in_tune_seconds(mod, target, in_tune, trials=args.tune_trials, record="xgb",
                                       threads=args.threads)
        for name in OURS:
            featurizer = featurized(in_tune[name])[0].featurizer  # the members share it
            tune[name]["graph_cache"] = {"hits": featurizer.hits, "misses": featurizer.misses}
        report["in_tune"] = {"trials": args.tune_trials, "seconds": tune,
                             "ratio_over_xgb": {n: {k: tune[n][k] / tune["xgb"][k] for k in ("predict_s", "update_s")}
                                                for n in OURS}}
        print(f"in a tune of {args.tune_trials} trials (DummyRunner, TVM's default evolutionary search):")
        for name, t in tune.items():
            print(f"{name:22}{t['predict_s']:>14.3f}{t['update_s']:>14.3f}   {t['predict_calls']} predict calls, "
                  f"{t['candidates_scored']} candidates scored")
        for name, r in report["in_tune"]["ratio_over_xgb"].items():
            print(f"{name + '/xgb':22}{r['predict_s']:>13.2f}x{r['update_s']:>13.2f}x   "
                  f"graph cache {tune[name]['graph_cache']}")
        replay_xgb = make_xgb(num_threads=args.threads)
        seed_xgb(replay_xgb, other_tasks)
        replay_models = {**ours(target, args.threads), "xgb": replay_xgb}
        replay = replayed_seconds(replay_models, calls)
        for name in OURS:
            featurizer = featurized(replay_models[name])[0].featurizer
            replay[name]["graph_cache"] = {"hits": featurizer.hits, "misses": featurizer.misses}
        scored = sum(len(c) for _, c, r in calls if r is None)
        report["in_tune_replayed"] = {
            "driver": "xgb", "predict_calls": sum(r is None for _, _, r in calls), "candidates_scored": scored,
            "update_calls": sum(r is not None for _, _, r in calls), "seconds": replay,
            "ratio_over_xgb": {n: {k: replay[n][k] / replay["xgb"][k] for k in ("predict_s", "update_s")}
                               for n in OURS}}
        print(f"the xgb tune's {report['in_tune_replayed']['predict_calls']} predict calls ({scored} candidates) "
              f"and {report['in_tune_replayed']['update_calls']} updates, replayed into every model:")
        for name, t in replay.items():
            print(f"{name:22}{t['predict_s']:>14.3f}{t['update_s']:>14.3f}")
        for name, r in report["in_tune_replayed"]["ratio_over_xgb"].items():
            print(f"{name + '/xgb':22}{r['predict_s']:>13.2f}x{r['update_s']:>13.2f}x   "
                  f"graph cache {replay[name]['graph_cache']}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
