"""Kernel dataset: measured MetaSchedule candidates (tuning-log databases) -> program graphs with latency labels.

Raw = the MetaSchedule JSON databases in a folder (``tuning_logs/<target>/database_tuning_record.json[.gz]`` and
its workload file, or any tuning ``work_dir``), read with `tvm_cost.collect.records.load_records`. Each measured
record's trace is replayed on its workload and turned into a program graph (`tvm_cost.features.program_graph`);
its label is the mean of its ``run_secs`` in milliseconds, and its group is its task (the workload). Failed
records (``run_secs`` missing or TVM's 1e10 marker) are never labels; ``failures_*`` databases are not read.

Processed = one ``.npz`` per task (no pickle) under ``processed/<PROGRAM_SCHEMA.hash>/`` beside the raw files,
holding a digest of the task's raw records: a schema change uses a new folder, new records for a task rebuild
only that task. The cache holds the program graphs; the trace decisions that complete each candidate's globals
(`CANDIDATE_SCHEMA`) are read from its record at load (0.1 ms each).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tvm_cost.collect.records import load_records
from tvm_cost.data.cache import save_npz_atomic
from tvm_cost.data.splits import Split, group_split
from tvm_cost.features.program_schema import PROGRAM_SCHEMA
from tvm_cost.features.trace_decisions import candidate_globals, raw_decisions

log = logging.getLogger(__name__)

GRAPH_KEYS = ("x", "edge_index", "edge_attr", "u")


# --- flat storage of many graphs ---------------------------------------------------------------------------------
def pack_graphs(graphs: Sequence[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Concatenate program graphs into flat arrays (what ``np.savez`` stores).

    Shapes:
        returns x: [sum N, F], edge_index: [2, sum E] (indices local to each graph), edge_attr: [sum E, D],
        u: [G, U], node_ptr / edge_ptr: [G + 1] int64 offsets.
    """
    from tvm_cost.features.program_graph import NUM_EDGE_FEATURES, NUM_GLOBAL_FEATURES, NUM_NODE_FEATURES

    def cat(key: str, width: int, axis: int = 0) -> np.ndarray:
        parts = [g[key] for g in graphs]
        if parts:
            return np.concatenate(parts, axis=axis)
        return np.zeros((2, 0) if axis else (0, width), np.int64 if key == "edge_index" else np.float32)

    return {
        "x": cat("x", NUM_NODE_FEATURES), "edge_index": cat("edge_index", 0, axis=1),
        "edge_attr": cat("edge_attr", NUM_EDGE_FEATURES), "u": cat("u", NUM_GLOBAL_FEATURES),
        "node_ptr": np.cumsum([0] + [g["x"].shape[0] for g in graphs]).astype(np.int64),
        "edge_ptr": np.cumsum([0] + [g["edge_index"].shape[1] for g in graphs]).astype(np.int64),
    }


def unpack_graphs(arrays: dict[str, np.ndarray] | Any) -> list[dict[str, np.ndarray]]:
    """Inverse of `pack_graphs` (accepts the mapping ``np.load`` returns)."""
    node_ptr, edge_ptr = arrays["node_ptr"], arrays["edge_ptr"]
    x, ei, ea, u = (arrays[k] for k in GRAPH_KEYS)
    return [{"x": x[node_ptr[i]:node_ptr[i + 1]], "edge_index": ei[:, edge_ptr[i]:edge_ptr[i + 1]],
             "edge_attr": ea[edge_ptr[i]:edge_ptr[i + 1]], "u": u[i:i + 1]} for i in range(len(node_ptr) - 1)]


def to_data(graph: dict[str, np.ndarray], **attrs: Any) -> Any:
    """A PyG `Data` of one program graph plus `attrs` (tensors or plain values)."""
    import torch
    from torch_geometric.data import Data

    return Data(**{k: torch.from_numpy(np.ascontiguousarray(graph[k])) for k in GRAPH_KEYS}, **attrs)


def without_store_features(item: Any) -> Any:
    """A copy of a dataset item whose PerStoreFeature columns (the first 164 of `x`) are zero, the rest shared.

    What a model that never runs the extractor trains on (`tvm-cost train --no-store-features`): constant in
    training, the columns standardize to 0 (`feature_stats`), so the model ignores them, and `GNNCostModel` builds
    its graphs from the walk alone (`program_graph.structure_graph`, the same structure: checked on every CPU and
    CUDA record by `scripts/structure_only_study.py --check-walk`).
    """
    import copy

    from tvm_cost.features.schema import NUM_STORE_FEATURES

    out = copy.copy(item)  # shallow: only `x` is replaced, so the other tensors need no copy
    out.x = item.x.clone()
    out.x[:, :NUM_STORE_FEATURES] = 0.0
    return out


