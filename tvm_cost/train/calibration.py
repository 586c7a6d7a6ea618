"""Affine calibration of a kernel model's predicted log-latency, so its times are real times, not only ranks.

The ranking terms of training (ListMLE within each task) reward spreading a task's predictions apart: on held-out
families the shipped recipe's predictions spread about twice as wide within a task as the measured latencies
(docs/kernel_model.md, run thirty), so its absolute times miss by a median factor of 2.1. Three numbers fitted by
least squares on the training candidates after training fix most of it without touching the ranking:

    calibrated = scale * (prediction - log work) + work * log work + offset

``log work`` is the model's `tvm_cost.models.base.log_work` (0 for a model that does not predict per unit of
work). Within one task ``log work`` is constant, so for ``scale > 0`` the calibrated order of a task's candidates
is the model's own: ranking metrics and the tune's choices are unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

MIN_SCALE = 0.05
"""The smallest scale a fit may return: a positive scale keeps each task's order."""


@dataclass(frozen=True)
class Calibration:
    """``calibrated = scale * (pred - log_work) + work * log_work + offset`` (natural logs of ms).

    Attributes:
        scale: On the per-unit-of-work part of the prediction (> 0).
        work: On the log work.
        offset: Added.
        records: Candidates it was fitted on (0 for the identity).
    """

    scale: float = 1.0
    work: float = 1.0
    offset: float = 0.0
    records: int = 0

    def apply(self, log_pred: np.ndarray, log_work: np.ndarray) -> np.ndarray:
        """Calibrated log-latency. Shapes: log_pred, log_work [N] -> [N]."""
        pred, work = np.asarray(log_pred, np.float64), np.asarray(log_work, np.float64)
        return self.scale * (pred - work) + self.work * work + self.offset

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, value: Mapping[str, Any] | None) -> Calibration:
        """The calibration stored in checkpoint metadata; the identity for None (a checkpoint from before).

        Raises:
            ValueError: Not a mapping of finite numbers with a positive scale.
        """
        if value is None:
            return cls()
        try:
            cal = cls(scale=float(value["scale"]), work=float(value["work"]), offset=float(value["offset"]),
                      records=int(value.get("records", 0)))
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"bad calibration {dict(value) if isinstance(value, Mapping) else value!r}: "
                             f"{err}") from None
        if not (np.isfinite([cal.scale, cal.work, cal.offset]).all() and cal.scale > 0):
            raise ValueError(f"bad calibration {cal.to_dict()}: needs finite numbers and a positive scale")
        return cal


def fit_calibration(log_pred: np.ndarray, log_work: np.ndarray, latency_ms: np.ndarray) -> Calibration:
    """Least squares of ``log(latency_ms)`` on (prediction - log work, log work, 1).

    Without varying work (no work columns, or one task) the work term stays 1 and only scale and offset are
    fitted. The scale is kept at or above `MIN_SCALE`, the rest refitted then. Too few candidates (< 3) give the
    identity.

    Shapes:
        log_pred, log_work, latency_ms: [N].
    """
    pred, work = np.asarray(log_pred, np.float64), np.asarray(log_work, np.float64)
    y = np.log(np.asarray(latency_ms, np.float64))
    ok = np.isfinite(pred) & np.isfinite(work) & np.isfinite(y)
    pred, work, y = pred[ok], work[ok], y[ok]
    if len(y) < 3:
        return Calibration()
    h = pred - work
    has_work = bool(np.ptp(work) > 0)  # one size (a single task, or no work columns): work is a constant
    design = np.c_[h, work, np.ones_like(h)] if has_work else np.c_[h, np.ones_like(h)]
    coef = np.linalg.lstsq(design, y, rcond=None)[0]
    scale = max(float(coef[0]), MIN_SCALE)
    if scale != float(coef[0]):  # refit the rest with the scale held
        design = design[:, 1:]
        coef = np.r_[scale, np.linalg.lstsq(design, y - scale * h, rcond=None)[0]]
    if has_work:
        return Calibration(scale, float(coef[1]), float(coef[2]), len(y))
    return Calibration(scale, 1.0, float(coef[1] - np.mean(work)), len(y))


def item_log_work(model: Any, items: Sequence[Any]) -> np.ndarray:
    """`log_work` of each kernel-dataset item (or PyG `Data`) as `model` computes it ([N]; zeros without work)."""
    from tvm_cost.models.base import graph_log_work

    config = model.config
    return np.array([float(graph_log_work(config, d).reshape(-1)[0]) for d in items], np.float64)

