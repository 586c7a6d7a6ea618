"""MetaSchedule's `XGBModel`, made and persisted around its known bugs (TVM 0.27).

- `XGBModel.__init__` discards ``config._replace(tree_method=...)``: `make_xgb` builds the `XGBConfig` itself.
- Saving an untrained `XGBModel` (no booster yet) and loading it back raises `UnboundLocalError` ('booster') after
  the data were restored: `load_xgb` finishes that load instead of failing.
- Its tar holds ``np.save`` object arrays (TVM's own format, read with pickle); our models never use it.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

log = logging.getLogger(__name__)


def make_xgb(*, num_threads: int | None = None, tree_method: str | None = None, num_warmup_samples: int = 100
             ) -> Any:
    """An `ms.cost_model.XGBModel` whose `tree_method` and thread count are really applied."""
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.meta_schedule.cost_model.xgb_model import XGBConfig
    from tvm.s_tir.meta_schedule.utils import cpu_count

    changes: dict[str, Any] = {"nthread": num_threads or cpu_count(logical=False)}
    if tree_method is not None:
        changes["tree_method"] = tree_method
    return ms.cost_model.XGBModel(config=XGBConfig()._replace(**changes), num_warmup_samples=num_warmup_samples)


def _inner(model: Any) -> Any:
    """The Python object behind a `derived_object` (calls that skip the FFI keep their exception types)."""
    return getattr(model, "_inst", model)


def is_xgb(model: Any) -> bool:
    from tvm.s_tir.meta_schedule.cost_model.xgb_model import XGBModel

    return isinstance(_inner(model), XGBModel._cls)


def xgb_is_warm(model: Any) -> bool:
    """Whether an `XGBModel` predicts from a booster (it draws uniform random scores before that)."""
    inner = _inner(model)
    return inner.booster is not None and inner.data_size >= inner.num_warmup_samples


def save_xgb(model: Any, path: str) -> None:
    _inner(model).save(path)


def load_xgb(model: Any, path: str) -> None:
    """`XGBModel.load` that also accepts a model saved before it was trained."""
    inner = _inner(model)
    try:
        inner.load(path)
    except UnboundLocalError:  # TVM 0.27: no model.bin in the tar; data and data_size are already restored
        inner.booster = None
        inner.last_train_size = 0


def seed_xgb(model: Any, groups: Mapping[str, tuple[Sequence[np.ndarray], np.ndarray]]) -> int:
    """Give an empty `XGBModel` the measured data of other tasks, as its own `update` would have stored it.

    Args:
        model: An `XGBModel`.
        groups: Task key (``shash2hex`` of the workload, what `XGBModel` groups by) -> (PerStoreFeature rows per
            candidate, each [S, 164]; mean cost in seconds per candidate).

    Returns:
        The number of samples added. Relies on `XGBModel`'s internal `data`/`_train` (TVM 0.27).
    """
    from tvm.s_tir.meta_schedule.cost_model.xgb_model import FeatureGroup

    inner = _inner(model)
    added = 0
    for key, (features, costs) in groups.items():
        feats = [np.asarray(f, np.float32) for f in features if len(f)]
        cost = np.asarray([c for f, c in zip(features, costs, strict=True) if len(f)], np.float32)
        if not feats:
            continue
        if key in inner.data:
            inner.data[key].append(feats, cost)
        else:
            inner.data[key] = FeatureGroup(group_hash=key, features=feats, costs=cost)
        added += len(feats)
    inner.data_size += added
    if added and inner.data_size >= inner.num_warmup_samples:
        xs = list(itertools.chain.from_iterable(g.features for g in inner.data.values()))
        ys = np.concatenate([g.min_cost / g.costs for g in inner.data.values()])
        inner._train(xs=xs, ys=ys)  # noqa: SLF001 - the retraining step of XGBModel.update
        inner.last_train_size = inner.data_size
    return added
