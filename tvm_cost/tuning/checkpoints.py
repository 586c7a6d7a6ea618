"""Where `GNNCostModel` finds its weights: checkpoints shipped in the package, one per target name."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

CHECKPOINT_DIR = Path(__file__).resolve().parent.parent / "checkpoints"
"""``tvm_cost/checkpoints/``: ``<target name>.safetensors`` + ``.json`` (see `tvm_cost.train.save_checkpoint`)."""
TIMES_SUFFIX = "-times"
"""``<checkpoint><TIMES_SUFFIX>``: a checkpoint's times member (`tvm-cost train`), never a target's checkpoint."""


def target_name(target: Any) -> str:
    """The short name of a target (``llvm-2core``, ``cuda-sm90`` ...) that names folders and checkpoints.

    Args:
        target: A `tvm.target.Target`, or anything `tvm_cost.targets.resolve_target` accepts.
    """
    from tvm_cost.targets import resolve_target

    if hasattr(target, "export") and hasattr(target, "kind"):  # a tvm.target.Target
        target = {str(k): v for k, v in target.export().items()}
    return resolve_target(target).name


def shipped_checkpoint(name: str, *, directory: Path | None = None, suffix: str = ".safetensors",
                       warn: bool = True) -> Path | None:
    """The shipped checkpoint (``<name><suffix>``) for target `name`, or None.

    An exact name match wins; otherwise the closest one of the same family (``llvm-*`` or ``cuda-*``; for CPUs the
    nearest core count) is used with a warning (unless `warn` is False), since the target descriptors are model
    inputs and a neighbour extrapolates better than an untrained model guesses.
    """
    directory = CHECKPOINT_DIR if directory is None else directory
    for alias in (name, re.sub(r"(\d)a$", r"\1", name)):  # cuda-sm90a (the H100 tag) -> cuda-sm90
        exact = directory / f"{alias}{suffix}"
        if exact.is_file():
            return exact
    family = name.split("-", 1)[0]
    found = sorted(p for p in directory.glob(f"{family}-*{suffix}")
                   if not p.name.removesuffix(suffix).endswith(TIMES_SUFFIX)) if directory.is_dir() else []
    if not found:
        return None

    def distance(path: Path) -> tuple[float, str]:
        digits = "".join(ch for ch in path.name.removesuffix(suffix) if ch.isdigit())
        mine = "".join(ch for ch in name if ch.isdigit())
        gap = abs(int(digits) - int(mine)) if digits and mine else float("inf")
        return gap, path.name

    best = min(found, key=distance)
    if warn:
        log.warning("no shipped checkpoint for target %s; using the one for %s", name,
                    best.name.removesuffix(suffix))
    return best
