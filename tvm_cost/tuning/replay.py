"""What `GNNCostModel` learns from during a tune: program graphs of candidates and a per-task replay buffer."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tvm_cost.data.kernel_dataset import pack_graphs, unpack_graphs
from tvm_cost.features.schema import NUM_STORE_FEATURES
from tvm_cost.features.trace_decisions import candidate_globals, trace_json

Graph = dict[str, np.ndarray]
FAILED_RUN_SECS = 1e10  # TVM's marker of a failed build or run


def measured_latency_ms(result: Any) -> float | None:
    """Mean ``run_secs`` of a runner result in ms; None for a failed build or run (never a label)."""
    if getattr(result, "error_msg", None) or not result.run_secs:
        return None
    secs = [float(s) for s in result.run_secs]
    if not all(np.isfinite(s) and 0.0 < s < FAILED_RUN_SECS for s in secs):
        return None
    return float(np.mean(secs)) * 1e3


def task_key(context: Any) -> str:
    """The task of a tune context: the structural hash of its workload, as `XGBModel` groups its data."""
    from tvm.s_tir.meta_schedule.utils import shash2hex

    return str(shash2hex(context.mod))


class CandidateFeaturizer:
    """Program graphs of a task's candidates, cached by the structural hash of each scheduled module.

    Evolutionary search scores about a fifth of its candidates again in a later round (parents kept unmutated,
    the database's best re-entering each population), and `update` receives candidates that `predict` has already
    scored: the cache skips PerStoreFeature and the program walk for all of those. Each graph's globals `u` are
    `CANDIDATE_SCHEMA`'s: the task's (computed once per task), then the decisions of the candidate's trace.

    Args:
        target_spec: Target for the descriptors in `u` (`tvm_cost.targets.resolve_target`); None: each
            context's own target.
        cache_size: Graphs kept (least recently used dropped first); 0 turns the cache off.
        walk: False: no program walk; each "graph" is only its PerStoreFeature rows `x` [stores, 164] and its
            globals `u`, all `RankerCostModel` reads (the walk is ~4% of the extraction time).
            `graphs(..., store_features=False)` asks for the opposite: the walk alone, no extraction.
        chunk_size: Candidates per extraction call (>= 1). A call's candidates are hashed, walked and joined to
            their rows on the calling thread a chunk at a time while a worker thread extracts
            (`extract_pipelined`), so little of that is left after the last chunk's extraction.
    """

    def __init__(self, target_spec: Any = None, *, cache_size: int = 16384, walk: bool = True,
                 chunk_size: int = 256) -> None:
        self.target_spec = target_spec
        self.cache_size = cache_size
        self.walk = walk
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be at least 1, not {chunk_size}")
        self.chunk_size = chunk_size
        self.hits = self.misses = 0
        self._u: dict[str, np.ndarray] = {}
        self._cache: OrderedDict[tuple[str, int, bool], Graph] = OrderedDict()

    def graphs(self, context: Any, candidates: Sequence[Any], *, store_features: bool = True) -> list[Graph]:
        """One graph per candidate (a candidate without any store gets a single all-zero node).

        Args:
            store_features: False: graphs from the walk and the trace alone, PerStoreFeature columns zero
                (`program_graph.structure_graph`), for a model that does not read them: no extraction. Cached
                apart from the graphs with rows.
        """
        from tvm_ffi import structural_hash

        from tvm_cost.features.program_graph import extract_pipelined, structure_graph

        if not candidates:
            return []
        if not (store_features or self.walk):
            raise ValueError("a featurizer without the walk has nothing but the PerStoreFeature rows to give")
        key = task_key(context)
        u = self.task_globals(context, key)
        keys: list[tuple[str, int, bool]] = []
        new: dict[tuple[str, int, bool], int] = {}  # the modules not cached, in the order they are extracted

        def fresh_chunks() -> Iterator[list[Any]]:
            """The candidates to extract, `chunk_size` hashed at a time (beside the previous chunk's extraction)."""
            for start in range(0, len(candidates), self.chunk_size):
                fresh = []
                for cand in candidates[start:start + self.chunk_size]:
                    k = (key, int(structural_hash(cand.sch.mod)), store_features)
                    keys.append(k)
                    if k not in self._cache and k not in new:
                        new[k] = len(new)
                        fresh.append(cand)
                if fresh:
                    yield fresh

        if store_features:
            joined = extract_pipelined(context, fresh_chunks(), lambda chunk: self._python_side(context, chunk, u),
                                       lambda rows, side: self._joined(context, rows, side))
        else:
            joined = [[structure_graph(walk, cu) for _, walk, cu in self._python_side(context, chunk, u)]
                      for chunk in fresh_chunks()]
        fresh = [g for chunk in joined for g in chunk]
        self.hits += len(keys) - len(new)
        self.misses += len(new)
        found = {k: self._cache[k] for k in keys if k in self._cache}
        for k, g in zip(new, fresh, strict=True):
            if g["x"].shape[0] == 0:
                g["x"] = np.zeros((1, g["x"].shape[1]), np.float32)
            found[k] = g
            if self.cache_size > 0:
                self._cache[k] = g
        for k in found:
            if k in self._cache:
                self._cache.move_to_end(k)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return [dict(found[k]) for k in keys]

    def task_globals(self, context: Any, key: str | None = None) -> np.ndarray:
        """The program-graph globals `u` [1, G] of `context`'s task (workload counts, target; `PROGRAM_SCHEMA`),
        computed once per task (`key`: its `task_key`, when known)."""
        from tvm_cost.features.program_graph import workload_globals

        key = key or task_key(context)
        if key not in self._u:
            self._u[key] = workload_globals(context.mod, target_spec=self._spec(context))
        return self._u[key]

    def _spec(self, context: Any) -> Any:
        if self.target_spec is not None:
            return self.target_spec
        return {str(k): v for k, v in context.target.export().items()}

    def _python_side(self, context: Any, candidates: list[Any], u: np.ndarray) -> list[tuple[Any, Any, np.ndarray]]:
        """What each candidate's graph takes from Python, run while its rows are extracted: (candidate, its
        `walk_candidates` walk or None without the walk, its globals: `u` and its trace's decisions)."""
        from tvm_cost.features.program_graph import walk_candidates

        walks = walk_candidates(context, candidates) if self.walk else [None] * len(candidates)
        return [(cand, walk, candidate_globals(u, trace_json(cand.sch.trace)))
                for cand, walk in zip(candidates, walks, strict=True)]

    def _joined(self, context: Any, rows: list[np.ndarray], side: list[tuple[Any, Any, np.ndarray]]) -> list[Graph]:
        """The graphs of one extracted chunk: its rows joined to `_python_side`'s walks and globals."""
        from tvm_cost.features.program_graph import is_gpu_context, joined_graph

        if not self.walk:
            return [{"x": r, "u": cu} for r, (_, _, cu) in zip(rows, side, strict=True)]
        is_gpu = is_gpu_context(context)
        return [joined_graph(cand, r, cu, is_gpu=is_gpu, walk=walk)
                for r, (cand, walk, cu) in zip(rows, side, strict=True)]


class ReplayBuffer:
    """Measured candidates per task (graphs and latencies in ms), newest last, at most `capacity` per task."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._graphs: dict[str, list[Graph]] = {}
        self._latency: dict[str, list[float]] = {}

    def add(self, key: str, graphs: Sequence[Graph], latency_ms: Sequence[float]) -> None:
        g = self._graphs.setdefault(key, [])
        lat = self._latency.setdefault(key, [])
        g.extend(graphs)
        lat.extend(float(v) for v in latency_ms)
        del g[:-self.capacity], lat[:-self.capacity]

    def task(self, key: str) -> tuple[list[Graph], np.ndarray]:
        """The task's graphs and latencies (ms), oldest first."""
        return list(self._graphs.get(key, [])), np.asarray(self._latency.get(key, []), np.float64)

    @property
    def tasks(self) -> list[str]:
        return list(self._graphs)

    def __len__(self) -> int:
        return sum(len(v) for v in self._latency.values())

    def xgb_groups(self) -> dict[str, tuple[list[np.ndarray], np.ndarray]]:
        """Per task, the PerStoreFeature rows (the first 164 node columns) and mean costs in seconds."""
        return {k: ([g["x"][:, :NUM_STORE_FEATURES] for g in self._graphs[k]],
                    np.asarray(self._latency[k], np.float64) / 1e3) for k in self._graphs}

    def save(self, path: str | Path) -> None:
        """One ``.npz`` (no pickle): packed graphs, latencies, the task index of each and the task keys."""
        keys = self.tasks
        graphs = [g for k in keys for g in self._graphs[k]]
        np.savez(path, **pack_graphs(graphs),  # type: ignore[arg-type]  # numpy's stub reads ** as allow_pickle
                 latency_ms=np.asarray([v for k in keys for v in self._latency[k]], np.float64),
                 task=np.asarray([i for i, k in enumerate(keys) for _ in self._graphs[k]], np.int64),
                 keys=np.asarray(keys, dtype=str), capacity=np.asarray(self.capacity))

    @classmethod
    def load(cls, path: str | Path, *, capacity: int | None = None) -> ReplayBuffer:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
        buf = cls(int(arrays["capacity"]) if capacity is None else capacity)
        keys = [str(k) for k in arrays["keys"]]
        graphs = unpack_graphs(arrays)
        for i, key in enumerate(keys):
            idx = np.flatnonzero(arrays["task"] == i)
            buf.add(key, [graphs[j] for j in idx], arrays["latency_ms"][idx])
        return buf
