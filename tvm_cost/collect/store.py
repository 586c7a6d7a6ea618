"""An append-only, resumable store of measured records in TVM's JSON database format.

One folder per target holds two MetaSchedule JSON databases: ``database_*.json`` (every candidate that ran, with
its latencies) and ``failures_*.json`` (candidates that failed to build or run, with ``run_secs`` null), plus
``progress.json``, a checkpoint written atomically after each committed batch: byte offsets of the four files and
per-task counters. Opening the store after a crash rolls it forward: complete lines written after the checkpoint
are kept and counted for the batch that was in flight, a cut-short last line is truncated with a warning. So a
killed collection loses no written record and, since each batch is committed once, duplicates none.
"""

from __future__ import annotations

import fcntl
import gzip
import hashlib
import json
import logging
import shutil
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from tvm_cost.atomic import atomic_open, atomic_write_json
from tvm_cost.collect.records import parse_record
from tvm_cost.errors import TvmCostError

log = logging.getLogger(__name__)

Kind = Literal["ok", "failed"]
Phase = Literal["random", "evolutionary", "other"]
DB_FILES: dict[str, tuple[str, str]] = {
    "ok": ("database_workload.json", "database_tuning_record.json"),
    "failed": ("failures_workload.json", "failures_tuning_record.json"),
}
ALL_DB_FILES = tuple(name for pair in DB_FILES.values() for name in pair)
PROGRESS_FILE = "progress.json"


@dataclass
class TaskProgress:
    """Counters of one task (keyed by workload shash) in ``progress.json``.

    `random` and `evolutionary` count committed records (measured + failed) of each phase; `other` counts records
    found without a known phase (e.g. a database written by another tool).
    """

    random: int = 0
    evolutionary: int = 0
    other: int = 0
    failed: int = 0
    build_errors: int = 0
    run_errors: int = 0
    duplicates: int = 0
    exhausted: list[str] = field(default_factory=list)

    @property
    def records(self) -> int:
        """All records of the task."""
        return self.random + self.evolutionary + self.other


def trace_key(trace: Any) -> bytes:
    """A short digest of a trace's JSON, to skip candidates measured before."""
    return hashlib.sha1(json.dumps(trace, separators=(",", ":"), sort_keys=True).encode()).digest()[:16]


