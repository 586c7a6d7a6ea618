"""`tvm_cost.train.calibration`: the affine map from a ranking-trained model's log-latency to real times, on
SYNTHETIC predictions and latencies."""

from __future__ import annotations

import numpy as np
import pytest

from tvm_cost.train import Calibration, fit_calibration
from tvm_cost.train.calibration import MIN_SCALE


def _synthetic(seed: int = 0, n: int = 400) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Tasks of different sizes whose predictions spread twice as wide as the truth within each task."""
    rng = np.random.default_rng(seed)
    work = np.repeat(rng.uniform(10.0, 20.0, n // 20), 20)
    truth = rng.normal(0.0, 0.5, n)  # log latency per unit of work
    log_ms = 0.9 * work - 12.0 + truth
    pred = work + 2.0 * truth + 0.3  # stretched 2x, shifted
    return pred, work, np.exp(log_ms)


def test_fit_recovers_the_stretch_and_the_work_exponent():
    pred, work, latency = _synthetic()
    cal = fit_calibration(pred, work, latency)
    assert cal.scale == pytest.approx(0.5) and cal.work == pytest.approx(0.9) and cal.records == len(pred)
    np.testing.assert_allclose(cal.apply(pred, work), np.log(latency), atol=1e-9)
    assert np.abs(pred - np.log(latency)).max() > 1.0  # the uncalibrated times were far off


def test_a_positive_scale_keeps_the_order_within_a_task():
    pred, work, latency = _synthetic(seed=1)
    out = Calibration(scale=0.3, work=0.7, offset=-5.0).apply(pred, work)
    for task_work in np.unique(work):
        same = work == task_work
        assert (np.argsort(out[same]) == np.argsort(pred[same])).all()


def test_a_fit_that_would_invert_the_order_is_held_at_the_smallest_scale():
    pred, work, latency = _synthetic(seed=2)
    cal = fit_calibration(work - (pred - work), work, latency)  # predictions anti-correlated with the truth
    assert cal.scale == MIN_SCALE


def test_without_work_columns_scale_and_offset_are_fitted():
    pred = np.linspace(-2.0, 2.0, 50)
    cal = fit_calibration(pred, np.zeros(50), np.exp(0.25 * pred + 1.0))
    assert (cal.scale, cal.work, cal.offset) == pytest.approx((0.25, 1.0, 1.0))
    assert fit_calibration(pred[:2], np.zeros(2), np.ones(2)) == Calibration()  # too few: identity


def test_dict_round_trip_and_bad_values_refused():
    cal = Calibration(scale=0.4, work=1.1, offset=-3.0, records=7)
    assert Calibration.from_dict(cal.to_dict()) == cal
    assert Calibration.from_dict(None) == Calibration()  # a checkpoint from before calibrations: identity
    for bad in ({"scale": 0.0, "work": 1.0, "offset": 0.0}, {"scale": "x", "work": 1, "offset": 0},
                {"scale": 1.0, "work": float("nan"), "offset": 0.0}, {"work": 1.0, "offset": 0.0}):
        with pytest.raises(ValueError, match="bad calibration"):
            Calibration.from_dict(bad)
