"""`EnsembleCostModel`: augment MetaSchedule's `XGBModel` with the GNN instead of replacing it.

**Rule.** Each call, both models' scores are turned into percentile ranks within the call (``rank / n``, best
= 1, ties averaged), so their scales never matter (XGB's can be negative, the GNN's are ratios); the score is the
weighted mean ``(w_gnn * r_gnn + w_xgb * r_xgb) / (w_gnn + w_xgb)``, in (0, 1]. ``w_gnn = gnn_weight``.
The default XGB member is `XGBModel` trusting its fit after `XGB_WARMUP` (16) samples instead of TVM's 100: on
held-out tasks that ensemble was the best cost model at 16-64 trials in three bench runs, and level with XGBModel
or ahead at 128 (docs/kernel_model.md).
``w_xgb`` is 0 while the XGB model is cold -- `XGBModel` draws uniform random scores until it holds
`num_warmup_samples` measurements (16 for the default member, 100 as TVM ships it) and a booster -- then
``xgb_weight * min(1, n / (2 * warmup))`` as its data grow (half weight at warm-up, full weight from twice that).
While ``w_xgb`` is 0 the XGB model is not asked to predict at all (it would only draw noise and extract features
for nothing). Both models see every update.

**Weighting by accuracy** (``weighting="accuracy"``). Once XGB is warm, each `update` first scores the round's
measured candidates with both members, before either learns from them, and counts the pairs (latencies more
than `TIE_TOL` apart) each orders correctly. Over the last `window` such rounds, a member's weight is its full
weight times its skill, ``max(0, (correct + 1) / (pairs + 2) - 0.5) + SKILL_FLOOR``: the member that has been
ranking this task's newest candidates better leads, whichever it is. Candidates a converging search measures
late are all near its best, and a model that ranks a task's spread of schedules well can still order those
badly (docs/kernel_model.md, the late-round study).

**Handing off** (``weighting="handoff"``, ``handoff=(start, end)``). The GNN alone until the task has `start`
measurements, XGB alone from `end`, and between them the GNN's weight falls and XGB's rises linearly with the
count (per task: in a tune of many tasks each one hands off on its own measurements). On held-out tasks the
pretrained GNN ranks a tune's next candidates better than XGBModel fitted on 32 of them, level at 64 and worse
at 96 (the late-round study), so each model leads where it ranks better. Once the GNN's weight for a task is 0
it is neither asked to predict nor updated on that task.
"""

from __future__ import annotations

import json
import logging
from collections import deque
from pathlib import Path
from typing import Any

import numpy as np
from tvm.ir.utils import derived_object
from tvm.s_tir.meta_schedule.cost_model import PyCostModel

from tvm_cost.errors import TvmCostError
from tvm_cost.tuning.cost_model import GNNCostModel
from tvm_cost.tuning.replay import measured_latency_ms, task_key
from tvm_cost.tuning.scoring import python_side_save_load
from tvm_cost.tuning.xgb import is_xgb, load_xgb, make_xgb, save_xgb, xgb_is_warm

log = logging.getLogger(__name__)

STATE_FORMAT = "tvm-cost-ensemble-cost-model"
XGB_WARMUP = 16
"""Samples before the default XGB member predicts (TVM's `XGBModel` default is 100)."""
WEIGHTINGS = ("schedule", "accuracy", "handoff")
HANDOFF = (32, 96)
"""Default ``(start, end)`` measurement counts of the "handoff" weighting (the late-round study's crossover)."""
TIE_TOL = 0.02
"""Relative latency gap below which a measured pair does not count when scoring the members (noise)."""
SKILL_FLOOR = 0.02
"""Skill a member keeps however badly it ranked lately, so it can earn its weight back."""


def percentile_ranks(scores: np.ndarray) -> np.ndarray:
    """``rank / n`` with the highest score at 1 and ties sharing their average rank (float64, in (0, 1])."""
    from scipy.stats import rankdata

    scores = np.nan_to_num(np.asarray(scores, np.float64), nan=-np.inf)
    return rankdata(scores, method="average") / max(len(scores), 1)


