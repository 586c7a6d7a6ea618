"""The collection loop: per task, random design-space samples, then XGBoost-guided evolutionary search.

MetaSchedule's task scheduler only keeps what its callbacks commit and hides failures behind run_secs of 1e10.
This loop drives a `TuneContext` by hand instead (the same calls the scheduler makes: `pre_tuning`,
`generate_measure_candidates`, `notify_runner_results`), so every candidate lands in the store, measured or
failed, batch by batch, and a run killed at any point resumes where its last checkpoint left it.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import tvm
from tvm.s_tir import meta_schedule as ms
from tvm.s_tir.meta_schedule.database import TuningRecord

from tvm_cost.collect.measure import Outcome, measure
from tvm_cost.collect.store import Kind, Phase, RecordStore, trace_key
from tvm_cost.collect.tasks import CollectTask

log = logging.getLogger(__name__)

ProgressFn = Callable[[dict[str, Any]], None]
#: A phase whose search finds nothing new this many passes in a row is done (small design spaces run dry).
MAX_DRY_PASSES = 3


@dataclass(frozen=True)
class CollectConfig:
    """How many candidates to measure per task and how to search for them.

    Attributes:
        trials_per_task: Records (measured + failed) to collect per task.
        random_fraction: Share of them sampled at random from the design space (`ReplayTrace`); the rest come
            from `EvolutionarySearch` guided by an `XGBModel` trained on everything measured so far.
        batch_size: Candidates per build-and-run batch (one checkpoint per batch).
        seed: Base seed; each (task, phase, resume point) derives its own.
        population_size: Evolutionary-search population (MetaSchedule's default is 512).
        xgb_warmup_samples: Records before the XGBoost model starts steering (MetaSchedule's default is 100).
        search_threads: Threads for candidate generation; defaults to the CPU count.
        measure: False builds the candidates and stops before running them (no records are written).
        time_budget_s: Stop before a batch that would not finish within this many seconds of the start.
    """

    trials_per_task: int = 64
    random_fraction: float = 0.5
    batch_size: int = 32
    seed: int = 0
    population_size: int = 128
    xgb_warmup_samples: int = 32
    search_threads: int | None = None
    measure: bool = True
    time_budget_s: float | None = None

    def phase_targets(self) -> dict[Phase, int]:
        """Records per phase for one task."""
        if not 0.0 <= self.random_fraction <= 1.0:
            raise ValueError(f"random_fraction must be in [0, 1], got {self.random_fraction}")
        n_random = round(self.trials_per_task * self.random_fraction)
        return {"random": n_random, "evolutionary": self.trials_per_task - n_random}

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _rand_state(*parts: object) -> int:
    digest = hashlib.sha256(repr(parts).encode()).digest()
    return 1 + int.from_bytes(digest[:4], "little") % (2**31 - 2)


def error_kind(outcome: Outcome) -> str:
    """A short label of a failure for the summary: its stage and the last line of its message."""
    lines = [line.strip() for line in (outcome.error or "").splitlines() if line.strip()]
    if any("Timeout" in line for line in lines[:2]):
        return f"{outcome.stage}: timeout"
    return f"{outcome.stage}: {(lines[-1] if lines else 'unknown')[:100]}"


class Collector:
    """Runs the loop over tasks against one store; see `collect`."""

    def __init__(self, *, target: tvm.target.Target, store: RecordStore | None, builder: Any, runner: Any | None,
                 config: CollectConfig, progress: ProgressFn | None = None) -> None:
        self.target, self.store, self.builder, self.runner = target, store, builder, runner
        self.config = config
        self.progress = progress
        self.threads = config.search_threads or os.cpu_count() or 1
        self.cost_model = ms.cost_model.XGBModel(
            num_warmup_samples=config.xgb_warmup_samples, num_tuning_cores=self.threads)
        self.fed: dict[str, int] = {}  # shash -> records given to the cost model in this process
        self.stats = {"records": 0, "measured": 0, "failed": 0, "built": 0, "build_errors": 0, "run_errors": 0,
                      "duplicates": 0}
        self.errors: dict[str, int] = {}  # short error message -> count
        self.start = time.monotonic()
        self.batch_secs: list[float] = []
        self.stopped = "done"
        self.total_target = 0
        self.total_done = 0

    # -- budget -------------------------------------------------------------------------------------------------
    def _out_of_time(self) -> bool:
        budget = self.config.time_budget_s
        if budget is None:
            return False
        recent = self.batch_secs[-5:]
        estimate = sum(recent) / len(recent) if recent else 0.0
        if time.monotonic() - self.start + estimate > budget:
            self.stopped = "time_budget"
            return True
        return False

    def _done(self, task: CollectTask, phase: Phase, target: int) -> int:
        """Records still wanted for (task, phase); 0 when complete or exhausted."""
        if self.store is None:
            return target
        prog = self.store.progress(task.shash)
        if phase in prog.exhausted:
            return 0
        return max(0, target - getattr(prog, phase))

    # -- the loop -----------------------------------------------------------------------------------------------
    def run(self, tasks: list[CollectTask]) -> dict[str, Any]:
        targets = self.config.phase_targets()
        self.total_target = sum(self._done(t, p, n) for t in tasks for p, n in targets.items())
        for index, task in enumerate(tasks):
            for phase, n in targets.items():
                dry = 0  # passes in a row that found nothing new
                while (wanted := self._done(task, phase, n)) > 0:
                    if self._out_of_time():
                        return self.summary(len(tasks))
                    new = self._run_pass(task, index, len(tasks), phase, wanted, dry)
                    if self.stopped != "done":
                        return self.summary(len(tasks))
                    if self.store is None or not self.config.measure:  # nothing counts progress: one pass
                        break
                    dry = dry + 1 if new == 0 else 0
                    if dry >= MAX_DRY_PASSES:
                        self.store.mark_exhausted(task.shash, phase)
                        log.info("%s: %s search ran dry", task.name, phase)
        return self.summary(len(tasks))

    def _context(self, task: CollectTask, phase: Phase, done: int, attempt: int) -> ms.TuneContext:
        if phase == "random":
            strategy: Any = ms.search_strategy.ReplayTrace()
        else:
            pop = self.config.population_size
            strategy = ms.search_strategy.EvolutionarySearch(
                population_size=pop, init_min_unmeasured=max(1, min(50, pop // 4)), genetic_num_iters=2)
        return ms.TuneContext(
            task.mod, target=self.target, space_generator=ms.space_generator.PostOrderApply(),
            search_strategy=strategy, task_name=task.name, num_threads=self.threads,
            rand_state=_rand_state(self.config.seed, task.shash, phase, done, attempt))

    def _seed(self, ctx: ms.TuneContext, task: CollectTask, database: Any) -> None:
        """Give the evolutionary search and the cost model this task's records (earlier runs, random phase)."""
        if self.store is None:
            return
        lines = self.store.ok_records(task.shash)
        workload = database.commit_workload(task.mod)
        records = [TuningRecord.from_json(line[1], workload) for line in lines]
        for rec in records:
            database.commit_tuning_record(rec)
        unfed = records[: max(0, len(records) - self.fed.get(task.shash, 0))]
        if unfed:
            cands = [r.as_measure_candidate() for r in unfed]
            results = [ms.runner.RunnerResult([float(s) for s in r.run_secs], None) for r in unfed]
            self.cost_model.update(ctx, cands, results)
            self.fed[task.shash] = len(records)

    def _run_pass(self, task: CollectTask, index: int, n_tasks: int, phase: Phase, wanted: int, attempt: int) -> int:
        """One search pass of up to `wanted` trials; returns the number of new records."""
        done = 0 if self.store is None else getattr(self.store.progress(task.shash), phase)
        ctx = self._context(task, phase, done, attempt)
        database = ms.database.MemoryDatabase()
        if phase == "evolutionary":
            self._seed(ctx, task, database)
        workload = database.commit_workload(task.mod)
        # Ask for a few more than wanted: candidates measured before are dropped (`_batch`), and a fresh
        # evolutionary search readily proposes the best of them again.
        slack = max(2, wanted // 4)
        ctx.pre_tuning(wanted + slack, self.config.batch_size, ctx.generate_design_space(), database,
                       self.cost_model)
        new = 0
        try:
            while new < wanted:
                if self._out_of_time():
                    break
                t0 = time.monotonic()
                cands = ctx.generate_measure_candidates()
                if cands is None:
                    break
                new += self._batch(ctx, task, phase, workload, database, list(cands), wanted - new)
                self.batch_secs.append(time.monotonic() - t0)
                self._report(task, index, n_tasks, phase)
        finally:
            ctx.post_tuning()
        return new

    def _batch(self, ctx: ms.TuneContext, task: CollectTask, phase: Phase, workload: Any, database: Any,
               cands: list[Any], limit: int) -> int:
        """Measure the new candidates of a batch (at most `limit`), commit them; returns the records written."""
        jsons = [TuningRecord(c.sch.trace, workload, None, self.target, c.args_info).as_json() for c in cands]
        fresh: list[int] = []
        seen, dups = set(), 0
        for i, key in enumerate(trace_key(j[0]) for j in jsons):
            if key in seen or (self.store is not None and self.store.seen(task.shash, key)):
                dups += 1
            elif len(fresh) < limit:
                fresh.append(i)
            seen.add(key)
        outcomes = [Outcome("run", error="not measured (duplicate or beyond the phase's count)")] * len(cands)
        for i, out in zip(fresh, measure([cands[i] for i in fresh], self.target, self.builder, self.runner)):
            outcomes[i] = out
        ctx.notify_runner_results(cands, [o.runner_result() for o in outcomes])
        counts = {"build_errors": sum(outcomes[i].stage == "build" for i in fresh),
                  "run_errors": sum(outcomes[i].stage == "run" for i in fresh), "duplicates": dups}
        self._count([outcomes[i] for i in fresh], counts)
        if not self.config.measure:
            return len(fresh)
        ok = [i for i in fresh if outcomes[i].stage == "ok"]
        records: list[tuple[Kind, Any]] = []
        for i in fresh:
            jsons[i][1] = outcomes[i].run_secs
            records.append(("ok" if i in ok else "failed", jsons[i]))
        if self.store is not None:
            self.store.commit(task.shash, phase, task.workload, records, **counts)
        for i in ok:
            database.commit_tuning_record(
                TuningRecord(cands[i].sch.trace, workload, outcomes[i].run_secs, self.target, cands[i].args_info))
        if ok and phase == "evolutionary":  # random-phase records reach the model in `_seed`, in one training
            self.cost_model.update(ctx, [cands[i] for i in ok], [outcomes[i].runner_result() for i in ok])
            self.fed[task.shash] = self.fed.get(task.shash, 0) + len(ok)
        self.stats["records"] += len(records)
        self.stats["measured"] += len(ok)
        self.stats["failed"] += len(records) - len(ok)
        self.total_done += len(records)
        return len(records)

    def _count(self, outcomes: list[Outcome], counts: dict[str, int]) -> None:
        for name, value in counts.items():
            self.stats[name] += value
        self.stats["built"] += sum(o.stage in ("ok", "built", "run") for o in outcomes)
        for out in outcomes:
            if out.failed:
                kind = error_kind(out)
                self.errors[kind] = self.errors.get(kind, 0) + 1

    def _report(self, task: CollectTask, index: int, n_tasks: int, phase: str) -> None:
        if self.progress is None:
            return
        elapsed = time.monotonic() - self.start
        self.progress({"task": task.name, "task_index": index, "num_tasks": n_tasks, "phase": phase,
                       "done": self.total_done if self.config.measure else self.stats["built"],
                       "total": self.total_target, "elapsed_s": elapsed, **self.stats})

    def summary(self, n_tasks: int) -> dict[str, Any]:
        """Counters of this run: records, measured, failed, tasks, elapsed_s, records_per_s, stopped."""
        elapsed = time.monotonic() - self.start
        rate = self.stats["records"] / elapsed if elapsed > 0 else math.nan
        top = dict(sorted(self.errors.items(), key=lambda kv: -kv[1])[:5])
        return {**self.stats, "tasks": n_tasks, "elapsed_s": round(elapsed, 2), "records_per_s": round(rate, 3),
                "stopped": self.stopped, "top_errors": top}


def collect(
    tasks: list[CollectTask],
    *,
    target: tvm.target.Target,
    store: RecordStore | None,
    builder: Any,
    runner: Any | None,
    config: CollectConfig = CollectConfig(),
    progress: ProgressFn | None = None,
) -> dict[str, Any]:
    """Measure candidates for `tasks` and append every one to `store` (an opened `RecordStore`).

    With ``config.measure=False`` (or no runner) candidates are built and dropped; `store` may be None.

    Returns:
        The summary dict (records, measured, failed, build_errors, run_errors, duplicates, built, tasks,
        elapsed_s, records_per_s, stopped).
    """
    runner = runner if config.measure else None
    if config.measure and runner is None:
        raise ValueError("measure=True needs a runner")
    collector = Collector(target=target, store=store, builder=builder, runner=runner, config=config,
                          progress=progress)
    return collector.run(tasks)
