"""A tree ranker over a candidate's PerStoreFeature rows and its trace's sampling decisions.

XGBoost ``rank:pairwise`` within tasks on one of two feature sets (`FEATURE_SETS`):

- ``rows``: the rows summed and maxed over the candidate's stores, and its globals (`CANDIDATE_SCHEMA`: the
  task's, then `trace_decisions.decision_features`). TVM's `XGBModel` sees only the rows (and regresses a
  normalized throughput); with the decisions this ranker is 4-6 points of pairwise accuracy and 14-17 of peak@1
  ahead of it on held-out families, and its rank mean with the GNN ranks best of all (docs/kernel_model.md).
- ``trace``: the candidate's globals (the task's and the decision summary) and `trace_decisions.raw_decisions`,
  all read from the trace: no PerStoreFeature extraction, so scoring a candidate costs a tenth of what XGBModel
  pays.

A trained booster is saved as ``OUT.ubj`` (XGBoost's own binary format: loading it runs no code) beside
``OUT.json``, which names the feature set and its ``layout`` hash (`PROGRAM_SCHEMA` and `DECISION_COLUMNS`, which
make `CANDIDATE_SCHEMA`'s globals; for "trace" `RAW_COLUMNS`); a booster of another set or layout, or a truncated
one, is refused with one line.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tvm_cost.errors import TvmCostError
from tvm_cost.features.program_schema import PROGRAM_SCHEMA
from tvm_cost.features.schema import NUM_STORE_FEATURES
from tvm_cost.features.trace_decisions import DECISION_COLUMNS, RAW_COLUMNS
from tvm_cost.tuning.scoring import one_line

CHECKPOINT_FORMAT = "tvm-cost-ranker"
FEATURE_SETS = ("rows", "trace")
_COLUMNS = f"{PROGRAM_SCHEMA.hash}|{','.join(DECISION_COLUMNS)}"
LAYOUTS = {"rows": hashlib.sha256(_COLUMNS.encode()).hexdigest()[:16],
           "trace": hashlib.sha256(f"{_COLUMNS}|{','.join(RAW_COLUMNS)}|trace".encode()).hexdigest()[:16]}
"""Hash of each feature set's layout: the program schema (rows and globals), the decision columns, and for
"trace" the raw decision columns."""

RELEVANCE_LEVELS = 30  # relevance of a candidate: floor(levels x its task's best latency / its latency)
BOOSTER_PARAMS = {"objective": "rank:pairwise", "eta": 0.1, "max_depth": 6, "min_child_weight": 2,
                  "subsample": 0.8, "colsample_bytree": 0.8}
ROUNDS = 300


def feature_row(x: np.ndarray, u: np.ndarray) -> np.ndarray:
    """One candidate's features: its node rows' PerStoreFeature columns summed and maxed over stores, then its
    globals `u` (`CANDIDATE_SCHEMA`: the task's, then its trace's decisions).

    Shapes:
        x: [stores, >= 164]; u: [1, G] or [G] -> [2 * 164 + G] float32.
    """
    x = np.asarray(x)[:, :NUM_STORE_FEATURES]
    return np.concatenate([x.sum(0), x.max(0), np.ravel(u)]).astype(np.float32)


def trace_row(u: np.ndarray, raw: np.ndarray) -> np.ndarray:
    """One candidate's "trace" features: its globals `u` (as `feature_row`'s) and its trace's raw decisions.

    Shapes:
        u: [1, G] or [G]; raw: [1, 41] or [41] -> [G + 41] float32.
    """
    return np.concatenate([np.ravel(u), np.ravel(raw)]).astype(np.float32)


def ranker_features(items: Sequence[Any], features: str = "rows") -> np.ndarray:
    """`feature_row` ("rows") or `trace_row` ("trace") of each item (``x``, ``u`` and ``raw_decisions`` tensors,
    as `KernelDataset` gives them).

    Shapes:
        returns: [len(items), 2 * 164 + len(u)] ("rows") or [len(items), len(u) + 41] ("trace") float32.
    """
    if features == "trace":
        return np.stack([trace_row(d.u.numpy(), d.raw_decisions.numpy()) for d in items])
    return np.stack([feature_row(d.x.numpy(), d.u.numpy()) for d in items])


def relevance(latency: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Graded relevance within each group, 0 (slow) to `RELEVANCE_LEVELS` (the group's fastest)."""
    out = np.zeros(len(latency))
    for g in np.unique(group):
        rows = group == g
        out[rows] = np.floor(RELEVANCE_LEVELS * latency[rows].min() / latency[rows])
    return out


