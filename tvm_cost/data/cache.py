"""Atomic writes of ``.npz`` cache entries, safe when several processes build the same cache at once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tvm_cost.atomic import atomic_open


def save_npz_atomic(path: Path, arrays: dict[str, Any]) -> None:
    """Write `arrays` to `path` atomically (`tvm_cost.atomic`): an interrupted write leaves no half-written entry,
    and two processes featurizing the same folder (two trainings side by side) never clash."""
    with atomic_open(path, "wb") as f:
        np.savez(f, **arrays)
