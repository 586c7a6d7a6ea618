"""Read MetaSchedule JSON databases (``.json`` or ``.json.gz``) without TVM and without crashing on broken lines.

The on-disk format is TVM's own: a workload file with one ``[shash, base64 IRModule]`` line per workload, and a
tuning-record file with one ``[workload_index, [trace, run_secs, target, args_info]]`` line per record. TVM's
`JSONDatabase` refuses a whole database when one line is cut short (a killed writer); these readers skip such a
line with a warning naming the file and line number.
"""

from __future__ import annotations

import gzip
import json
import logging
import math
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

log = logging.getLogger(__name__)

#: TVM's marker for a failed build or run.
FAILED_RUN_SECS = 1e10


@dataclass(frozen=True)
class Record:
    """One tuning record.

    Attributes:
        workload_index: Line number (0-based) of its workload in the workload file.
        workload_shash: Structural hash of the workload (decimal string, as TVM writes it); None without a
            workload file.
        workload: The base64 IRModule text (decode with `tvm.ir.load_json` after base64), or None.
        trace: The trace JSON ``[instructions, decisions]``.
        run_secs: Measured seconds per repeat; None for a failed candidate.
        target: The target JSON.
        args_info: The argument descriptors.
    """

    workload_index: int
    workload_shash: str | None
    workload: str | None
    trace: Any
    run_secs: list[float] | None
    target: Any
    args_info: Any

    @property
    def failed(self) -> bool:
        """True for a build or run failure (no latency)."""
        return self.run_secs is None


def to_py(value: Any) -> Any:
    """Convert FFI containers (Array, Map, String, IntImm ...) to plain JSON-able Python values."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value if not isinstance(value, str) else str(value)
    if isinstance(value, Mapping):
        return {str(k): to_py(v) for k, v in value.items()}
    if isinstance(value, Sequence):
        return [to_py(v) for v in value]
    if hasattr(value, "value"):  # IntImm / FloatImm
        return value.value
    raise TypeError(f"cannot convert {type(value).__name__} to JSON")


def open_text(path: str | Path) -> IO[str]:
    """Open a ``.json`` or ``.json.gz`` file for reading text."""
    path = Path(path)
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def resolve(path: str | Path) -> Path:
    """`path` if it exists, else its ``.gz`` sibling if that exists, else `path`."""
    path = Path(path)
    if not path.exists() and path.suffix != ".gz":
        gz = path.with_name(path.name + ".gz")
        if gz.exists():
            return gz
    return path


def iter_json_lines(path: str | Path) -> Iterator[tuple[int, Any]]:
    """Yield (1-based line number, parsed JSON) for each good line; warn about broken ones."""
    path = resolve(path)
    with open_text(path) as f:
        try:
            for lineno, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    yield lineno, json.loads(line)
                except json.JSONDecodeError as err:
                    _warn(f"{path}:{lineno}: skipped a broken line ({err.msg})")
        except (EOFError, gzip.BadGzipFile, zlib.error) as err:  # a cut-short or damaged .gz
            _warn(f"{path}: stopped reading at a damaged end ({err})")


def _warn(message: str) -> None:
    log.warning(message)


def load_workloads(path: str | Path) -> list[tuple[str, str] | None]:
    """Workload lines in order: (shash, base64 module), or None where a line is broken (keeps indices)."""
    path = resolve(path)
    out: list[tuple[str, str] | None] = []
    for lineno, obj in iter_json_lines(path):
        out.extend([None] * (lineno - 1 - len(out)))
        ok = isinstance(obj, list) and len(obj) == 2
        out.append((str(obj[0]), str(obj[1])) if ok else None)
    return out


def parse_record(obj: Any) -> tuple[int, Any, list[float] | None, Any, Any]:
    """Split a record line into (workload index, trace, run_secs or None, target, args_info).

    Raises:
        ValueError: the line is not a tuning record.
    """
    if not (isinstance(obj, list) and len(obj) == 2 and isinstance(obj[0], int) and isinstance(obj[1], list)):
        raise ValueError("not a [workload_index, record] pair")
    body = obj[1] + [None] * (4 - len(obj[1]))
    trace, run_secs, target, args_info = body[:4]
    secs = None
    if run_secs:
        secs = [float(s) for s in run_secs]
        if any(s >= FAILED_RUN_SECS or not math.isfinite(s) for s in secs):
            secs = None
    return obj[0], trace, secs, target, args_info


def load_records(
    path: str | Path,
    workload_path: str | Path | None = None,
) -> Iterator[Record]:
    """Yield the records of a tuning-record file (``.json`` or ``.json.gz``).

    Failures (run_secs missing or TVM's 1e10 marker) come back with ``run_secs=None``, never as latencies.

    Args:
        path: The tuning-record file, or a tuning-log folder (its ``database_tuning_record.json[.gz]``).
        workload_path: Its workload file; defaults to the sibling named like TVM's
            (``*_tuning_record.json`` -> ``*_workload.json``). Missing: workloads are None.
    """
    path = Path(path)
    path = resolve(path / "database_tuning_record.json" if path.is_dir() else path)
    if workload_path is None:
        name = path.name.replace("tuning_record", "workload")
        workload_path = path.with_name(name) if name != path.name else None
    workloads = load_workloads(workload_path) if workload_path and resolve(workload_path).exists() else []
    for lineno, obj in iter_json_lines(path):
        try:
            index, trace, secs, target, args_info = parse_record(obj)
        except ValueError as err:
            _warn(f"{path}:{lineno}: skipped a malformed record ({err})")
            continue
        wl = workloads[index] if 0 <= index < len(workloads) else None
        yield Record(index, wl[0] if wl else None, wl[1] if wl else None, trace, secs, target, args_info)
