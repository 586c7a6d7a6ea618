"""Atomic writes of ``.npz`` cache entries, safe when several processes build the same cache at once."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np


def save_npz_atomic(path: Path, arrays: dict[str, Any]) -> None:
    """Write `arrays` to `path` through a temporary file of this process only, then rename it into place: an
    interrupted write leaves no half-written entry, and two processes featurizing the same folder (two trainings
    side by side) never rename each other's file away."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem + ".", suffix=".tmp.npz")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide a shared cache from other users
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
