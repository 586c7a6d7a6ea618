"""Build and time a batch of MetaSchedule candidates; every candidate gets an outcome, failures included."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import tvm
from tvm.s_tir.meta_schedule.builder import BuilderInput
from tvm.s_tir.meta_schedule.runner import RunnerInput, RunnerResult

from tvm_cost.collect.fast import device_type, remove_artifact

log = logging.getLogger(__name__)

Stage = Literal["ok", "built", "build", "run"]


@dataclass(frozen=True)
class Outcome:
    """What happened to one candidate.

    Attributes:
        stage: "ok" (timed), "built" (build-only mode), "build" (build failed) or "run" (run failed).
        run_secs: Seconds per repeat when timed, else None.
        error: The error message of a failure, else None.
    """

    stage: Stage
    run_secs: list[float] | None = None
    error: str | None = None

    @property
    def failed(self) -> bool:
        return self.stage in ("build", "run")

    def runner_result(self) -> RunnerResult:
        """The outcome as the `RunnerResult` search strategies and cost models expect."""
        if self.run_secs is not None:
            return RunnerResult(self.run_secs, None)
        return RunnerResult(None, self.error or f"not measured ({self.stage})")


def _secs(result: RunnerResult) -> list[float] | None:
    if result.error_msg is not None or not result.run_secs:
        return None
    return [float(s) for s in result.run_secs]


def measure(
    candidates: Sequence[Any],
    target: tvm.target.Target,
    builder: Any,
    runner: Any | None,
) -> list[Outcome]:
    """Build `candidates` (MeasureCandidates) and, with a runner, time those that built.

    Args:
        candidates: MetaSchedule `MeasureCandidate`s (`.sch`, `.args_info`).
        target: The target to build for.
        builder: A MetaSchedule builder.
        runner: A MetaSchedule runner; None builds only.

    Returns:
        One outcome per candidate, in order. Build artifacts are deleted.
    """
    built = builder.build([BuilderInput(c.sch.mod, target) for c in candidates])
    outcomes: list[Outcome | None] = [None] * len(candidates)
    to_run = []
    for i, res in enumerate(built):
        if res.error_msg is not None:
            outcomes[i] = Outcome("build", error=str(res.error_msg))
        elif runner is None:
            outcomes[i] = Outcome("built")
        else:
            to_run.append(i)
    try:
        if runner is not None and to_run:
            device = device_type(target)
            inputs = [RunnerInput(built[i].artifact_path, device, candidates[i].args_info) for i in to_run]
            futures = runner.run(inputs)
            for i, fut in zip(to_run, futures):
                result = fut.result()
                secs = _secs(result)
                outcomes[i] = Outcome("ok", secs) if secs else Outcome("run", error=str(result.error_msg))
    finally:
        for res in built:
            remove_artifact(res.artifact_path)
    for out in outcomes:
        if out is not None and out.failed:
            log.debug("candidate failed at %s: %s", out.stage, (out.error or "").strip().splitlines()[-1:])
    return [o if o is not None else Outcome("run", error="no result") for o in outcomes]
