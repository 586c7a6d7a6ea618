"""`KernelBoost`: each fused kernel's latency from its own features by gradient-boosted trees; the model's latency
is their sum.

The kernel level of the survey seed's hierarchy, trained on per-kernel times (``measure-e2e --per-kernel``): a
model of 30 kernels gives 30 labels, so 300 measured configurations teach it from ~10,000 kernels instead of 300
end-to-end times. The trees predict log time **per unit of work**: each kernel's ln(FLOPs + bytes) is XGBoost's
base margin, so a kernel larger than any seen scales with its work instead of being capped at the slowest
training kernel's time (trees do not extrapolate). On held-out families this took the MAPE from 7.9 % to 4.5 %
(docs/e2e.md). A few members with different seeds (row and column subsampling) give the uncertainty band.

Saved as XGBoost's own model files (UBJSON) plus a metadata JSON (feature schema, members, sha256 of each file),
so loading runs no code.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tvm_cost.errors import TvmCostError
from tvm_cost.estimation.work import node_log_work
from tvm_cost.models.kernel_sum import node_targets

FORMAT = "tvm-cost-kernel-boost"
FORMAT_VERSION = 2
"""2: trees on log ms per unit of work (`node_log_work`); 1 (refused): trees on log ms."""
SUFFIX = ".kernel_boost.json"
"""Metadata file of a saved `KernelBoost`: ``<name>.kernel_boost.json``; members: ``<name>.member<i>.xgb.ubj``
(XGBoost's UBJSON model format)."""


def node_rows(item: Any) -> np.ndarray:
    """One row per node: its feature columns, then the graph's globals (the same for every node)."""
    x = item.x.numpy()
    u = item.u.numpy().reshape(1, -1) if getattr(item, "u", None) is not None else np.zeros((1, 0), x.dtype)
    return np.concatenate([x, np.repeat(u, x.shape[0], axis=0)], axis=1)


class KernelBoost:
    """Per-kernel XGBoost regression of log ms per unit of work (`node_log_work` is the base margin); `members`
    boosters from seeds ``seed .. seed + members - 1``."""

    PARAMS = {"max_depth": 6, "eta": 0.05, "subsample": 0.8, "colsample_bytree": 0.8, "nthread": 1,
              "objective": "reg:squarederror"}

    def __init__(self, *, seed: int = 0, rounds: int = 600, members: int = 1) -> None:
        self.seed, self.rounds, self.members = seed, rounds, members
        self.boosters: list[Any] = []

    def fit(self, items: Sequence[Any]) -> KernelBoost:
        """Train on the nodes of `items` whose `node_ms` is known (finite), on `node_targets` (floored log ms)."""
        import xgboost as xgb

        rows = np.concatenate([node_rows(d) for d in items])
        log_ms = np.concatenate([node_targets(d).numpy() for d in items])
        margin = np.concatenate([node_log_work(d) for d in items])
        known = np.isfinite(log_ms)
        if not known.any():
            raise TvmCostError("no node has a measured time (node_ms); measure with `measure-e2e --per-kernel`")
        data = xgb.DMatrix(rows[known], label=log_ms[known], base_margin=margin[known])
        self.boosters = [xgb.train({**self.PARAMS, "seed": self.seed + i}, data, num_boost_round=self.rounds)
                         for i in range(self.members)]
        return self

    def node_ms(self, item: Any) -> np.ndarray:
        """Predicted ms of each node, one row per member. Shapes: -> [members, N]."""
        import xgboost as xgb

        data = xgb.DMatrix(node_rows(item), base_margin=node_log_work(item))
        return np.exp(np.stack([b.predict(data) for b in self.boosters]))

    def predict(self, items: Sequence[Any]) -> np.ndarray:
        """End-to-end ms of each item: the members' mean of the summed node predictions."""
        return np.array([self.node_ms(d).sum(1).mean() for d in items])

    def save(self, path: str | Path, *, schema: Any, extra: dict[str, Any] | None = None) -> Path:
        """Write ``<path>.kernel_boost.json`` (metadata) and ``<path>.member<i>.xgb.ubj``; returns the first."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        files = []
        for i, booster in enumerate(self.boosters):
            member = path.with_name(f"{path.name}.member{i}.xgb.ubj")
            booster.save_model(str(member))
            files.append({"file": member.name, "sha256": hashlib.sha256(member.read_bytes()).hexdigest()})
        meta = {"format": FORMAT, "format_version": FORMAT_VERSION, "model_class": "KernelBoost",
                "feature_schema": {"name": schema.name, "version": schema.version, "hash": schema.hash},
                "params": self.PARAMS, "rounds": self.rounds, "seed": self.seed, "members": files,
                "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "extra": extra or {}}
        out = path.with_name(path.name + SUFFIX)
        out.write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
        return out

    @classmethod
    def load(cls, path: str | Path, *, schema: Any) -> tuple[KernelBoost, dict[str, Any]]:
        """A saved `KernelBoost` and its metadata; a missing, altered or other-schema file is refused in one line."""
        import xgboost as xgb

        path = Path(path)
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise TvmCostError(f"cannot read estimator metadata ({err})", path=path) from err
        if meta.get("format") != FORMAT:
            raise TvmCostError(f"not a {FORMAT} file (format {meta.get('format')!r})", path=path)
        if meta.get("format_version") != FORMAT_VERSION:
            raise TvmCostError(f"{FORMAT} version {meta.get('format_version')} (this version reads "
                               f"{FORMAT_VERSION}: trees on log ms per unit of work); retrain it", path=path)
        got = meta.get("feature_schema", {}).get("hash")
        if got != schema.hash:
            raise TvmCostError(f"feature schema hash {got} does not match this version's {schema.hash}; retrain it",
                               path=path)
        model = cls(seed=int(meta["seed"]), rounds=int(meta["rounds"]), members=len(meta["members"]))
        for member in meta["members"]:
            file = path.parent / member["file"]
            if not file.is_file() or hashlib.sha256(file.read_bytes()).hexdigest() != member["sha256"]:
                raise TvmCostError(f"member {member['file']} is missing or does not match its sha256", path=path)
            booster = xgb.Booster()
            booster.load_model(str(file))
            model.boosters.append(booster)
        return model, meta
