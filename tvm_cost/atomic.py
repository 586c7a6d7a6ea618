"""Atomic file writes: a temporary file of this process beside the target, renamed over it when complete.

Readers never see half a file, an interrupted write leaves the old file in place, and two processes writing the same
path (two collections or trainings side by side) never rename each other's temporary file away.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


@contextmanager
def atomic_open(path: str | Path, mode: str = "w", *, durable: bool = False) -> Iterator[IO[Any]]:
    """A file to write `path`'s new content to (text mode is UTF-8); renamed over `path` when the block ends
    without an error, removed when it raises. `durable` fsyncs the content before the rename (progress files
    that must survive a power cut); without it a crash may lose the new content, never the old file."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open: mode {mode!r} is not 'w' or 'wb'")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8") as f:
            yield f
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide shared data from other users
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_json(path: str | Path, obj: Any, *, durable: bool = True) -> None:
    """`obj` as indented, key-sorted JSON at `path`, written atomically (fsynced unless `durable` is False)."""
    with atomic_open(path, durable=durable) as f:
        json.dump(obj, f, indent=1, sort_keys=True)
