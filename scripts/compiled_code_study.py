"""Is what ranks a task's schedules in the compiled code? Static features of each candidate's x86 assembly beside
PerStoreFeature and the trace, on held-out families. One run.

The label ceilings (docs/kernel_model.md) put a booster that has seen half of each test task at 0.80 pairwise on
the rows and the trace's decisions, far under the 0.94 the labels allow: the features miss something. A
candidate's LLVM output says what the compiler made of its schedule (whether loops were vectorized, spills,
shuffles). This script compiles every measured record as it was measured (`tvm.compile`, the record's own target)
and counts its instructions by class (`INSTRUCTION_CLASSES`), over the whole module and over its innermost loops
(backward jumps that enclose no other): `ASM_COLUMNS`, 43 numbers. Then it trains the tree ranker's booster
(`tvm_cost.tuning.ranker`, XGBoost ``rank:pairwise``) on:

- ``rows``: the "rows" ranker's features (PerStoreFeature summed and maxed, task globals, trace decisions);
- ``asm``: the assembly counts alone; ``rows+asm``; ``trace``: the "trace" ranker's; ``trace+asm``;
- ``shortlist``: what a tune could afford: the "trace" booster screens each task, and ``rows+asm`` orders its best
  quarter (at least 16), as `ScreenedCostModel` does, so only a shortlist is compiled.

With ``--studies gnn``, the GNN of `structure_only_study.py` (the shipped recipe's inputs: the walk and the
trace, no PerStoreFeature) is trained per ``--gnn-seeds`` on the training families, as it is (``gnn``) and with
``log1p`` of the counts appended to its globals (``gnn+asm``), and scored on the held-out ones.

Settings as in `trace_decision_study.py`: trained on the other families (``held_out``), on half of each test task
(``in_task_half``), and on both (``training_families_plus_half``). Compiling is the price: the report gives the
median build time a candidate (`tvm.compile`, emitting the assembly and counting it), against a cost model's
predict of a few ms.

Compiled features are cached per task (``CACHE/<task>.npz``: record, feats, build_s), so an interrupted run
resumes; ``--procs`` builds in parallel.

    python scripts/compiled_code_study.py --data tuning_logs/llvm-1core-xeon --cache /tmp/asm --procs 2 \
        --json docs/compiled_code_study_xeon.json
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

INSTRUCTION_CLASSES = ("n", "pfloat", "sfloat", "load", "store", "spill", "shuffle", "branch", "ymm", "int")
"""Per instruction: 1 for ``n``, then one of packed float arithmetic (``*ps``), scalar float arithmetic (``*ss``),
shuffle-like, branch or other (``int``); a memory operand adds a load or (a move to memory) a store, and a spill
when it is addressed by %rsp or %rbp; a 256-bit register adds ``ymm``."""
ASM_COLUMNS = ("loops", "innermost", "depth") + tuple(f"{part}_{c}" for part in ("all", "inner_sum", "inner_max",
                                                                                  "inner_min")
                                                      for c in INSTRUCTION_CLASSES)
LABEL = re.compile(r"^(\.LBB\d+_\d+):")
JUMP = re.compile(r"^\s+(j[a-z]+)\s+(\.LBB\d+_\d+)")
PACKED = re.compile(r"^(v?)(mul|add|sub|div|max|min|fmadd\w*|sqrt)ps\b")
SCALAR = re.compile(r"^(v?)(mul|add|sub|div|max|min|fmadd\w*|sqrt)ss\b")
SHUFFLE = re.compile(r"^v?(shuf|unpck|insert|extract|movlhps|movhlps|perm|blend|broadcast|movsldup|movshdup|pshuf)")


def classify(line: str) -> np.ndarray:
    """`INSTRUCTION_CLASSES` counts of one instruction line, [10] int."""
    op, *rest = line.split(None, 1)
    args = rest[0] if rest else ""
    out = dict.fromkeys(INSTRUCTION_CLASSES, 0)
    out["n"] = 1
    kind = ("pfloat" if PACKED.match(op) else "sfloat" if SCALAR.match(op) else "shuffle" if SHUFFLE.match(op)
            else "branch" if op.startswith("j") else "int")
    out[kind] = 1
    if "(" in args:
        to_memory = op.startswith(("mov", "vmov")) and "(" in args.split(",")[-1]
        out["store" if to_memory else "load"] = 1
        out["spill"] = int("%rsp" in args or "%rbp" in args)
    out["ymm"] = int("%ymm" in args)
    return np.array(list(out.values()))


def asm_features(asm: str) -> np.ndarray:
    """`ASM_COLUMNS` of one module's assembly: loops (backward jumps), innermost loops, deepest nesting, then the
    class counts over all instructions and summed, maxed and minned over the innermost loops' bodies, [43]."""
    lines = [s for s in asm.splitlines() if s and (LABEL.match(s) or not s.lstrip().startswith((".", "#")))]
    labels: dict[str, int] = {}
    loops = []
    for i, s in enumerate(lines):
        if (m := LABEL.match(s)):
            labels[m.group(1)] = i
        if (m := JUMP.match(s)) and labels.get(m.group(2), i) < i:
            loops.append((labels[m.group(2)], i))
    inner = [a for a in loops if not any(b != a and a[0] <= b[0] and b[1] <= a[1] for b in loops)]
    width = len(INSTRUCTION_CLASSES)

    def counts(body: Sequence[str]) -> np.ndarray:
        rows = [classify(s) for s in body if not LABEL.match(s)]
        return np.sum(rows, 0) if rows else np.zeros(width)

    per_loop = np.array([counts(lines[s + 1:e + 1]) for s, e in inner]) if inner else np.zeros((1, width))
    depth = max((sum(b[0] <= a[0] and a[1] <= b[1] for b in loops) for a in loops), default=0)
    return np.concatenate([[len(loops), len(inner), depth], counts(lines), per_loop.sum(0), per_loop.max(0),
                           per_loop.min(0)]).astype(np.float32)


