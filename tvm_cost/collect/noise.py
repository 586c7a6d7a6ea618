"""Measurement noise: re-time a random sample of records several times and write their spread.

The spread of each record (median, relative standard deviation, (max - min) / median over the re-timings) says
how much of the differences between candidates is noise; the Spearman correlation between the stored and the
re-timed latencies, within each workload, says whether the stored ranking can be trusted.
"""

from __future__ import annotations

import logging
import random
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

import tvm
from tvm.s_tir.meta_schedule.builder import BuilderInput
from tvm.s_tir.meta_schedule.database import TuningRecord, Workload
from tvm.s_tir.meta_schedule.runner import EvaluatorConfig, RunnerInput

from tvm_cost.atomic import atomic_write_json
from tvm_cost.collect import fast
from tvm_cost.collect.records import Record, load_records, resolve
from tvm_cost.collect.store import DB_FILES

log = logging.getLogger(__name__)


def spearman(x: list[float], y: list[float]) -> float | None:
    """Spearman rank correlation, None with fewer than 3 points or no variation."""
    if len(x) < 3:
        return None
    from scipy.stats import spearmanr  # pylint: disable=import-outside-toplevel

    rho = spearmanr(x, y).statistic
    return None if rho != rho else float(rho)  # NaN when one side is constant


def spread(samples: list[float]) -> dict[str, float]:
    """median, mean, rel_std (std / mean) and range_over_median of `samples`."""
    med = statistics.median(samples)
    mean = statistics.fmean(samples)
    std = statistics.pstdev(samples) if len(samples) > 1 else 0.0
    return {"median": med, "mean": mean, "rel_std": std / mean if mean else 0.0,
            "range_over_median": (max(samples) - min(samples)) / med if med else 0.0}


def _candidate(rec: Record) -> tuple[Any, tvm.target.Target]:
    workload = Workload.from_json([rec.workload_shash, rec.workload])
    tuning = TuningRecord.from_json([rec.trace, rec.run_secs, rec.target, rec.args_info], workload)
    return tuning.as_measure_candidate(), tuning.target


def retime(records: list[Record], *, times: int, builder: Any, runner: Any) -> list[list[float] | None]:
    """Build each record once and time them all `times` times, round-robin (a drift of the machine touches every
    record alike); per record the mean seconds of each timing."""
    cands = [_candidate(r) for r in records]
    built = builder.build([BuilderInput(c.sch.mod, t) for c, t in cands])
    inputs: list[RunnerInput | None] = []
    for (cand, target), res in zip(cands, built):
        if res.error_msg is not None:
            log.warning("re-measure: a stored record no longer builds: %s", str(res.error_msg).splitlines()[-1:])
        inputs.append(None if res.error_msg is not None
                      else RunnerInput(res.artifact_path, fast.device_type(target), cand.args_info))
    samples: list[list[float]] = [[] for _ in records]
    try:
        for _ in range(times):
            for inp, out in zip(inputs, samples):
                if inp is None:
                    continue
                result = runner.run([inp])[0].result()
                if result.error_msg is None and result.run_secs:
                    out.append(statistics.fmean(float(s) for s in result.run_secs))
    finally:
        for res in built:
            fast.remove_artifact(res.artifact_path)
    return [s or None for s in samples]


def remeasure(
    db_dir: str | Path,
    *,
    k: int = 16,
    seed: int = 0,
    times: int = 5,
    evaluator: EvaluatorConfig | None = None,
    out_path: str | Path | None = None,
    builder: Any = None,
    runner: Any = None,
) -> dict[str, Any]:
    """Re-time `k` random measured records of the database in `db_dir` `times` times each.

    Args:
        db_dir: A target folder (``database_tuning_record.json[.gz]`` inside).
        k: Records to sample (fewer if the database has fewer).
        seed: Sampling seed.
        times: Timings per record.
        evaluator: Evaluator of each timing; defaults to `fast.FAST_EVALUATOR` (how records are collected).
        out_path: Where to write the JSON; defaults to ``db_dir/noise.json``.
        builder: A MetaSchedule builder; defaults to a `FastBuilder` (closed afterwards).
        runner: A MetaSchedule runner; defaults to a `LocalRunner` with `evaluator`.

    Returns:
        ``{"settings", "records": [...], "summary"}`` as written.
    """
    db_dir = Path(db_dir)
    path = db_dir / DB_FILES["ok"][1]
    records = load_records(path) if resolve(path).exists() else iter(())
    measured = [r for r in records if r.run_secs and r.workload]
    rng = random.Random(seed)
    sample = rng.sample(measured, min(k, len(measured)))
    evaluator = evaluator or fast.FAST_EVALUATOR
    if not sample:
        log.warning("%s: no measured records to re-measure", db_dir)
    own_builder = builder is None
    builder = builder or fast.make_builder("fast")
    runner = runner or fast.make_runner(evaluator=evaluator)
    try:
        timings = retime(sample, times=times, builder=builder, runner=runner)
    finally:
        if own_builder:
            builder.close()
    rows = []
    for rec, samples in zip(sample, timings):
        row: dict[str, Any] = {"workload": rec.workload_shash, "stored_secs": statistics.fmean(rec.run_secs or [0]),
                               "samples_secs": samples}
        if samples:
            row.update(spread(samples))
        rows.append(row)
    result = {"settings": {"k": k, "seed": seed, "times": times, "evaluator": evaluator._asdict()},
              "records": rows, "summary": summarize(rows)}
    atomic_write_json(Path(out_path) if out_path else db_dir / "noise.json", result)
    return result


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Median spreads, drift of the stored time from the re-measured median, and Spearman correlations
    (pooled, and within workloads with three or more re-measured records) of re-measured rows."""
    good = [r for r in rows if r.get("samples_secs")]
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in good:
        groups[row["workload"]].append(row)
    within = {w: spearman([r["stored_secs"] for r in g], [r["median"] for r in g])
              for w, g in groups.items() if len(g) > 2}
    drift = [abs(r["median"] / r["stored_secs"] - 1) for r in good if r["stored_secs"] > 0]
    within_ok = [v for v in within.values() if v is not None]
    return {
        "records": len(rows),
        "remeasured": len(good),
        "median_rel_std": statistics.median([r["rel_std"] for r in good]) if good else None,
        "median_range_over_median": statistics.median([r["range_over_median"] for r in good]) if good else None,
        "median_abs_drift": statistics.median(drift) if drift else None,
        "spearman_pooled": spearman([r["stored_secs"] for r in good], [r["median"] for r in good]),
        "spearman_within_workload": within,
        "spearman_within_mean": statistics.fmean(within_ok) if within_ok else None,
    }