@derived_object
class EnsembleCostModel(PyCostModel):
    """Weighted mean of the GNN's and XGB's per-call percentile ranks (rule in the module docstring).

    Args:
        gnn: A `GNNCostModel` (or any cost model); None: ``GNNCostModel()``.
        xgb: An `XGBModel` (or any cost model); None: ``make_xgb(num_warmup_samples=XGB_WARMUP)``.
        gnn_weight, xgb_weight: Full weights of the two members.
        xgb_warmup: Measurements before the XGB member counts; None: its `num_warmup_samples` (16 for the default
            member; `XGBModel` must also have a booster). For other cost models, the valid results seen; 0: full
            weight from the first call (a pretrained member such as `RankerCostModel`).
        weighting: "schedule" (XGB's weight ramps in with its data), "accuracy" (each member's weight follows how
            well it ranked the last `window` measured rounds) or "handoff" (the GNN hands the lead to XGB between
            `handoff` measurements of a task); see the module docstring.
        window: Rounds the "accuracy" weighting looks back.
        handoff: ``(start, end)`` measurement counts of the "handoff" weighting.
    """

    def __init__(self, gnn: Any = None, xgb: Any = None, *, gnn_weight: float = 1.0, xgb_weight: float = 1.0,
                 xgb_warmup: int | None = None, weighting: str = "schedule", window: int = 3,
                 handoff: tuple[int, int] = HANDOFF) -> None:
        if gnn_weight < 0 or xgb_weight < 0 or gnn_weight + xgb_weight == 0:
            raise ValueError(f"EnsembleCostModel: weights gnn={gnn_weight}, xgb={xgb_weight} must be >= 0, "
                             "not both 0")
        if weighting not in WEIGHTINGS or window < 1:
            raise ValueError(f"EnsembleCostModel: weighting {weighting!r} must be one of {', '.join(WEIGHTINGS)} "
                             f"and window {window} >= 1")
        if not 0 <= handoff[0] < handoff[1]:
            raise ValueError(f"EnsembleCostModel: handoff {tuple(handoff)} must be (start, end), 0 <= start < end")
        self.gnn = gnn if gnn is not None else GNNCostModel()
        self.xgb = xgb if xgb is not None else make_xgb(num_warmup_samples=XGB_WARMUP)
        self.gnn_weight, self.xgb_weight = float(gnn_weight), float(xgb_weight)
        if xgb_warmup is None:
            xgb_warmup = int(getattr(self.xgb, "num_warmup_samples", 100)) if is_xgb(self.xgb) else 100
        self.xgb_warmup = xgb_warmup
        self.weighting = weighting
        self.handoff = (int(handoff[0]), int(handoff[1]))
        self.num_measured = 0  # valid results seen by update
        self.task_measured: dict[str, int] = {}  # the same, per task (`task_key`)
        self.rounds: deque[tuple[float, float, int]] = deque(maxlen=window)  # (gnn, xgb correct pairs, pairs)

    def xgb_samples(self) -> int:
        return int(self.xgb.data_size) if is_xgb(self.xgb) else self.num_measured

    def current_weights(self, context: Any = None) -> tuple[float, float]:
        """``(w_gnn, w_xgb)`` for the next predict call on `context`'s task (the "handoff" weighting counts that
        task's measurements; None: all tasks')."""
        if self._xgb_cold():
            return self.gnn_weight, 0.0
        if self.weighting == "accuracy" and self.rounds:
            gnn_correct, xgb_correct, pairs = (sum(col) for col in zip(*self.rounds))
            return self.gnn_weight * _skill(gnn_correct, pairs), self.xgb_weight * _skill(xgb_correct, pairs)
        if self.weighting == "handoff":
            start, end = self.handoff
            n = self.num_measured if context is None else self.task_measured.get(task_key(context), 0)
            t = min(1.0, max(0.0, (n - start) / (end - start)))
            return self.gnn_weight * (1.0 - t), self.xgb_weight * t
        if self.xgb_warmup == 0:  # a pretrained member (`RankerCostModel`): full weight from the start
            return self.gnn_weight, self.xgb_weight
        return self.gnn_weight, self.xgb_weight * min(1.0, self.xgb_samples() / (2.0 * self.xgb_warmup))

    def _xgb_cold(self) -> bool:
        return self.xgb_samples() < self.xgb_warmup or (is_xgb(self.xgb) and not xgb_is_warm(self.xgb))

    def predict(self, context: Any, candidates: list[Any]) -> np.ndarray:
        if not candidates:
            return np.zeros(0, np.float64)
        w_gnn, w_xgb = self.current_weights(context)
        total = np.zeros(len(candidates), np.float64)
        if w_gnn > 0:
            total += w_gnn * percentile_ranks(self.gnn.predict(context, candidates))
        if w_xgb > 0:
            total += w_xgb * percentile_ranks(self.xgb.predict(context, candidates))
        if w_gnn + w_xgb == 0:  # GNN weighted 0 and XGB still cold: its random scores are all there is
            return percentile_ranks(self.xgb.predict(context, candidates))
        return total / (w_gnn + w_xgb)

    def update(self, context: Any, candidates: list[Any], results: list[Any]) -> None:
        latency = [measured_latency_ms(r) for r in results]
        if self.weighting == "accuracy" and not self._xgb_cold():  # XGB as it was when it chose them
            self._score_round(context, candidates, latency)
        if self.weighting != "handoff" or self.current_weights(context)[0] > 0:  # a handed-off GNN learns no more
            self.gnn.update(context, candidates, results)
        valid = sum(v is not None for v in latency)
        self.num_measured += valid
        key = task_key(context)
        self.task_measured[key] = self.task_measured.get(key, 0) + valid
        self.xgb.update(context, candidates, results)

    def _score_round(self, context: Any, candidates: list[Any], latency: list[float | None]) -> None:
        """Count the pairs of this round's measured candidates each member orders correctly, before it learns."""
        keep = [i for i, v in enumerate(latency) if v is not None]
        if len(keep) < 2:
            return
        chosen = [candidates[i] for i in keep]
        lat = np.array([latency[i] for i in keep], np.float64)
        faster = lat[:, None] * (1.0 + TIE_TOL) < lat[None, :]  # [i, j]: i truly faster than j
        pairs = int(faster.sum())
        if pairs == 0:
            return
        correct = []
        for member in (self.gnn, self.xgb):
            score = np.asarray(member.predict(context, chosen), np.float64)
            sign = np.sign(score[:, None] - score[None, :])[faster]
            correct.append(float((sign > 0).sum()) + 0.5 * float((sign == 0).sum()))
        self.rounds.append((correct[0], correct[1], pairs))

    def predict_with_uncertainty(self, context: Any, candidates: list[Any]) -> tuple[np.ndarray, np.ndarray]:
        """The GNN member's predicted log-latency mean and std (`GNNCostModel.predict_with_uncertainty`)."""
        return self.gnn.predict_with_uncertainty(context, candidates)

    def save(self, path: str) -> None:
        """A folder: ``gnn/`` (the GNN's own save), ``xgb.tar`` (also before XGB is trained), ``state.json``."""
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        self.gnn.save(str(folder / "gnn"))
        if is_xgb(self.xgb):
            save_xgb(self.xgb, str(folder / "xgb.tar"))
        else:
            self.xgb.save(str(folder / "xgb"))
        state = {"format": STATE_FORMAT, "version": 2, "gnn_weight": self.gnn_weight,
                 "xgb_weight": self.xgb_weight, "xgb_warmup": self.xgb_warmup, "num_measured": self.num_measured,
                 "weighting": self.weighting, "window": self.rounds.maxlen, "rounds": list(self.rounds),
                 "handoff": list(self.handoff), "task_measured": self.task_measured}
        (folder / "state.json").write_text(json.dumps(state, indent=2, sort_keys=True) + "\n")

    def load(self, path: str) -> None:
        folder = Path(path)
        try:
            state = json.loads((folder / "state.json").read_text())
            if state.get("format") != STATE_FORMAT:
                raise ValueError(f"not a {STATE_FORMAT} state file")
        except (OSError, ValueError) as err:
            raise TvmCostError(f"cannot read the ensemble state ({type(err).__name__}: {err})",
                               path=folder / "state.json") from None
        self.gnn.load(str(folder / "gnn"))
        if is_xgb(self.xgb):
            load_xgb(self.xgb, str(folder / "xgb.tar"))
        else:
            self.xgb.load(str(folder / "xgb"))
        self.gnn_weight, self.xgb_weight = float(state["gnn_weight"]), float(state["xgb_weight"])
        self.xgb_warmup, self.num_measured = int(state["xgb_warmup"]), int(state["num_measured"])
        self.weighting = state.get("weighting", "schedule")  # version 1 states predate the accuracy weighting
        self.handoff = tuple(int(v) for v in state.get("handoff", HANDOFF))  # type: ignore[assignment]
        self.task_measured = {str(k): int(v) for k, v in state.get("task_measured", {}).items()}
        self.rounds = deque((tuple(r) for r in state.get("rounds", [])), maxlen=int(state.get("window", 3)))


def _skill(correct: float, pairs: int) -> float:
    """A member's skill from its recent pairwise record (Laplace-smoothed accuracy above chance, floored)."""
    return max(0.0, (correct + 1.0) / (pairs + 2.0) - 0.5) + SKILL_FLOOR


python_side_save_load(EnsembleCostModel)