def with_globals(item: Any, extra: Any) -> Any:
    """A copy of a dataset item whose globals `u` end with `extra` ([k] array or tensor), the rest shared: what the
    feature studies append (a trace's raw decisions, compiled-code counts) to see whether a GNN can use them."""
    import copy

    import torch

    out = copy.copy(item)  # shallow: only `u` is replaced
    out.u = torch.cat([item.u, torch.as_tensor(extra, dtype=item.u.dtype).reshape(1, -1)], dim=1)
    return out


# --- raw records -------------------------------------------------------------------------------------------------
@dataclass
class _RawTask:
    shash: str
    workload: str  # base64 IRModule as TVM writes it
    target: Any  # target JSON of the first record
    records: list[tuple[Any, list[float]]] = field(default_factory=list)  # (trace JSON, run_secs)

    def digest(self, target_spec: Any) -> str:
        text = json.dumps([self.workload, self.target, target_spec, self.records], sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:24]


def record_files(root: Path) -> list[Path]:
    """Tuning-record files of `root` (``*tuning_record.json`` or ``.json.gz``), ``failures_*`` excluded."""
    files: dict[str, Path] = {}
    for path in sorted(root.glob("*tuning_record.json*")):
        if path.name.startswith("failures_") or path.suffix not in (".json", ".gz"):
            continue
        files.setdefault(path.name.removesuffix(".gz"), path)  # X.json wins over X.json.gz (load_records too)
    return list(files.values())


def _read_raw(root: Path) -> dict[str, _RawTask]:
    tasks: dict[str, _RawTask] = {}
    skipped = {"failed": 0, "no_workload": 0, "other_target": 0}
    for path in record_files(root):
        for rec in load_records(path):
            if rec.failed or not rec.run_secs or not all(0 < s < 1e9 for s in rec.run_secs):
                skipped["failed"] += 1
                continue
            if rec.workload is None or rec.workload_shash is None:
                skipped["no_workload"] += 1
                continue
            task = tasks.setdefault(rec.workload_shash, _RawTask(rec.workload_shash, rec.workload, rec.target))
            if rec.target != task.target:
                skipped["other_target"] += 1
                continue
            task.records.append((rec.trace, list(rec.run_secs)))
    if skipped["no_workload"] or skipped["other_target"]:
        log.warning("%s: skipped %d records without a workload and %d with a second target of their task",
                    root, skipped["no_workload"], skipped["other_target"])
    log.debug("%s: %d failed records skipped (never labels)", root, skipped["failed"])
    return tasks


