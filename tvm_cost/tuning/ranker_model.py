"""`RankerCostModel`: the decision-aware tree ranker (`tvm_cost.tuning.ranker`) as a MetaSchedule cost model.

- **predict** -- each candidate's features -> the booster's score -> percentile rank within the call, in (0, 1],
  best = 1. On the "rows" features (the default), its `feature_row`: its PerStoreFeature rows (from a
  `CandidateFeaturizer`: alone, one without the program walk; in ``EnsembleCostModel(gnn, ranker)`` the GNN's
  own, so the rows are extracted once) and its globals, which end with its trace's sampling decisions
  (`trace_decisions.trace_json`, 0.1 ms a candidate); on the "trace" features, its `trace_row`, read from the
  trace alone. With no booster yet (none pretrained, fewer than `min_fit` measurements) the scores are uniform
  random, as `XGBModel` draws them before its warm-up.
- **update** -- the built, non-failed results join a per-task store; then the booster is refit:
  `refit_rounds` boosting rounds on top of the pretrained booster, ranking within each task of this tune, redone
  from the pretrained booster each time (so its size stays bounded and an early round's noise is not built in).
  Without a pretrained booster a fresh one of `ROUNDS` rounds is fit instead.
- **save / load** -- a folder: ``base.ubj`` and ``booster.ubj`` (XGBoost's binary format, loading runs no code),
  ``measured.npz`` (no pickle), ``state.json``.

**Weights.** ``RankerCostModel()`` loads the booster shipped for the tune's target
(``tvm_cost/checkpoints/<target name>-ranker.ubj``, for "trace" ``...-ranker-trace.ubj``, written by ``tvm-cost
train DATA --ranker [--ranker-features trace]``), found at first use; without one it learns from the tune's
measurements only, with a warning.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np
from tvm.ir.utils import derived_object
from tvm.s_tir.meta_schedule.cost_model import PyCostModel

from tvm_cost.errors import TvmCostError
from tvm_cost.features.trace_decisions import candidate_globals, raw_decisions, trace_json
from tvm_cost.tuning.checkpoints import shipped_checkpoint, target_name
from tvm_cost.tuning.ensemble import percentile_ranks
from tvm_cost.tuning.ranker import FEATURE_SETS, ROUNDS, feature_row, load_ranker, ranker_paths, trace_row, \
    train_booster
from tvm_cost.tuning.replay import CandidateFeaturizer, measured_latency_ms, task_key
from tvm_cost.tuning.scoring import one_line, python_side_save_load

log = logging.getLogger(__name__)

STATE_FORMAT = "tvm-cost-ranker-cost-model"
SUFFIX = "-ranker.ubj"
SUFFIXES = {"rows": SUFFIX, "trace": "-ranker-trace.ubj"}
REFIT_ROUNDS = 25
"""Boosting rounds each `update` adds to the pretrained booster (learning rate 0.1, `BOOSTER_PARAMS`): on the
held-out Xeon tasks 25 ranked later records best after 16 measured (scripts/ranker_refit_study.py)."""
MIN_FIT = 8
"""Measured candidates before a ranker without a pretrained booster fits its first one."""


def trace_checkpoint(booster: str | Path | None) -> str | Path | None:
    """The "trace" booster beside the "rows" booster `booster` (``OUT`` -> ``OUT-trace``, as `SUFFIXES` name the
    shipped pair); "auto" and None as they are."""
    if booster in ("auto", None):
        return booster
    weights, _ = ranker_paths(booster)
    return weights.with_name(weights.name.removesuffix(".ubj") + "-trace")


@derived_object
class RankerCostModel(PyCostModel):
    """The tree ranker as a cost model (see the module docstring for the score, update and weights).

    Args:
        booster: "auto": the booster shipped for the target (found at first use), else none, with a warning;
            None: none (learn from this tune only); a path: that checkpoint (``OUT`` or ``OUT.ubj``).
        target: The tuning target, to pick the shipped booster now; None: from the first tune context.
        featurizer: Program graphs of the candidates (for "trace", only the task's globals); None: a new
            `CandidateFeaturizer` without the walk.
        features: "rows" or "trace" (`tvm_cost.tuning.ranker.FEATURE_SETS`); the booster must be of that set.
        refit_rounds: Rounds each update adds to the pretrained booster (0: never refit it).
        min_fit: Measured candidates before a model without a pretrained booster fits one.
        seed: Seed of the boosters' row and column sampling and of the random scores before any booster.
    """

    def __init__(self, booster: str | Path | None = "auto", *, target: Any = None,
                 featurizer: CandidateFeaturizer | None = None, features: str = "rows",
                 refit_rounds: int = REFIT_ROUNDS, min_fit: int = MIN_FIT, seed: int = 0) -> None:
        if refit_rounds < 0 or min_fit < 2 or features not in FEATURE_SETS:
            raise ValueError(f"RankerCostModel: refit_rounds={refit_rounds} >= 0, min_fit={min_fit} >= 2 and "
                             f"features {features!r} in {FEATURE_SETS} required")
        self.feature_set = features
        self.checkpoint = booster
        self.target_name = target_name(target) if target is not None else None
        self.featurizer = featurizer if featurizer is not None else CandidateFeaturizer(walk=False)
        self.refit_rounds, self.min_fit, self.seed = refit_rounds, min_fit, seed
        self.base: Any = None  # the pretrained booster
        self.booster: Any = None  # what predict uses: the base refit on this tune's measurements
        self.source = "none"
        self.resolved = False
        self.measured: dict[str, tuple[list[np.ndarray], list[float]]] = {}  # task -> (feature rows, latency ms)
        self.calls = 0
        if booster not in ("auto", None):
            self._load_base(Path(booster))
        elif self.target_name is not None or booster is None:
            self._resolve()

    # -- weights -----------------------------------------------------------------------------------------------
    def _load_base(self, path: Path, source: str | None = None) -> None:
        self.base, _ = load_ranker(path, self.feature_set)
        self.booster, self.source, self.resolved = self.base, source or str(path), True

    def _resolve(self, context: Any = None) -> None:
        """Find the shipped booster for the target once ("auto"); no booster otherwise."""
        if self.resolved:
            return
        self.resolved = True
        if self.checkpoint is None:
            return
        if self.target_name is None and context is not None:
            self.target_name = target_name(context.target)
        suffix = SUFFIXES[self.feature_set]
        path = shipped_checkpoint(self.target_name, suffix=suffix) if self.target_name else None
        if path is None:
            log.warning("no trained %r ranker ships for target %s; the ranker learns only from this tune's "
                        "measurements", self.feature_set, self.target_name or "(unknown)")
            return
        self._load_base(path, source=f"shipped:{path.name.removesuffix(suffix)}")

    # -- the MetaSchedule contract -----------------------------------------------------------------------------
    def predict(self, context: Any, candidates: list[Any]) -> np.ndarray:
        """Percentile ranks in (0, 1], higher is better, float64 [len(candidates)]."""
        if not candidates:
            return np.zeros(0, np.float64)
        self._resolve(context)
        self.calls += 1
        if self.booster is None:
            return np.random.default_rng([self.seed, self.calls]).random(len(candidates)) + 1e-9
        import xgboost as xgb

        scores = self.booster.predict(xgb.DMatrix(self.features(context, candidates)))
        return percentile_ranks(scores)

    def update(self, context: Any, candidates: list[Any], results: list[Any]) -> None:
        """Store the measured candidates' features and refit the booster on all of this tune's measurements."""
        self._resolve(context)
        latency = [measured_latency_ms(r) for r in results]
        kept = [i for i, v in enumerate(latency) if v is not None]
        if not kept:
            return
        rows = self.features(context, [candidates[i] for i in kept])
        store = self.measured.setdefault(task_key(context), ([], []))
        store[0].extend(rows)
        store[1].extend(latency[i] for i in kept)  # type: ignore[misc]
        self._refit()

    def save(self, path: str) -> None:
        """Write the folder `path` (see the module docstring)."""
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        for name, booster in (("base", self.base), ("booster", self.booster)):
            if booster is not None:
                booster.save_model(str(folder / f"{name}.ubj"))
        keys = list(self.measured)
        rows = [r for k in keys for r in self.measured[k][0]]
        np.savez(folder / "measured.npz", rows=np.stack(rows) if rows else np.zeros((0, 0), np.float32),
                 latency_ms=np.asarray([v for k in keys for v in self.measured[k][1]], np.float64),
                 task=np.asarray([i for i, k in enumerate(keys) for _ in self.measured[k][1]], np.int64),
                 keys=np.asarray(keys, dtype=str))
        state = {"format": STATE_FORMAT, "version": 1, "features": self.feature_set, "source": self.source,
                 "target_name": self.target_name,
                 "refit_rounds": self.refit_rounds, "min_fit": self.min_fit, "seed": self.seed, "calls": self.calls,
                 "base": self.base is not None, "booster": self.booster is not None}
        (folder / "state.json").write_text(json.dumps(state, indent=2, sort_keys=True) + "\n")

    def load(self, path: str) -> None:
        """Load a folder written by `save`, or a ranker checkpoint (``OUT``/``OUT.ubj``: replaces the base).

        Raises:
            TvmCostError: One line naming the file that is missing, truncated or of another format.
        """
        import xgboost as xgb

        folder = Path(path)
        if not folder.is_dir() and ranker_paths(folder)[0].is_file():
            self._load_base(folder)
            return
        try:
            state = json.loads((folder / "state.json").read_text())
            if state.get("format") != STATE_FORMAT:
                raise ValueError(f"not a {STATE_FORMAT} state file")
            if state.get("features", "rows") != self.feature_set:
                raise ValueError(f"saved on the {state.get('features', 'rows')!r} features, not {self.feature_set!r}")
            boosters = {name: xgb.Booster(model_file=str(folder / f"{name}.ubj")) if state[name] else None
                        for name in ("base", "booster")}
            with np.load(folder / "measured.npz", allow_pickle=False) as data:
                arrays = {k: data[k] for k in data.files}
        except (OSError, ValueError, KeyError, xgb.core.XGBoostError) as err:
            raise TvmCostError(f"cannot read the ranker cost model ({one_line(err)})", path=folder) from None
        self.base, self.booster = boosters["base"], boosters["booster"]
        self.source, self.target_name, self.resolved = str(state["source"]), state["target_name"], True
        self.refit_rounds, self.min_fit = int(state["refit_rounds"]), int(state["min_fit"])
        self.seed, self.calls = int(state["seed"]), int(state["calls"])
        self.measured = {}
        for i, key in enumerate(str(k) for k in arrays["keys"]):
            idx = np.flatnonzero(arrays["task"] == i)
            self.measured[key] = ([arrays["rows"][j] for j in idx], [float(v) for v in arrays["latency_ms"][idx]])

    # -- beyond the contract -----------------------------------------------------------------------------------
    def features(self, context: Any, candidates: list[Any]) -> np.ndarray:
        """`feature_row` of each candidate (its graph from the featurizer), or on the "trace" features its
        `trace_row` (the task's globals and its trace's decisions, read from the trace alone).

        Shapes:
            returns: [len(candidates), 2 * 164 + globals] ("rows") or [len(candidates), globals + 41] ("trace")
                float32, with `CANDIDATE_SCHEMA`'s globals.
        """
        if self.feature_set == "trace":
            u = self.featurizer.task_globals(context)
            traces = [trace_json(c.sch.trace) for c in candidates]
            return np.stack([trace_row(candidate_globals(u, t), raw_decisions(t)) for t in traces])
        return np.stack([feature_row(g["x"], g["u"]) for g in self.featurizer.graphs(context, candidates)])

    def describe(self) -> dict[str, Any]:
        """Where the booster came from and what it has learnt in this tune."""
        return {"features": self.feature_set, "source": self.source, "pretrained": self.base is not None,
                "refit": self.booster is not self.base, "measured": sum(len(v[1]) for v in self.measured.values()),
                "tasks": len(self.measured)}

    def _refit(self) -> None:
        keys = [k for k, (_, lat) in self.measured.items() if len(lat) >= 2]  # a task of one ranks nothing
        if self.base is not None and self.refit_rounds == 0:
            return
        if not keys or (self.base is None and sum(len(self.measured[k][1]) for k in keys) < self.min_fit):
            return
        features = np.stack([r for k in keys for r in self.measured[k][0]])
        latency = np.asarray([v for k in keys for v in self.measured[k][1]], np.float64)
        group = np.asarray([i for i, k in enumerate(keys) for _ in self.measured[k][1]])
        rounds = self.refit_rounds if self.base is not None else ROUNDS
        self.booster = train_booster(features, latency, group, seed=self.seed, rounds=rounds, base=self.base,
                                     nthread=len(os.sched_getaffinity(0)))


python_side_save_load(RankerCostModel)