def compile_task(task: tuple[str, str, Any, list[Any]]) -> tuple[str, dict[int, tuple[np.ndarray, float]], int]:
    """(task, {record: (ASM_COLUMNS, build seconds)}, records that failed to replay or build) of one task's
    records, each compiled for the task's target."""
    import tvm
    from tvm.s_tir import Schedule
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.schedule import Trace

    shash, workload, target, traces = task
    mod = ms.database.Workload.from_json([shash, workload]).mod
    tgt = tvm.target.Target(target)
    out, failed = {}, 0
    for i, trace in enumerate(traces):
        try:
            sch = Schedule(mod)
            Trace.apply_json_to_schedule(trace, sch)
            start = time.perf_counter()
            lib = tvm.compile(sch.mod, target=tgt)
            asm = lib.mod.inspect_source("asm")
            out[i] = (asm_features(asm), time.perf_counter() - start)
        except Exception:  # noqa: BLE001 - TVM raises its own error types; the record is counted, not fatal
            failed += 1
    return shash, out, failed


def featurize(data: str, cache: Path, procs: int) -> None:
    """Compile the records of every task of `data` not yet in `cache`, a task at a time, with a progress bar."""
    from multiprocessing import Pool

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, \
        TimeRemainingColumn

    from tvm_cost.data.cache import save_npz_atomic
    from tvm_cost.data.kernel_dataset import _read_raw

    cache.mkdir(parents=True, exist_ok=True)
    todo = [(t.shash, t.workload, t.target, [r[0] for r in t.records]) for t in _read_raw(Path(data)).values()
            if not (cache / f"{t.shash}.npz").exists()]
    failed = 0
    columns = (TextColumn("compiling tasks"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TimeRemainingColumn())
    with Pool(procs) as pool, Progress(*columns, console=Console(stderr=True)) as bar:
        job = bar.add_task("", total=len(todo))
        for shash, feats, bad in pool.imap_unordered(compile_task, todo):
            index = sorted(feats)
            save_npz_atomic(cache / f"{shash}.npz", {
                "record": np.asarray(index, np.int64),
                "feats": np.stack([feats[i][0] for i in index]) if index else np.zeros((0, len(ASM_COLUMNS))),
                "build_s": np.asarray([feats[i][1] for i in index], np.float64)})
            failed += bad
            bar.advance(job)
    print(f"compiled {len(todo)} tasks into {cache} ({failed} records failed to replay or build)")


def cached_features(items: Sequence[Any], cache: Path) -> tuple[np.ndarray, list[float]]:
    """`ASM_COLUMNS` of each dataset item (NaN where its record did not compile) and the build times on file."""
    by_task: dict[str, dict[int, np.ndarray]] = {}
    build_s: list[float] = []
    rows = []
    for d in items:
        if d.task not in by_task:
            path = cache / f"{d.task}.npz"
            by_task[d.task] = {}
            if path.exists():
                with np.load(path, allow_pickle=False) as z:
                    by_task[d.task] = dict(zip(z["record"].tolist(), z["feats"], strict=True))
                    build_s.extend(z["build_s"].tolist() if "build_s" in z.files else [])
        rows.append(by_task[d.task].get(d.record, np.full(len(ASM_COLUMNS), np.nan, np.float32)))
    return np.stack(rows).astype(np.float32), build_s


def gnn_study(ds: Any, asm: np.ndarray, train: np.ndarray, test: np.ndarray, *, variants: Sequence[str],
              seeds: Sequence[int]) -> dict[str, Any]:
    """Ranking metrics on `test` of the walk-alone GNN trained on `train`, per variant ("gnn", "gnn+asm") and
    seed, and their mean over seeds."""
    import torch

    from tvm_cost.data.kernel_dataset import with_globals, without_store_features
    from tvm_cost.tuning.offline import RANKING_METRICS, predict_log_ms, ranking_metrics, study_configs, train_gnn

    torch.set_num_threads(1)
    walk = {int(i): without_store_features(ds[int(i)]) for i in np.concatenate([train, test])}
    views = {"gnn": walk, "gnn+asm": {i: with_globals(d, np.log1p(asm[i])) for i, d in walk.items()}}
    latency = ds.latency_ms[test]
    group = np.array([int(ds[int(i)].group) for i in test])
    out: dict[str, Any] = {}
    for variant in variants:
        fit, score = [views[variant][int(i)] for i in train], [views[variant][int(i)] for i in test]
        for seed in seeds:
            model_config, train_config = study_configs(int(fit[0].u.shape[1]), seed=seed)
            start = time.perf_counter()
            model, _ = train_gnn(fit, model_config=model_config, train_config=train_config)
            out[f"held_out/{variant}/{seed}"] = {**ranking_metrics(latency, -predict_log_ms(model, score), group),
                                                 "train_s": time.perf_counter() - start}
            print(variant, seed, {k: round(v, 3) for k, v in out[f"held_out/{variant}/{seed}"].items()}, flush=True)
        out[f"held_out/{variant}"] = {m: float(np.mean([out[f"held_out/{variant}/{s}"][m] for s in seeds]))
                                      for m in RANKING_METRICS}
    return out


def booster_study(ds: Any, asm: np.ndarray, settings: dict[str, tuple[np.ndarray, np.ndarray]], *,
                  seeds: Sequence[int]) -> dict[str, Any]:
    """Ranking metrics of the booster on each feature set (and the shortlist) in each setting, keyed
    ``setting/feature set``."""
    from tvm_cost.tuning.offline import RANKING_METRICS, ranking_metrics
    from tvm_cost.tuning.ranker import booster_scores, ranker_features
    from tvm_cost.tuning.screen import screened_scores

    latency, group = ds.latency_ms, np.array([int(d.group) for d in ds])
    rows, trace = ranker_features(list(ds)), ranker_features(list(ds), "trace")
    feature_sets = {"rows": rows, "asm": asm, "rows+asm": np.hstack([rows, asm]), "trace": trace,
                    "trace+asm": np.hstack([trace, asm])}
    out: dict[str, Any] = {}
    for setting, (fit, score) in settings.items():
        scores = {name: booster_scores(m[fit], latency[fit], group[fit], m[score], seeds=seeds)
                  for name, m in feature_sets.items()}
        scores["shortlist"] = screened_scores(scores["trace"], scores["rows+asm"], group[score])
        for name, s in scores.items():
            out[f"{setting}/{name}"] = ranking_metrics(latency[score], s, group[score])
            print(f"{setting:28s} {name:10s}", " ".join(f"{m} {out[f'{setting}/{name}'][m]:.3f}"
                                                        for m in RANKING_METRICS), flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--cache", required=True, help="folder of the compiled features, one .npz per task")
    parser.add_argument("--procs", type=int, default=1)
    parser.add_argument("--test-families", default="gpt,mlp_mixer")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--studies", default="boosters", help="boosters, gnn or both (comma-separated)")
    parser.add_argument("--gnn-variants", default="gnn,gnn+asm")
    parser.add_argument("--gnn-seeds", default="0,1,2")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    if set(args.studies.split(",")) - {"boosters", "gnn"} or set(args.gnn_variants.split(",")) - {"gnn", "gnn+asm"}:
        parser.error("--studies takes boosters and gnn, --gnn-variants gnn and gnn+asm")
    from tvm_cost.tuning.offline import bound_settings, family_split, load_kernel_dataset, task_families

    cache = Path(args.cache)
    featurize(args.data, cache, args.procs)
    ds = load_kernel_dataset(args.data)
    asm, build_s = cached_features(list(ds), cache)
    compiled = ~np.isnan(asm).any(1)
    train, test = family_split(ds.groups, task_families(args.data), args.test_families.split(","))
    train, test = train[compiled[train]], test[compiled[test]]
    seeds = [int(s) for s in args.seeds.split(",")]
    report: dict[str, Any] = {"data": args.data, "test_families": args.test_families, "records": len(ds),
                              "compiled": int(compiled.sum()), "asm_columns": list(ASM_COLUMNS), "seeds": seeds,
                              "build_ms_median": 1e3 * statistics.median(build_s) if build_s else None,
                              "build_ms_timed": len(build_s)}
    print(f"{compiled.sum()} of {len(ds)} records compiled; median build "
          f"{report['build_ms_median'] or float('nan'):.0f} ms a candidate ({len(build_s)} timed)")
    studies = args.studies.split(",")
    if "gnn" in studies:
        report |= gnn_study(ds, asm, train, test, variants=args.gnn_variants.split(","),
                            seeds=[int(s) for s in args.gnn_seeds.split(",")])
    if "boosters" in studies:
        group = np.array([int(d.group) for d in ds])
        report |= booster_study(ds, asm, bound_settings(train, test, group), seeds=seeds)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
