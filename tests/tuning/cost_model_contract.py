"""The cost-model contract MetaSchedule relies on, as one reusable check (applied to every cost model here)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def scores(model: Any, context: Any, candidates: list[Any]) -> np.ndarray:
    """Predict through the FFI, the way MetaSchedule's C++ search calls it."""
    out = model.predict(context, candidates)
    assert isinstance(out, np.ndarray) and out.dtype == np.float64 and out.shape == (len(candidates),)
    return out


def assert_cost_model_contract(make: Callable[[], Any], context: Any, candidates: list[Any], results: list[Any],
                               tmp_path: Path, *, rtol: float = 1e-6) -> Any:
    """Check a cost model kind built by `make` (a fresh instance per call); return the updated model.

    - predict: float64 [n], finite, strictly positive (MetaSchedule clamps negatives to 0);
    - permuting the candidates permutes the scores;
    - save -> load into a fresh instance -> same predictions, for the untrained model and after an update;
    - update with measured results works, and an empty predict/update is fine.
    """
    model = make()
    base = scores(model, context, candidates)
    assert np.isfinite(base).all() and (base > 0).all()
    perm = np.random.default_rng(0).permutation(len(candidates))
    np.testing.assert_allclose(scores(model, context, [candidates[i] for i in perm]), base[perm], rtol=rtol)
    # (TVM's own FFI predict cannot take 0 candidates -- NULL buffer -- so the empty call goes to the Python side)
    assert getattr(model, "_inst", model).predict(context, []).shape == (0,)

    model.save(str(tmp_path / "untrained"))
    other = make()
    other.load(str(tmp_path / "untrained"))
    np.testing.assert_allclose(scores(other, context, candidates), base, rtol=rtol)

    half = len(candidates) // 2
    model.update(context, candidates[:half], results[:half])
    model.update(context, candidates[half:], results[half:])
    model.update(context, [], [])
    after = scores(model, context, candidates)
    assert np.isfinite(after).all() and (after > 0).all()
    model.save(str(tmp_path / "updated"))
    other = make()
    other.load(str(tmp_path / "updated"))
    np.testing.assert_allclose(scores(other, context, candidates), after, rtol=rtol)
    return model