class RecordStore:
    """The files of one target folder, opened by one writer at a time (a lock file enforces it).

    Args:
        root: The folder, e.g. ``tuning_logs/llvm-2core``; created if missing.
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.tasks: dict[str, TaskProgress] = {}
        self._offsets: dict[str, int] = {}
        self._inflight: dict[str, str] | None = None
        self._wl_index: dict[str, dict[str, int]] = {"ok": {}, "failed": {}}
        self._ok_lines: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self._keys: dict[str, set[bytes]] = defaultdict(set)
        self._lock: Any = None

    def open(self) -> "RecordStore":
        """Lock the folder, recover from an interrupted run and index the existing records."""
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock = open(self.root / ".lock", "w")  # noqa: SIM115  # held until close()
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._lock.close()
            raise TvmCostError("another collection is writing to this folder", path=self.root) from None
        for name in ALL_DB_FILES:
            self._decompress(name)
        saved = self._read_progress()
        self.tasks = {k: TaskProgress(**v) for k, v in saved.get("tasks", {}).items()}
        self._inflight = saved.get("inflight")
        offsets = saved.get("files", {})
        for name in ALL_DB_FILES:
            self._repair_tail(name, int(offsets.get(name, 0)))
        for kind, (wl_name, rec_name) in DB_FILES.items():
            self._index_workloads(kind, wl_name)
            self._index_records(kind, rec_name, int(offsets.get(rec_name, 0)))
        self._offsets = {name: self._size(name) for name in ALL_DB_FILES}
        self._write_progress()
        return self

    def close(self) -> None:
        """Release the folder lock."""
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def __enter__(self) -> "RecordStore":
        return self.open()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _size(self, name: str) -> int:
        path = self.root / name
        return path.stat().st_size if path.exists() else 0

    def _decompress(self, name: str) -> None:
        path, gz = self.root / name, self.root / (name + ".gz")
        if gz.exists() and path.exists():
            raise TvmCostError(f"both {name} and {name}.gz exist; keep one", path=self.root)
        if gz.exists():
            log.info("decompressing %s to resume collecting into it", gz)
            with gzip.open(gz, "rb") as src, atomic_open(path, "wb") as dst:
                shutil.copyfileobj(src, dst)
            gz.unlink()

    def _read_progress(self) -> dict[str, Any]:
        path = self.root / PROGRESS_FILE
        if not path.exists():
            if any(self._size(n) for n in ALL_DB_FILES):
                log.warning("%s: no %s; existing records count as phase 'other'", self.root, PROGRESS_FILE)
            return {}
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise TvmCostError(f"unreadable {PROGRESS_FILE} ({err.msg})", path=path) from None

    def _repair_tail(self, name: str, offset: int) -> None:
        """Keep complete, parseable lines after the checkpoint; truncate from the first broken one."""
        path, size = self.root / name, self._size(name)
        if size < offset:
            raise TvmCostError(f"{name} is shorter ({size} bytes) than {PROGRESS_FILE} says ({offset})",
                               path=self.root)
        if size == offset:
            return
        with open(path, "rb") as f:
            f.seek(offset)
            tail = f.read()
        good = 0
        for lineno, line in enumerate(tail.splitlines(keepends=True)):
            try:
                if not line.endswith(b"\n"):
                    raise ValueError("cut short")
                json.loads(line)
            except ValueError:
                log.warning("%s: dropping a broken line after byte %d (line %d past the checkpoint) left by an "
                            "interrupted run", path, offset + good, lineno + 1)
                with open(path, "r+b") as f:
                    f.truncate(offset + good)
                return
            good += len(line)

    def _index_workloads(self, kind: str, name: str) -> None:
        path = self.root / name
        if not path.exists():
            return
        with open(path, "rb") as f:
            for index, line in enumerate(f):
                self._wl_index[kind][str(json.loads(line)[0])] = index

    def _index_records(self, kind: str, name: str, checkpoint: int) -> None:
        path = self.root / name
        if not path.exists():
            return
        by_index = {i: s for s, i in self._wl_index[kind].items()}
        offset = 0
        with open(path, "rb") as f:
            for lineno, line in enumerate(f, start=1):
                try:
                    index, trace, _, _, _ = parse_record(json.loads(line))
                    shash = by_index[index]
                except (ValueError, KeyError) as err:
                    log.warning("%s:%d: skipped an unreadable record (%s)", path, lineno, err)
                    offset += len(line)
                    continue
                self._keys[shash].add(trace_key(trace))
                if kind == "ok":
                    self._ok_lines[shash].append((offset, len(line)))
                if offset >= checkpoint:  # written after the last checkpoint: roll forward
                    self._roll_forward(shash, kind)
                offset += len(line)

    def _roll_forward(self, shash: str, kind: str) -> None:
        prog = self.tasks.setdefault(shash, TaskProgress())
        phase = "other"
        if self._inflight and self._inflight.get("task") == shash:
            phase = self._inflight["phase"]
        setattr(prog, phase, getattr(prog, phase) + 1)
        prog.failed += kind == "failed"

    def progress(self, shash: str) -> TaskProgress:
        """The counters of a task (created empty on first use)."""
        return self.tasks.setdefault(shash, TaskProgress())

    def seen(self, shash: str, key: bytes) -> bool:
        """Whether a record with this trace key exists for the workload (measured or failed)."""
        return key in self._keys[shash]

    def ok_records(self, shash: str) -> list[Any]:
        """The parsed ``[workload_index, record]`` lines of a workload's measured records."""
        out: list[Any] = []
        path = self.root / DB_FILES["ok"][1]
        if not self._ok_lines[shash]:
            return out
        with open(path, "rb") as f:
            for offset, length in self._ok_lines[shash]:
                f.seek(offset)
                out.append(json.loads(f.read(length)))
        return out

    def begin(self, shash: str, phase: Phase) -> None:
        """Mark the (task, phase) whose batches come next, so recovery can count them."""
        if self._inflight != {"task": shash, "phase": phase}:
            self._inflight = {"task": shash, "phase": phase}
            self._write_progress()

    def commit(self, shash: str, phase: Phase, workload: list[str], records: list[tuple[Kind, Any]],
               **counters: int) -> None:
        """Append a batch of records, then checkpoint.

        Args:
            shash: The task's workload hash.
            phase: The phase the batch belongs to.
            workload: The workload JSON ``[shash, base64]`` (written once per database).
            records: (kind, record JSON ``[trace, run_secs, target, args_info]``) pairs.
            counters: Extra counters to add (build_errors, run_errors, duplicates).
        """
        self.begin(shash, phase)
        prog = self.progress(shash)
        for kind in ("ok", "failed"):
            batch = [rec for k, rec in records if k == kind]
            if not batch:
                continue
            wl_name, rec_name = DB_FILES[kind]
            if shash not in self._wl_index[kind]:
                self._wl_index[kind][shash] = len(self._wl_index[kind])
                self._append(wl_name, [json.dumps(workload)])
            index = self._wl_index[kind][shash]
            lines = [json.dumps([index, rec]) for rec in batch]
            start = self._offsets[rec_name]
            self._append(rec_name, lines)
            for rec, line in zip(batch, lines):
                self._keys[shash].add(trace_key(rec[0]))
                if kind == "ok":
                    self._ok_lines[shash].append((start, len(line) + 1))
                start += len(line) + 1
        setattr(prog, phase, getattr(prog, phase) + len(records))
        prog.failed += sum(k == "failed" for k, _ in records)
        for name, value in counters.items():
            setattr(prog, name, getattr(prog, name) + value)
        self._write_progress()

    def mark_exhausted(self, shash: str, phase: Phase) -> None:
        """Record that a phase's search ran dry (it is then done, whatever its count)."""
        prog = self.progress(shash)
        if phase not in prog.exhausted:
            prog.exhausted.append(phase)
            self._write_progress()

    def _append(self, name: str, lines: list[str]) -> None:
        data = "".join(line + "\n" for line in lines).encode()
        with open(self.root / name, "ab") as f:
            f.write(data)
        self._offsets[name] += len(data)

    def _write_progress(self) -> None:
        atomic_write_json(self.root / PROGRESS_FILE, {
            "version": 1,
            "files": self._offsets,
            "inflight": self._inflight,
            "tasks": {k: asdict(v) for k, v in sorted(self.tasks.items())},
        })