def train_booster(features: np.ndarray, latency: np.ndarray, group: np.ndarray, *, seed: int = 0,
                  rounds: int = ROUNDS, base: Any = None, nthread: int | None = None) -> Any:
    """An XGBoost booster ranking the rows within each `group` by `latency` (faster higher).

    Args:
        base: A booster to continue from (its trees kept, `rounds` added; `base` itself is not changed).
        nthread: XGBoost threads; None: its default (OpenMP's, which honours ``OMP_NUM_THREADS``).
    """
    import xgboost as xgb

    order = np.argsort(group, kind="stable")  # XGBoost wants each group's rows contiguous
    train = xgb.DMatrix(features[order], label=relevance(latency[order], group[order]))
    train.set_group(np.unique(group[order], return_counts=True)[1])
    params = {**BOOSTER_PARAMS, "seed": seed, **({"nthread": nthread} if nthread else {})}
    return xgb.train(params, train, rounds, xgb_model=base)


def booster_scores(fit_features: np.ndarray, fit_latency: np.ndarray, fit_group: np.ndarray,
                   score_features: np.ndarray, *, seeds: Sequence[int]) -> np.ndarray:
    """Scores (higher is faster) of the `score_features` rows by boosters trained on the fit rows (ranked within
    `fit_group`), averaged over `seeds`."""
    import xgboost as xgb

    test = xgb.DMatrix(score_features)
    return np.mean([train_booster(fit_features, fit_latency, fit_group, seed=seed).predict(test) for seed in seeds],
                   axis=0)


def ranker_scores(train_items: Sequence[Any], test_items: Sequence[Any], *, seeds: Sequence[int] = (0, 1, 2),
                  features: str = "rows") -> np.ndarray:
    """Scores (higher is faster) of `test_items` by rankers on `features` trained on `train_items`, averaged
    over `seeds`.

    Items need what `ranker_features` reads, ``group`` (tasks as ranking groups) and ``latency_ms``, as
    `KernelDataset` gives them.
    """
    return booster_scores(ranker_features(train_items, features), np.array([d.latency_ms for d in train_items]),
                          np.array([int(d.group) for d in train_items]), ranker_features(test_items, features),
                          seeds=seeds)


def ranker_paths(path: str | Path) -> tuple[Path, Path]:
    """(booster, metadata) files of a ranker checkpoint: ``OUT.ubj`` and ``OUT.json`` (`path` with or without the
    suffix)."""
    stem = Path(path)
    stem = stem.with_suffix("") if stem.suffix in (".ubj", ".json") else stem
    return stem.with_name(stem.name + ".ubj"), stem.with_name(stem.name + ".json")


def save_ranker(path: str | Path, booster: Any, *, features: str = "rows", extra: Mapping[str, Any] | None = None
                ) -> Path:
    """Write `booster` and its metadata (format, feature set and its layout hash, feature count, `extra`);
    returns the booster file."""
    from importlib.metadata import version

    weights, meta = ranker_paths(path)
    weights.parent.mkdir(parents=True, exist_ok=True)
    booster.save_model(str(weights))
    info = {"format": CHECKPOINT_FORMAT, "version": 1, "features": features, "layout": LAYOUTS[features],
            "num_features": booster.num_features(),
            "rounds": booster.num_boosted_rounds(), "params": BOOSTER_PARAMS, "xgboost_version": version("xgboost"),
            "extra": dict(extra or {})}
    meta.write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")
    return weights


def load_ranker(path: str | Path, features: str = "rows") -> tuple[Any, dict[str, Any]]:
    """The booster and metadata of a ranker checkpoint on the feature set `features`.

    Raises:
        TvmCostError: One line naming the file: missing or unreadable files, another format, feature set or
            layout, a booster whose feature count does not match.
    """
    import xgboost as xgb

    weights, meta_path = ranker_paths(path)
    try:
        meta = json.loads(meta_path.read_text())
        if meta.get("format") != CHECKPOINT_FORMAT:
            raise ValueError(f"not a {CHECKPOINT_FORMAT} checkpoint")
    except (OSError, ValueError) as err:
        raise TvmCostError(f"cannot read the ranker metadata ({one_line(err)})", path=meta_path) from None
    trained_on = meta.get("features", "rows")  # checkpoints before the "trace" set name none
    if trained_on != features:
        raise TvmCostError(f"a ranker on the {trained_on!r} features, not the {features!r} ones asked for",
                           path=meta_path)
    if meta.get("layout") != LAYOUTS[features]:
        raise TvmCostError(f"ranker trained on feature layout {meta.get('layout')}, this version computes "
                           f"{LAYOUTS[features]}; retrain it with `tvm-cost train DATA --ranker "
                           f"--ranker-features {features}`", path=meta_path)
    try:
        booster = xgb.Booster(model_file=str(weights))
    except (OSError, xgb.core.XGBoostError) as err:
        raise TvmCostError(f"cannot read the ranker booster ({one_line(err)})", path=weights) from None
    if booster.num_features() != meta.get("num_features"):
        raise TvmCostError(f"booster has {booster.num_features()} features, its metadata says "
                           f"{meta.get('num_features')}", path=weights)
    return booster, meta
