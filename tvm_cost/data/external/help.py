"""Loader for the HELP latency dataset (HayeonLee/HELP, commit 45f70eb, MIT License).

HELP (Lee et al., NeurIPS 2021, https://arxiv.org/abs/2106.08630) measured every network of three NAS search
spaces on many devices, with PyTorch (cuDNN on GPUs), not with TVM kernels. Two files, both ``csv.gz``:

``help_archs.csv.gz`` -- columns ``space,arch_index,arch``:
    ``space`` is ``nasbench201`` (15,625 cell strings, see :mod:`.nasbench201`), ``fbnet`` (5,000 JSON lists of
    22 block choices) or ``ofa`` (5,000 JSON dicts of ks/e/d/r). ``arch_index`` counts from 0 per space.

``help_lat.csv.gz`` -- columns ``space,arch_index,device,latency_ms`` (616,875 rows):
    ``device`` is a GPU with the batch size after the last underscore (``1080ti_32``, ``titan_rtx_256``) or
    another device without one (``gold_6226``, ``pixel3``, ``raspi4``, ``essential_ph_1``, ``fpga``, ...).

Caveat: at batch 1 the latencies of these small networks are dominated by framework overhead.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tvm_cost.data.external._csvio import parse_number, read_csv, require_dir, require_file
from tvm_cost.errors import TvmCostError

__all__ = [
    "HELP_GPUS",
    "HELP_SPACES",
    "HelpRecord",
    "help_latency_matrix",
    "load_help",
    "load_help_archs",
    "parse_help_device",
]

logger = logging.getLogger(__name__)

HELP_SPACES = ("nasbench201", "fbnet", "ofa")
# Device names that carry a batch size suffix. titan_xp (OFA) and titanxp (NAS-Bench-201, FBNet) are the same
# GPU model measured by different groups; they are kept apart.
HELP_GPUS = ("1080ti", "2080ti", "titan_rtx", "titanx", "titanxp", "titan_xp", "v100")
ARCHS_FILE = "help_archs.csv.gz"
LATENCY_FILE = "help_lat.csv.gz"


@dataclass(frozen=True, slots=True)
class HelpRecord:
    """One measured latency.

    Attributes:
        space: Search space, one of :data:`HELP_SPACES`.
        arch_index: Index of the network in its space.
        arch: The network's encoding (a NAS-Bench-201 cell string, or JSON for FBNet / OFA).
        device: Device name without the batch suffix (``1080ti``, ``gold_6226``).
        batch: Batch size for GPUs; None for devices whose name has no batch suffix.
        latency_ms: Measured latency in milliseconds.
    """

    space: str
    arch_index: int
    arch: str
    device: str
    batch: int | None
    latency_ms: float

    @property
    def device_id(self) -> str:
        """The device field as written in the file (``1080ti_32``)."""
        return self.device if self.batch is None else f"{self.device}_{self.batch}"


def parse_help_device(device_id: str) -> tuple[str, int | None]:
    """Splits a HELP device field into (name, batch): ``"titan_rtx_32" -> ("titan_rtx", 32)``.

    Only the GPUs in :data:`HELP_GPUS` carry a batch suffix; other names come back whole with None, so
    ``essential_ph_1`` (a phone) and ``gold_6226`` (a CPU) are not misread as batch sizes.
    """
    name, sep, tail = device_id.rpartition("_")
    if sep and name in HELP_GPUS and tail.isdigit():
        return name, int(tail)
    return device_id, None


def load_help_archs(folder: str | Path, *, space: str | None = None) -> dict[tuple[str, int], str]:
    """Reads ``help_archs.csv.gz`` into ``{(space, arch_index): arch}``.

    Raises:
        TvmCostError: If the folder or file is missing, or a row is malformed or duplicated.
        ValueError: If ``space`` is not one of :data:`HELP_SPACES`.
    """
    _check_choice("space", space, HELP_SPACES)
    path = require_file(require_dir(folder, "HELP") / ARCHS_FILE, "HELP architectures")
    archs: dict[tuple[str, int], str] = {}
    for line, col, row in read_csv(path, ("space", "arch_index", "arch")):
        row_space = row[col["space"]]
        if space is not None and row_space != space:
            continue
        index = int(parse_number(row[col["arch_index"]], int, path=path, line=line, column="arch_index"))
        arch = row[col["arch"]]
        if not row_space or not arch or index < 0:
            raise TvmCostError(f"line {line}: empty space/arch or negative arch_index", path=path)
        if (row_space, index) in archs:
            raise TvmCostError(f"line {line}: duplicate arch {row_space}/{index}", path=path)
        archs[(row_space, index)] = arch
    return archs


def load_help(
    folder: str | Path,
    *,
    space: str | None = None,
    device: str | Iterable[str] | None = None,
    batch: int | None = None,
) -> list[HelpRecord]:
    """Loads HELP latencies joined with their architectures, in file order.

    Args:
        folder: The folder holding ``help_archs.csv.gz`` and ``help_lat.csv.gz``.
        space: Keep one search space only (``"nasbench201"``, ``"fbnet"``, ``"ofa"``).
        device: Keep these devices; each entry is a name (``"1080ti"``: all batch sizes) or a full field
            (``"1080ti_32"``: that batch only).
        batch: Keep this batch size only (drops devices without one).

    Raises:
        TvmCostError: If a file is missing or unreadable, a row is malformed, a latency is not a positive
            finite number, or a latency row names an architecture absent from ``help_archs.csv.gz``.
        ValueError: If ``space`` is not one of :data:`HELP_SPACES`.
    """
    archs = load_help_archs(folder, space=space)
    path = require_file(Path(folder) / LATENCY_FILE, "HELP latency")
    wanted = _device_filter(device)
    out: list[HelpRecord] = []
    for line, col, row in read_csv(path, ("space", "arch_index", "device", "latency_ms")):
        row_space = row[col["space"]]
        if space is not None and row_space != space:
            continue
        name, row_batch = parse_help_device(row[col["device"]])
        if batch is not None and row_batch != batch:
            continue
        if wanted is not None and name not in wanted and f"{name}_{row_batch}" not in wanted:
            continue
        index = int(parse_number(row[col["arch_index"]], int, path=path, line=line, column="arch_index"))
        latency = float(parse_number(row[col["latency_ms"]], float, path=path, line=line, column="latency_ms"))
        if not (math.isfinite(latency) and latency > 0):
            raise TvmCostError(f"line {line}: latency_ms {latency} is not a positive number", path=path)
        arch = archs.get((row_space, index))
        if arch is None:
            raise TvmCostError(f"line {line}: {row_space}/{index} is not in {ARCHS_FILE}", path=path)
        out.append(HelpRecord(row_space, index, arch, name, row_batch, latency))
    logger.debug("loaded %d HELP records from %s", len(out), path)
    return out


def help_latency_matrix(records: Iterable[HelpRecord]) -> tuple[list[tuple[str, int]], list[str], np.ndarray]:
    """Pivots records into an (architecture x device) latency matrix, as HELP's meta-learning uses it.

    Returns:
        ``(archs, device_ids, latency_ms)``: sorted ``(space, arch_index)`` rows, sorted device fields as
        columns, and a float64 matrix with NaN where a pair was not measured.

    Shapes:
        latency_ms: (len(archs), len(device_ids))
    """
    records = list(records)
    archs = sorted({(r.space, r.arch_index) for r in records})
    devices = sorted({r.device_id for r in records})
    row = {a: i for i, a in enumerate(archs)}
    column = {d: j for j, d in enumerate(devices)}
    matrix = np.full((len(archs), len(devices)), np.nan)
    for r in records:
        matrix[row[(r.space, r.arch_index)], column[r.device_id]] = r.latency_ms
    return archs, devices, matrix


def _device_filter(device: str | Iterable[str] | None) -> frozenset[str] | None:
    if device is None:
        return None
    return frozenset([device] if isinstance(device, str) else device)


def _check_choice(what: str, value: str | None, choices: tuple[str, ...]) -> None:
    if value is not None and value not in choices:
        raise ValueError(f"unknown {what} {value!r}; choices: {', '.join(choices)}")
