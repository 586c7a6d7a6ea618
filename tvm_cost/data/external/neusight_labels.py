"""NeuSight end-to-end labels: measured latencies of whole transformer models, with torch.fx traces.

Files, under ``<neusight>/label/<GPU_with_underscores>/``, named
``<model>-<inf|train>-<seq_len>-<batch>[-<variant>]``:

``.json`` -- ``num_layer``, ``e2e_latency``, ``fw_latency``, ``bwall_latency`` (ms). ``e2e`` is the measured
    end-to-end time, ``fw`` its forward part, ``bwall`` backward + optimizer (0 for inference; both 0 where only
    e2e was measured). ``num_layer`` > 0 means the trace holds the model with a single transformer layer
    (``layer_0`` / ``h_0`` nodes) and the real model repeats that layer ``num_layer`` times; 0 means the trace,
    if any, is the whole model (``num_layer`` is null in two Switch files and read as 0). Variants: ``fusion``
    (inference with fused kernels), ``dp4`` / ``tp4`` / ``pp4_1`` (4-GPU data / tensor / pipeline parallel
    training); these have no trace. Summing the trace (layer nodes x ``num_layer``) gives less than
    ``e2e_latency``: gaps between kernels are only in the measured end-to-end time.

``.csv.gz`` or ``.csv`` (optional) -- one row per torch.fx node, columns ``op`` (placeholder, call_function,
    call_method, call_module, get_attr, output), ``target``, ``Name``, ``input_shapes`` (JSON list of shapes),
    ``output_shape`` (Python tuple), ``dtype`` (``torch.float32`` or empty), per-node ``latency`` (ms; one file
    names it ``e2e_latency``), ``fw_latency``, ``bw_latency``, ``acc_latency`` (ms), and torch.fx internals
    (``_args``, ``users``, ``meta`` ...) that are not loaded.

Models: ``bert_large``, ``gpt2_large``, ``gpt3_xl``, ``gpt3_27`` (2.7B), ``opt_13`` (1.3B), ``switchxl4`` /
``switch4`` (Switch Transformer); GPUs include H100, A100, V100, L4, T4, P100, P4 and AMD MI100/MI210/MI250.
"""

from __future__ import annotations

import ast
import json
import logging
import math
import re
from dataclasses import dataclass
from pathlib import Path

from tvm_cost.data.external._csvio import parse_number, read_csv, require_dir, require_file
from tvm_cost.errors import TvmCostError

__all__ = ["NeuSightLabel", "TraceNode", "load_labels", "load_trace"]

logger = logging.getLogger(__name__)

_NAME = re.compile(r"^(?P<model>\w+)-(?P<mode>inf|train)-(?P<seq>\d+)-(?P<batch>\d+)(?:-(?P<variant>\w+))?$")
_JSON_KEYS = ("num_layer", "e2e_latency", "fw_latency", "bwall_latency")
_TRACE_MS = ("fw_latency", "bw_latency", "acc_latency")


@dataclass(frozen=True, slots=True)
class NeuSightLabel:
    """One measured model configuration.

    Attributes:
        gpu: GPU name with spaces (``"NVIDIA H100 80GB HBM3"``), as in :class:`GpuSpec` and the op tables.
        model: Model name from the file name (``"bert_large"``).
        mode: ``"inf"`` or ``"train"``.
        seq_len: Sequence length.
        batch: Batch size.
        variant: ``"fusion"``, ``"dp4"``, ``"tp4"``, ``"pp4_1"`` or None for the plain single-GPU run.
        num_layer: Transformer layers the traced layer stands for (0: the trace is the whole model).
        e2e_latency_ms: Measured end-to-end latency, ms.
        fw_latency_ms: Forward part, ms (0 where not measured separately).
        bwall_latency_ms: Backward + optimizer part, ms (0 for inference or where not measured).
        json_path: The label file.
        trace_path: The per-node trace, or None where there is none.
    """

    gpu: str
    model: str
    mode: str
    seq_len: int
    batch: int
    variant: str | None
    num_layer: int
    e2e_latency_ms: float
    fw_latency_ms: float
    bwall_latency_ms: float
    json_path: Path
    trace_path: Path | None


@dataclass(frozen=True, slots=True)
class TraceNode:
    """One torch.fx node of a traced model with its measured latency.

    Attributes:
        name: Node name (``Name``).
        op: torch.fx opcode (``call_module``, ``call_function`` ...).
        target: Called module path or function, as written.
        input_shapes: Shapes of the tensor inputs.
        output_shape: Output shape, or None where the file has none.
        dtype: Output dtype (``"torch.float32"``), or ``""``.
        latency_ms: Total latency of the node (forward + backward + accumulation), ms.
        fw_latency_ms: Forward latency, ms.
        bw_latency_ms: Backward latency, ms.
        acc_latency_ms: Gradient-accumulation latency, ms.
    """

    name: str
    op: str
    target: str
    input_shapes: tuple[tuple[int, ...], ...]
    output_shape: tuple[int, ...] | None
    dtype: str
    latency_ms: float
    fw_latency_ms: float
    bw_latency_ms: float
    acc_latency_ms: float


