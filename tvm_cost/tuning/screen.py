"""`ScreenedCostModel`: a cheap cost model screens every candidate, a costlier one ranks those it keeps.

Evolutionary search scores its whole population every generation, but measures only the few it ranks best and
breeds mostly from the upper part. So a model that needs PerStoreFeature (the "rows" ranker, the GNN: 1.7-2 ms a
candidate, most of it the extraction) need not see all of them. The screen (`RankerCostModel(features="trace")`,
which reads only the trace, ~0.2 ms a candidate) scores all `n` candidates; the model scores the screen's best
``max(min_kept, ceil(keep * n))`` (and any tied with the last of those). Scores are percentile ranks within the
call: the kept candidates take (1 - s, 1] in the model's order and the rest (0, 1 - s] in the screen's, with s
the kept share, so every kept candidate ranks above every screened-out one. Both members learn from every update.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from tvm.ir.utils import derived_object
from tvm.s_tir.meta_schedule.cost_model import PyCostModel

from tvm_cost.errors import TvmCostError
from tvm_cost.tuning.ensemble import percentile_ranks
from tvm_cost.tuning.scoring import one_line, python_side_save_load

STATE_FORMAT = "tvm-cost-screened-cost-model"
KEEP = 0.25
"""Share of each call's candidates the screen passes to the model."""
MIN_KEPT = 16
"""Candidates the model scores at least (MetaSchedule measures 16 a round by default)."""


def kept_count(n: int, keep: float = KEEP, min_kept: int = MIN_KEPT) -> int:
    """How many of `n` candidates the model scores: ``max(min_kept, ceil(keep * n))``, at most `n`."""
    return min(n, max(min_kept, math.ceil(keep * n)))


def kept_mask(screened: np.ndarray, k: int) -> np.ndarray:
    """The screen's best `k` (and any tied with the k-th: the choice does not depend on the order), bool [n]."""
    return screened >= np.sort(screened)[len(screened) - k]


def screened_ranks(screened: np.ndarray, kept: np.ndarray, model_scores: np.ndarray) -> np.ndarray:
    """The kept candidates in (1 - s, 1] by `model_scores` (theirs, in order), the rest in (0, 1 - s] by
    `screened`, with s the kept share; float64 [n]."""
    share = kept.sum() / len(screened)
    out = np.empty(len(screened), np.float64)
    out[kept] = (1.0 - share) + share * percentile_ranks(model_scores)
    out[~kept] = (1.0 - share) * percentile_ranks(screened[~kept])
    return out



def screened_scores(screen: np.ndarray, model: np.ndarray, group: np.ndarray) -> np.ndarray:
    """`ScreenedCostModel`'s scores offline: each group (a task's candidates, as one predict call) screened by
    `screen`, its kept candidates ordered by `model` (both given for every item; the model's count only where
    kept), float64 [items]."""
    out = np.zeros(len(screen))
    for g in np.unique(group):
        idx = np.flatnonzero(group == g)
        kept = kept_mask(screen[idx], kept_count(len(idx)))
        out[idx] = screened_ranks(screen[idx], kept, model[idx][kept])
    return out

@derived_object
class ScreenedCostModel(PyCostModel):
    """`screen` scores all candidates, `model` the screen's best (rule in the module docstring).

    Args:
        screen: The cheap cost model that sees every candidate.
        model: The costlier cost model that ranks the candidates the screen keeps.
        keep: Share of a call's candidates kept, in (0, 1].
        min_kept: Candidates kept at least (all of them in a smaller call).
    """

    def __init__(self, screen: Any, model: Any, *, keep: float = KEEP, min_kept: int = MIN_KEPT) -> None:
        if not 0 < keep <= 1 or min_kept < 1:
            raise ValueError(f"ScreenedCostModel: keep={keep} in (0, 1] and min_kept={min_kept} >= 1 required")
        self.screen, self.model = screen, model
        self.keep, self.min_kept = float(keep), int(min_kept)

    def predict(self, context: Any, candidates: list[Any]) -> np.ndarray:
        """Percentile ranks in (0, 1], higher is better, float64 [len(candidates)]."""
        n = len(candidates)
        if n == 0:
            return np.zeros(0, np.float64)
        k = kept_count(n, self.keep, self.min_kept)
        if k == n:
            return percentile_ranks(self.model.predict(context, candidates))
        screened = np.asarray(self.screen.predict(context, candidates), np.float64)
        kept = kept_mask(screened, k)
        model_scores = self.model.predict(context, [candidates[i] for i in np.flatnonzero(kept)])
        return screened_ranks(screened, kept, np.asarray(model_scores, np.float64))

    def update(self, context: Any, candidates: list[Any], results: list[Any]) -> None:
        self.screen.update(context, candidates, results)
        self.model.update(context, candidates, results)

    def save(self, path: str) -> None:
        """A folder: ``screen/`` and ``model/`` (each member's own save) and ``state.json``."""
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        self.screen.save(str(folder / "screen"))
        self.model.save(str(folder / "model"))
        state = {"format": STATE_FORMAT, "version": 1, "keep": self.keep, "min_kept": self.min_kept}
        (folder / "state.json").write_text(json.dumps(state, indent=2, sort_keys=True) + "\n")

    def load(self, path: str) -> None:
        """Load a folder written by `save` into this model's members.

        Raises:
            TvmCostError: One line naming the folder whose state is missing or of another format.
        """
        folder = Path(path)
        try:
            state = json.loads((folder / "state.json").read_text())
            if state.get("format") != STATE_FORMAT:
                raise ValueError(f"not a {STATE_FORMAT} state file")
            keep, min_kept = float(state["keep"]), int(state["min_kept"])
        except (OSError, ValueError, KeyError) as err:
            raise TvmCostError(f"cannot read the screened cost model ({one_line(err)})", path=folder) from None
        self.screen.load(str(folder / "screen"))
        self.model.load(str(folder / "model"))
        self.keep, self.min_kept = keep, min_kept


python_side_save_load(ScreenedCostModel)
