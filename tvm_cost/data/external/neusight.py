"""Loaders for the NeuSight GPU data (sitar-lab/NeuSight, commit 6945927, MIT License).

NeuSight (Lee et al., ASPLOS 2025, https://arxiv.org/abs/2407.13853) measured single PyTorch 2.1 ops (cuDNN /
cuBLAS kernels, CUDA 12.1, cuDNN 8.9.2) and whole transformer models on many GPUs. ``root`` below is the
``neusight`` folder; the layout is:

``data/dataset/{train,test}/device_configs/<GPU_with_underscores>.json`` -- one GPU each, keys ``Device``
    (name with spaces, as in the op tables), ``Dev_Mem`` (GB), ``Mem_Bw`` (GB/s), ``Num_Sm``, ``Core_Per_SM``,
    ``Freq`` (MHz), ``SingleFLOPs`` (FP32 GFLOP/s), ``L2Cache`` (MB). Read by :func:`load_gpu_specs`.

``data/dataset/train/collect/<op>/p2.1.0/<GPU name>.csv.gz`` -- per-op latencies on Tesla P4, P100, T4, V100
    and A100; ops ``add addu bmm conv div divu gelu linear ln mul mulu pow powu relu softmax tanh`` (``*u``:
    tensor-scalar variants). ``data/dataset/test/<table>.csv.gz`` -- held-out rows on up to 8 GPUs incl.
    H100 and L4; tables ``bmm linear elem ln softmax vec`` (vec = elem + ln + softmax) and ``habitat`` (same
    rows as vec). Columns of both, read by :func:`load_op_table`:

    - ``OPName``; ``Latency`` (ms); ``Device`` (GPU name); ``Torch Version`` (p2.1.0); ``CUDNN Version`` (8902);
      ``CUDA Version`` (cu121)
    - ``Kernel Name`` (main kernel); ``Kernels`` (``;``-separated list of all kernels launched, optional)
    - ``Warps per SM``, ``Blocks per SM`` (of the main kernel's launch), ``Grid x/y/z``, ``Block x/y/z``
    - the op's dimensions, all integers: ``B,H`` (element-wise, ln, softmax: rows x hidden), ``B,M,N,K``
      (bmm: B batched (M,K)x(K,N); linear: (B*M,K)x(K,N)), ``B,Input_Channel,Output_Channel,Kernel_Szie
      [sic],Input_Size,Stride,Padding`` (conv; renamed ``Kernel_Size`` here)
    - ``large`` (optional, ``True``/``False``): rows added to cover large shapes.

``label/<GPU_with_underscores>/<model>-<inf|train>-<seq>-<batch>[-<variant>].{json,csv.gz}`` -- end-to-end
    labels of transformer models; see :mod:`.neusight_labels`.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from tvm_cost.data.external._csvio import parse_number, read_csv, require_dir
from tvm_cost.data.external.neusight_labels import NeuSightLabel, TraceNode, load_labels, load_trace
from tvm_cost.errors import TvmCostError

__all__ = [
    "GpuSpec",
    "NeuSightLabel",
    "OpRecord",
    "TraceNode",
    "gpu_key",
    "load_collected_ops",
    "load_gpu_specs",
    "load_labels",
    "load_op_table",
    "load_test_ops",
    "load_trace",
]

logger = logging.getLogger(__name__)

_DATASET = Path("data") / "dataset"
_SPEC_KEYS = {
    "memory_gb": "Dev_Mem",
    "bandwidth_gbs": "Mem_Bw",
    "num_sms": "Num_Sm",
    "cores_per_sm": "Core_Per_SM",
    "clock_mhz": "Freq",
    "fp32_gflops": "SingleFLOPs",
    "l2_mb": "L2Cache",
}
# Non-dimension columns of the op tables; every other column is an integer op dimension.
_META_COLUMNS = frozenset(
    ["OPName", "Latency", "Device", "Torch Version", "CUDNN Version", "Kernel Name", "Warps per SM",
     "Blocks per SM", "Grid x", "Grid y", "Grid z", "Block x", "Block y", "Block z", "CUDA Version",
     "Kernels", "large"]  # fmt: skip
)
_REQUIRED = ("OPName", "Latency", "Device", "Kernel Name", "Warps per SM", "Blocks per SM",
             "Grid x", "Grid y", "Grid z", "Block x", "Block y", "Block z")  # fmt: skip
_RENAME = {"Kernel_Szie": "Kernel_Size"}


@dataclass(frozen=True, slots=True)
class GpuSpec:
    """A GPU descriptor, as NeuSight feeds it to its predictor.

    Attributes:
        name: GPU name as in the op tables' ``Device`` column (``"NVIDIA H100 80GB HBM3"``).
        memory_gb: Device memory, GB.
        bandwidth_gbs: Peak memory bandwidth, GB/s.
        num_sms: Streaming multiprocessors.
        cores_per_sm: FP32 cores per SM.
        clock_mhz: Boost clock, MHz.
        fp32_gflops: Peak single-precision throughput, GFLOP/s.
        l2_mb: L2 cache, MB.
    """

    name: str
    memory_gb: float
    bandwidth_gbs: float
    num_sms: int
    cores_per_sm: int
    clock_mhz: float
    fp32_gflops: float
    l2_mb: float


@dataclass(frozen=True, slots=True)
class OpRecord:
    """One measured op from a NeuSight op table.

    Attributes:
        op: Op name (``OPName``: ``bmm``, ``conv``, ``addu`` ...).
        gpu: GPU name (``Device``).
        latency_ms: Measured latency, ms.
        dims: The op's dimensions in column order (``{"B": 8, "M": 64, "N": 64, "K": 32}``).
        kernel_name: Main CUDA kernel.
        kernels: All kernels launched, in order (empty where the table has no ``Kernels`` column).
        warps_per_sm: Warps per SM of the main kernel's launch.
        blocks_per_sm: Thread blocks per SM of the main kernel's launch.
        grid: Grid size (x, y, z).
        block: Block size (x, y, z).
        large: The ``large`` flag where present, else None.
        versions: ``(torch, cudnn, cuda)`` as written (``("p2.1.0", "8902", "cu121")``).
    """

    op: str
    gpu: str
    latency_ms: float
    dims: dict[str, int]
    kernel_name: str
    kernels: tuple[str, ...]
    warps_per_sm: float
    blocks_per_sm: float
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    large: bool | None = None
    versions: tuple[str, str, str] = field(default=("", "", ""))


def gpu_key(name: str) -> str:
    """Normalizes a GPU name so ``"Tesla_P4"`` (folder form) and ``"Tesla P4"`` (table form) compare equal."""
    return name.replace("_", " ").strip().lower()


def load_gpu_specs(root: str | Path, *, split: Literal["train", "test"] | None = None) -> dict[str, GpuSpec]:
    """Reads the GPU descriptors, keyed by GPU name (table form, with spaces).

    Args:
        root: The ``neusight`` folder.
        split: Read one split's ``device_configs`` only; by default both (they agree where they overlap).

    Raises:
        TvmCostError: On a missing folder, unreadable JSON, a missing key, or two files disagreeing.
        ValueError: On an unknown ``split``.
    """
    splits = _splits(split)
    specs: dict[str, GpuSpec] = {}
    for s in splits:
        folder = require_dir(Path(root) / _DATASET / s / "device_configs", "NeuSight device_configs")
        for path in sorted(folder.glob("*.json")):
            spec = _read_spec(path)
            if spec.name in specs and specs[spec.name] != spec:
                raise TvmCostError(f"descriptor of {spec.name!r} differs from another split's", path=path)
            specs[spec.name] = spec
    return specs


def load_op_table(path: str | Path, *, gpu: str | None = None, op: str | None = None) -> list[OpRecord]:
    """Reads one NeuSight op table (``.csv`` or ``.csv.gz``), optionally keeping one GPU and/or op.

    Raises:
        TvmCostError: On an unreadable file, a missing column, or a malformed number.
    """
    path = Path(path)
    want_gpu = None if gpu is None else gpu_key(gpu)
    out: list[OpRecord] = []
    for line, col, row in read_csv(path, _REQUIRED):
        if op is not None and row[col["OPName"]] != op:
            continue
        if want_gpu is not None and gpu_key(row[col["Device"]]) != want_gpu:
            continue
        out.append(_op_record(path, line, col, row))
    return out


def load_collected_ops(root: str | Path, op: str, *, gpu: str | None = None) -> list[OpRecord]:
    """Reads the training collection of one op (``data/dataset/train/collect/<op>/*/<GPU>.csv.gz``).

    Raises:
        ValueError: If ``op`` has no collection folder; the message lists the ops that do.
        TvmCostError: If the folder is missing or a file is malformed.
    """
    base = require_dir(Path(root) / _DATASET / "train" / "collect", "NeuSight collect")
    choices = sorted(p.name for p in base.iterdir() if p.is_dir())
    if op not in choices:
        raise ValueError(f"unknown NeuSight op {op!r}; choices: {', '.join(choices)}")
    files = sorted((base / op).glob("*/*.csv*"))
    if gpu is not None:
        files = [f for f in files if gpu_key(f.name.split(".csv")[0]) == gpu_key(gpu)]
    return [rec for f in files for rec in load_op_table(f)]


def load_test_ops(root: str | Path, table: str, *, gpu: str | None = None) -> list[OpRecord]:
    """Reads one held-out table (``data/dataset/test/<table>.csv[.gz]``).

    Raises:
        ValueError: If no such table exists; the message lists the tables that do.
        TvmCostError: If the folder is missing or the file is malformed.
    """
    base = require_dir(Path(root) / _DATASET / "test", "NeuSight test")
    tables = {p.name.split(".csv")[0]: p for p in base.glob("*.csv*") if p.is_file()}
    if table not in tables:
        raise ValueError(f"unknown NeuSight test table {table!r}; choices: {', '.join(sorted(tables))}")
    return load_op_table(tables[table], gpu=gpu)


def _splits(split: str | None) -> tuple[str, ...]:
    if split is None:
        return ("train", "test")
    if split not in ("train", "test"):
        raise ValueError(f"unknown split {split!r}; choices: train, test")
    return (split,)


def _read_spec(path: Path) -> GpuSpec:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise TvmCostError(f"cannot read GPU descriptor: {err}", path=path) from err
    if not isinstance(raw, dict) or not isinstance(raw.get("Device"), str):
        raise TvmCostError("GPU descriptor must be a JSON object with a 'Device' string", path=path)
    values: dict[str, float | int] = {}
    for attr, key in _SPEC_KEYS.items():
        v = raw.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise TvmCostError(f"key {key!r} is {v!r}, expected a positive number", path=path)
        values[attr] = int(v) if attr in ("num_sms", "cores_per_sm") else float(v)
    return GpuSpec(name=raw["Device"], **values)  # type: ignore[arg-type]


def _op_record(path: Path, line: int, col: dict[str, int], row: list[str]) -> OpRecord:
    def num(column: str, kind: type[int] | type[float]) -> int | float:
        return parse_number(row[col[column]], kind, path=path, line=line, column=column)

    latency = float(num("Latency", float))
    if not (math.isfinite(latency) and latency > 0):
        raise TvmCostError(f"line {line}: Latency {latency} is not a positive number", path=path)
    dims = {_RENAME.get(c, c): int(num(c, int)) for c in col if c not in _META_COLUMNS}
    large = row[col["large"]].strip().lower() if "large" in col else None
    if large not in (None, "true", "false"):
        raise TvmCostError(f"line {line}: column 'large' is {large!r}, expected True/False", path=path)
    return OpRecord(
        op=row[col["OPName"]],
        gpu=row[col["Device"]],
        latency_ms=latency,
        dims=dims,
        kernel_name=row[col["Kernel Name"]],
        kernels=tuple(k for k in row[col["Kernels"]].split(";") if k) if "Kernels" in col else (),
        warps_per_sm=float(num("Warps per SM", float)),
        blocks_per_sm=float(num("Blocks per SM", float)),
        grid=(int(num("Grid x", int)), int(num("Grid y", int)), int(num("Grid z", int))),
        block=(int(num("Block x", int)), int(num("Block y", int)), int(num("Block z", int))),
        large=None if large is None else large == "true",
        versions=(
            _get(row, col, "Torch Version"),
            _get(row, col, "CUDNN Version"),
            _get(row, col, "CUDA Version"),
        ),
    )


def _get(row: list[str], col: dict[str, int], column: str) -> str:
    return row[col[column]] if column in col else ""
