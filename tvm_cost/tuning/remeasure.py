"""Re-measure the best schedule of each bench run, every kind of a task and seed round-robin on one machine.

A run's best latency is the minimum of noisy measurements, so it is biased low, and the more so the more
near-best candidates its search measures (the winner's curse). Timing every kind's best schedule again, side by
side, says whether a gap between cost models at the end of a tune is in the schedules they found or in the noise
of the one measurement that picked each. Needs a bench run with ``--keep-records`` (`run_one`'s `records_dir`).
Groups are appended to a JSON-lines file as they finish, so an interrupted re-measure resumes.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Sequence
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np

from tvm_cost.collect.records import Record, load_records
from tvm_cost.errors import TvmCostError
from tvm_cost.tuning.bench import REFERENCE_KINDS, BenchRun, record_folder


def best_record(folder: str | Path, max_trials: int) -> Record | None:
    """The fastest of the first `max_trials` records of a run's database (mean over repeats); None if none ran."""
    path = Path(folder) / "database_tuning_record.json"
    if not path.exists():
        raise TvmCostError(f"{folder}: no database_tuning_record.json (was the bench run with --keep-records?)")
    measured = [r for r in islice(load_records(path), max_trials) if r.run_secs]
    return min(measured, key=lambda r: statistics.fmean(r.run_secs or [])) if measured else None


def remeasure_runs(runs: Sequence[BenchRun], records_dir: str | Path, *, times: int,
                   measurers: Callable[[], tuple[Any, Any]], store: str | Path,
                   on_group: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """Re-time each run's best schedule `times` times, the kinds of one (task, seed) round-robin.

    Rows ``{task, task_name, seed, kind, tuned_ms, remeasured_ms, samples_ms}`` (remeasured_ms: the median of
    the samples) are appended to `store` one (task, seed) group at a time; groups already there are kept.
    `measurers()` gives the ``(builder, runner)`` to time with; it is called once, at the first group not stored
    (so a finished re-measure starts no build pool). `on_group(label)` is called after each group, stored or new.
    """
    from tvm_cost.collect.noise import retime

    store = Path(store)
    rows = []
    for lineno, line in enumerate(store.read_text().splitlines() if store.exists() else [], 1):
        try:
            rows.append(json.loads(line))
        except ValueError as err:
            raise TvmCostError(f"{store}:{lineno}: not a re-measure row ({err})") from None
    done = {(r["task"], r["seed"]) for r in rows}
    groups: dict[tuple[str, int], list[BenchRun]] = {}
    for run in runs:
        groups.setdefault((run.task, run.seed), []).append(run)
    builder_runner: tuple[Any, Any] | None = None
    for (task, seed), group in groups.items():
        if (task, seed) in done:
            if on_group:
                on_group(f"{group[0].task_name} seed {seed}: stored")
            continue
        found = [(run, best_record(Path(records_dir) / record_folder(task, run.kind, seed), run.max_trials))
                 for run in group]
        best = [(run, rec) for run, rec in found if rec is not None]
        builder_runner = builder_runner or measurers()
        timings = retime([rec for _, rec in best], times=times, builder=builder_runner[0], runner=builder_runner[1])
        new = [{"task": task, "task_name": run.task_name, "seed": seed, "kind": run.kind,
                "tuned_ms": 1e3 * statistics.fmean(rec.run_secs or []),
                "remeasured_ms": 1e3 * statistics.median(samples) if samples else None,
                "samples_ms": [1e3 * s for s in samples or []]} for (run, rec), samples in zip(best, timings)]
        with open(store, "a", encoding="utf-8") as f:
            f.writelines(json.dumps(row) + "\n" for row in new)
        rows += new
        if on_group:
            on_group(f"{group[0].task_name} seed {seed}")
    return rows


def summarize_remeasured(rows: Sequence[dict[str, Any]], *,
                         reference: Sequence[str] = REFERENCE_KINDS) -> dict[str, Any]:
    """Per kind, the geometric mean over tasks of (median over seeds of its best) / the better reference kind's,
    once with the latencies the tunes measured and once re-measured; and the median tuned / re-measured ratio of
    a run's best (below 1: the tune's measurement of its best was optimistic); and, run by run ("paired"), the
    geometric mean of a kind's re-measured best over the better reference kind's of the same task and seed, with
    the number of runs where it is faster."""
    kinds = list(dict.fromkeys(r["kind"] for r in rows))
    ratios: dict[str, dict[str, list[float]]] = {k: {"tuned": [], "remeasured": []} for k in kinds}
    for task in dict.fromkeys(r["task"] for r in rows):
        for col in ("tuned", "remeasured"):
            med = {k: float(np.median(vals)) for k in kinds
                   if (vals := [r[f"{col}_ms"] for r in rows if r["task"] == task and r["kind"] == k
                                and r[f"{col}_ms"] is not None])}
            refs = [med[k] for k in reference if k in med]
            if not refs:
                continue
            for k, v in med.items():
                ratios[k][col].append(v / min(refs))
    geo = {k: {col: float(np.exp(np.mean(np.log(v)))) if v else None for col, v in cols.items()}
           for k, cols in ratios.items()}
    optimism: dict[str, float | None] = {}
    for k in kinds:
        pairs = [r["tuned_ms"] / r["remeasured_ms"] for r in rows if r["kind"] == k and r["remeasured_ms"]]
        optimism[k] = float(np.median(pairs)) if pairs else None
    groups: dict[tuple[str, int], dict[str, float]] = {}
    for r in rows:
        if r["remeasured_ms"]:
            groups.setdefault((r["task"], r["seed"]), {})[r["kind"]] = r["remeasured_ms"]
    paired: dict[str, dict[str, Any]] = {}
    for k in kinds:
        if k in reference:
            continue
        per_run = [g[k] / min(g[ref] for ref in reference if ref in g) for g in groups.values()
                   if k in g and any(ref in g for ref in reference)]
        paired[k] = {"remeasured_geomean": float(np.exp(np.mean(np.log(per_run)))) if per_run else None,
                     "faster": f"{sum(v < 1 for v in per_run)}/{len(per_run)}"}
    return {"tasks": len({r["task"] for r in rows}), "seeds": sorted({r["seed"] for r in rows}),
            "paired": paired,
            "best_vs_reference_geomean": geo, "tuned_over_remeasured_median": optimism}
