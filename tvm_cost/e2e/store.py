"""Append-only JSON-lines store of end-to-end measurements: one line per configuration, written whole and flushed,
so an interrupted run loses at most the line being written and a rerun skips what is done."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tvm_cost.collect.records import iter_json_lines


class E2EStore:
    """Records in ``path`` (``.jsonl``), keyed by ``key`` (model spec + schedule source).

    A broken line (a run killed mid-write) is skipped with a warning naming the file and line, and is never
    counted as done, so the configuration is measured again.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def records(self) -> Iterator[dict[str, Any]]:
        if not self.path.exists():
            return
        for _, record in iter_json_lines(self.path):  # the tuning-log reader: warns about broken lines
            yield record

    def done_keys(self) -> set[str]:
        return {r["key"] for r in self.records() if "key" in r}

    def append(self, record: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(record, sort_keys=True)
        with self.path.open("a+b") as f:
            f.seek(0, os.SEEK_END)
            if f.tell() > 0:  # a killed writer may have left a line without its newline: end it first
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":
                    f.write(b"\n")
            f.write(text.encode() + b"\n")
            f.flush()
            os.fsync(f.fileno())