# --- processing ----------------------------------------------------------------------------------------------------
def _batches(items: list[Any], size: int) -> Iterator[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def process_task(task: _RawTask, *, target_spec: Any, batch_size: int = 64) -> dict[str, np.ndarray]:
    """Replay a task's measured records, build their program graphs, return packed arrays and labels.

    One feature context per task; one `PerStoreFeature` call per batch of `batch_size` candidates. Records whose
    trace does not replay (e.g. written by an older TVM) or that give no store are skipped with a warning.

    Returns:
        `pack_graphs` arrays plus ``latency_ms`` [G] float64 (mean run_secs x 1e3) and ``record`` [G] int64 (the
        record's position among the task's measured records).
    """
    import tvm
    from tvm.s_tir import Schedule
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.schedule import Trace

    from relay_passes.schedule import feature_context
    from tvm_cost.features.program_graph import program_graphs, workload_globals

    mod = ms.database.Workload.from_json([task.shash, task.workload]).mod
    target = tvm.target.Target(task.target)
    spec = target_spec if target_spec is not None else dict(target.export())
    context = feature_context(mod, target)
    u = workload_globals(mod, target_spec=spec)
    graphs: list[dict[str, np.ndarray]] = []
    latency_ms: list[float] = []
    index: list[int] = []
    bad_replay = no_store = 0
    for batch in _batches(list(enumerate(task.records)), batch_size):
        kept, cands = [], []
        for i, (trace, run_secs) in batch:
            sch = Schedule(mod)
            try:
                Trace.apply_json_to_schedule(trace, sch)
            except Exception:  # noqa: BLE001 - TVM raises its own error types for unknown instructions
                bad_replay += 1
                continue
            kept.append((i, float(np.mean(run_secs)) * 1e3))
            cands.append(ms.MeasureCandidate(sch, ms.arg_info.ArgInfo.from_prim_func(sch.mod["main"])))
        if not cands:
            continue
        for (i, ms_value), g in zip(kept, program_graphs(context, cands, target_spec=spec, u=u), strict=True):
            if g["x"].shape[0] == 0:
                no_store += 1
                continue
            graphs.append(g)
            latency_ms.append(ms_value)
            index.append(i)
    if bad_replay or no_store:
        log.warning("task %s: skipped %d records whose trace does not replay and %d without a store",
                    task.shash, bad_replay, no_store)
    return {**pack_graphs(graphs), "latency_ms": np.asarray(latency_ms, np.float64),
            "record": np.asarray(index, np.int64)}


class KernelDataset(Sequence[Any]):
    """Program graphs of the measured candidates in a folder of MetaSchedule databases, grouped by task.

    Each item is a PyG `Data` with `x`, `edge_index`, `edge_attr`, `u` (see `CANDIDATE_SCHEMA`: the task's
    globals, then the sampling decisions of the record's trace), ``y`` = [[latency in ms]] (natural units, as
    `tvm_cost.train.TaskLoss` expects; models predict its log), ``group`` = [task index] (int64, for ranking
    losses and group batching), ``raw_decisions`` = [1, 41] (its sketch and decision values,
    `trace_decisions.raw_decisions`), and plain
    attributes ``task`` (workload shash), ``record`` (the record's position among its task's measured records),
    ``latency_ms`` and ``log_latency_ms``.

    Args:
        root: The folder with ``*tuning_record.json[.gz]`` and their ``*workload.json[.gz]``.
        target_spec: Target for the global descriptors `u` (`tvm_cost.targets.resolve_target`); None: each
            record's own target JSON. Part of the cache key.
        batch_size: Candidates per `PerStoreFeature` call when processing.
        rebuild: Ignore the processed cache.
        on_progress: Called with (tasks done, tasks in total) while processing.
    """

    def __init__(self, root: str | Path, *, target_spec: Any = None, batch_size: int = 64, rebuild: bool = False,
                 on_progress: Callable[[int, int], None] | None = None) -> None:
        import torch

        self.root = Path(root)
        if not record_files(self.root):
            from tvm_cost.errors import TvmCostError

            raise TvmCostError("no MetaSchedule tuning-record file (*tuning_record.json[.gz]) here", path=self.root)
        self.processed_dir = self.root / "processed" / PROGRAM_SCHEMA.hash
        spec = target_spec if target_spec is None or isinstance(target_spec, (str, dict)) else target_spec.target_json
        raw = _read_raw(self.root)
        self.tasks: list[str] = sorted(raw)
        self._items: list[Any] = []
        for gid, shash in enumerate(self.tasks):
            arrays = self._task_arrays(raw[shash], spec, batch_size=batch_size, rebuild=rebuild)
            traces = raw[shash].records
            for graph, lat, record in zip(unpack_graphs(arrays), arrays["latency_ms"], arrays["record"], strict=True):
                trace = traces[int(record)][0]
                graph["u"] = candidate_globals(graph["u"], trace)
                self._items.append(to_data(graph, y=torch.tensor([[lat]], dtype=torch.float32),
                                           group=torch.tensor([gid]),
                                           raw_decisions=torch.from_numpy(raw_decisions(trace)[None]), task=shash,
                                           record=int(record), latency_ms=float(lat),
                                           log_latency_ms=float(np.log(lat))))
            if on_progress is not None:
                on_progress(gid + 1, len(self.tasks))

    def _task_arrays(self, task: _RawTask, spec: Any, *, batch_size: int, rebuild: bool) -> dict[str, np.ndarray]:
        path = self.processed_dir / f"{task.shash}.npz"
        digest = task.digest(spec)
        if path.exists() and not rebuild:
            try:
                with np.load(path, allow_pickle=False) as data:
                    if str(data["digest"]) == digest and str(data["schema_hash"]) == PROGRAM_SCHEMA.hash:
                        return {k: data[k] for k in data.files}
            except (OSError, ValueError, KeyError) as err:
                log.warning("%s: unreadable cache entry, rebuilding (%s)", path, err)
        arrays = process_task(task, target_spec=spec, batch_size=batch_size)
        arrays.update(digest=np.asarray(digest), schema_hash=np.asarray(PROGRAM_SCHEMA.hash))
        save_npz_atomic(path, arrays)
        return arrays

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, index: int) -> Any:  # type: ignore[override]
        return self._items[index]

    @property
    def groups(self) -> list[str]:
        """The task (workload shash) of each item."""
        return [d.task for d in self._items]

    @property
    def latency_ms(self) -> np.ndarray:
        """Labels of all items, [len(self)] float64."""
        return np.asarray([d.latency_ms for d in self._items], np.float64)

    def split(self, *, test_tasks: Sequence[str] | None = None, val: float = 0.1, test: float = 0.2,
              seed: int = 0) -> Split:
        """Hold out whole tasks (`tvm_cost.data.splits.group_split`): kernel cost models are judged on unseen ones."""
        return group_split(self.groups, test_groups=test_tasks, val=val, test=test, seed=seed)

    def subset(self, indices: Sequence[int] | np.ndarray) -> list[Any]:
        """The items at `indices` (e.g. ``dataset.subset(split.train)``), ready for `tvm_cost.train.train`."""
        return [self._items[int(i)] for i in indices]
