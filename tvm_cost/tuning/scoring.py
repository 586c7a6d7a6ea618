"""Small pieces shared by the cost models: the score rule, torch thread scoping, errors on one line, FFI glue."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch


def scores_from_log_latency(pred: np.ndarray, *, temperature: float = 1.0) -> np.ndarray:
    """``exp((min(pred) - pred) / temperature)``: relative predicted throughput in (0, 1], float64.

    Shapes:
        pred: [n] predicted natural-log latencies -> [n].
    """
    pred = np.asarray(pred, np.float64)
    if pred.size == 0:
        return pred
    return np.exp(np.clip((pred.min() - pred) / temperature, -700.0, 0.0))


@contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Run the body with `n` torch intra-op threads (None: unchanged), then restore the previous count."""
    if n is None:
        yield
        return
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def one_line(err: BaseException) -> str:
    """``Type: last line of the message`` (TVM errors carry a traceback before theirs), at most 300 characters."""
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[-1] if text else ''}"[:300]


def python_side_save_load(cls: Any) -> Any:
    """Let Python callers of `save`/`load` on a `derived_object` class skip the FFI round trip.

    Through the FFI a `TvmCostError` raised in `load` reaches the caller as a RuntimeError; called directly it
    arrives as itself. MetaSchedule's C++ side still calls the same Python methods. Returns `cls`.
    """
    for name in ("load", "save"):
        def method(self: Any, *args: Any, _name: str = name) -> Any:
            return getattr(self._inst, _name)(*args)

        method.__name__ = name
        method.__doc__ = getattr(cls._cls, name).__doc__
        setattr(cls, name, method)
    return cls
