"""Shared reading of (optionally gzipped) CSV files with one-line errors naming the file and line."""

from __future__ import annotations

import csv
import gzip
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path

from tvm_cost.errors import TvmCostError

# What a truncated or corrupt gzip/CSV file can raise while it is being read.
_READ_ERRORS = (OSError, EOFError, zlib.error, UnicodeDecodeError, csv.Error)


def require_dir(path: str | Path, what: str) -> Path:
    """Returns ``path`` as a Path, or raises TvmCostError if it is not a folder."""
    p = Path(path)
    if not p.is_dir():
        raise TvmCostError(f"{what} folder not found", path=p)
    return p


def require_file(path: str | Path, what: str) -> Path:
    """Returns ``path`` as a Path, or raises TvmCostError if it is not a file."""
    p = Path(path)
    if not p.is_file():
        raise TvmCostError(f"{what} file not found", path=p)
    return p


def read_csv(path: Path, required: Sequence[str]) -> Iterator[tuple[int, dict[str, int], list[str]]]:
    """Yields ``(line_number, column_index, row)`` for each data row of a CSV or CSV.gz file.

    Args:
        path: The file; a ``.gz`` suffix means gzip.
        required: Columns the header must have; a missing one is an error.

    Raises:
        TvmCostError: On an unreadable file, a missing column, or a row whose width differs from the header.
    """
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            if header is None:
                raise TvmCostError("empty file, expected a CSV header", path=path)
            index = {name: i for i, name in enumerate(header)}
            missing = [c for c in required if c not in index]
            if missing:
                raise TvmCostError(f"missing column(s) {missing}; header is {header}", path=path)
            for row in reader:
                if len(row) != len(header):
                    raise TvmCostError(
                        f"line {reader.line_num}: {len(row)} fields, header has {len(header)}", path=path
                    )
                yield reader.line_num, index, row
    except _READ_ERRORS as err:
        raise TvmCostError(f"cannot read: {type(err).__name__}: {err}", path=path) from err


def parse_number(text: str, kind: type[int] | type[float], *, path: Path, line: int, column: str) -> int | float:
    """Parses one numeric field, or raises TvmCostError naming the file, line and column."""
    try:
        return kind(text)
    except ValueError:
        raise TvmCostError(
            f"line {line}: column {column!r} is {text!r}, expected {kind.__name__}", path=path
        ) from None