def load_labels(
    root: str | Path,
    *,
    gpu: str | None = None,
    model: str | None = None,
    mode: str | None = None,
    variants: bool = True,
) -> list[NeuSightLabel]:
    """Reads the label JSON files under ``<root>/label``, sorted by (gpu, model, mode, seq_len, batch).

    Args:
        root: The ``neusight`` folder.
        gpu: Keep one GPU (``"NVIDIA H100 80GB HBM3"`` or its folder form with underscores).
        model: Keep one model (``"gpt2_large"``).
        mode: Keep ``"inf"`` or ``"train"``.
        variants: Also return fused / multi-GPU variants; False keeps plain single-GPU runs only.

    Raises:
        TvmCostError: If ``<root>/label`` is missing or a JSON file is malformed.
        ValueError: On an unknown ``mode``.
    """
    if mode not in (None, "inf", "train"):
        raise ValueError(f"unknown mode {mode!r}; choices: inf, train")
    base = require_dir(Path(root) / "label", "NeuSight label")
    want_gpu = None if gpu is None else gpu.replace("_", " ")
    out: list[NeuSightLabel] = []
    for path in sorted(base.glob("*/*.json")):
        match = _NAME.match(path.stem)
        if match is None:
            logger.warning("skipping %s: name is not <model>-<inf|train>-<seq>-<batch>[-<variant>]", path)
            continue
        gpu_name = path.parent.name.replace("_", " ")
        if want_gpu is not None and gpu_name != want_gpu:
            continue
        if (model is not None and match["model"] != model) or (mode is not None and match["mode"] != mode):
            continue
        if not variants and match["variant"] is not None:
            continue
        out.append(_read_label(path, gpu_name, match))
    out.sort(key=lambda r: (r.gpu, r.model, r.mode, r.seq_len, r.batch, r.variant or ""))
    return out


def load_trace(path: str | Path | NeuSightLabel) -> list[TraceNode]:
    """Reads a per-node trace (``.csv.gz``), given its path or a label that has one.

    Raises:
        TvmCostError: If the label has no trace, the file is missing or unreadable, or a row is malformed.
    """
    if isinstance(path, NeuSightLabel):
        if path.trace_path is None:
            raise TvmCostError("this label has no per-node trace", path=path.json_path)
        path = path.trace_path
    path = require_file(path, "NeuSight trace")
    required = ("op", "target", "Name", "input_shapes", "output_shape", "dtype") + _TRACE_MS
    out: list[TraceNode] = []
    for line, col, row in read_csv(path, required):
        latency_col = "latency" if "latency" in col else "e2e_latency"
        if latency_col not in col:
            raise TvmCostError("missing column 'latency'", path=path)
        ms = [_ms(row[col[c]], c, path, line) for c in (latency_col, *_TRACE_MS)]
        out.append(
            TraceNode(
                name=row[col["Name"]],
                op=row[col["op"]],
                target=row[col["target"]],
                input_shapes=_shapes(row[col["input_shapes"]], path, line),
                output_shape=_output_shape(row[col["output_shape"]], path, line),
                dtype=row[col["dtype"]],
                latency_ms=ms[0],
                fw_latency_ms=ms[1],
                bw_latency_ms=ms[2],
                acc_latency_ms=ms[3],
            )
        )
    return out


def _ms(text: str, column: str, path: Path, line: int) -> float:
    value = float(parse_number(text, float, path=path, line=line, column=column))
    if not (math.isfinite(value) and value >= 0):
        raise TvmCostError(f"line {line}: {column} is {value}, expected a latency >= 0", path=path)
    return value


def _read_label(path: Path, gpu: str, match: re.Match[str]) -> NeuSightLabel:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise TvmCostError(f"cannot read label: {err}", path=path) from err
    if not isinstance(raw, dict):
        raise TvmCostError("label must be a JSON object", path=path)
    if key_missing := [k for k in _JSON_KEYS if k not in raw]:
        raise TvmCostError(f"missing key(s) {key_missing}", path=path)
    if raw["num_layer"] is None:  # null in two Switch files that have no trace; 0 means "whole model"
        raw["num_layer"] = 0
    for key in _JSON_KEYS:
        v = raw[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise TvmCostError(f"key {key!r} is {v!r}, expected a number >= 0", path=path)
    if raw["e2e_latency"] <= 0:
        raise TvmCostError(f"e2e_latency is {raw['e2e_latency']}, expected > 0", path=path)
    traces = [t for t in (path.with_suffix(".csv.gz"), path.with_suffix(".csv")) if t.is_file()]
    return NeuSightLabel(
        gpu=gpu,
        model=match["model"],
        mode=match["mode"],
        seq_len=int(match["seq"]),
        batch=int(match["batch"]),
        variant=match["variant"],
        num_layer=int(raw["num_layer"]),
        e2e_latency_ms=float(raw["e2e_latency"]),
        fw_latency_ms=float(raw["fw_latency"]),
        bwall_latency_ms=float(raw["bwall_latency"]),
        json_path=path,
        trace_path=traces[0] if traces else None,
    )


def _shapes(text: str, path: Path, line: int) -> tuple[tuple[int, ...], ...]:
    try:
        value = json.loads(text)
        return tuple(tuple(int(d) for d in shape) for shape in value)
    except (ValueError, TypeError):
        raise TvmCostError(f"line {line}: input_shapes {text[:60]!r} is not a list of shapes", path=path) from None


def _output_shape(text: str, path: Path, line: int) -> tuple[int, ...] | None:
    if not text.strip():
        return None
    try:
        value = ast.literal_eval(text)  # a Python tuple such as "(8, 512)"; literal_eval runs no code
        return tuple(int(d) for d in value)
    except (ValueError, TypeError, SyntaxError):
        raise TvmCostError(f"line {line}: output_shape {text[:60]!r} is not a shape", path=path) from None
