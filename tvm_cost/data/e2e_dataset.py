"""End-to-end dataset: measured model latencies (``e2e_records.jsonl``) joined with their operator graphs.

Raw = the JSON-lines records `tvm-cost measure-e2e` writes; processed = one ``.npz`` of graph arrays per record
under ``processed/<schema hash>/`` beside them (no pickle), so a schema change rebuilds instead of misreading.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tvm_cost.data.cache import save_npz_atomic
from tvm_cost.e2e.store import E2EStore
from tvm_cost.errors import TvmCostError
from tvm_cost.features.schema import SCHEMA


ARRAY_KEYS = ("x", "edge_index", "edge_attr", "u", "func_names")


def _cache_path(root: Path, key: str) -> Path:
    return root / "processed" / SCHEMA.hash / (hashlib.sha1(key.encode()).hexdigest() + ".npz")


def graph_arrays_for(record: dict[str, Any], cache_root: Path) -> dict[str, np.ndarray]:
    """Operator-graph arrays of a record's model on its target, from the cache or built (and cached)."""
    path = _cache_path(cache_root, record["spec"] + "|" + record["target_name"])
    if path.exists():
        with np.load(path, allow_pickle=False) as data:
            if set(ARRAY_KEYS) <= set(data.files):  # else written before a key was added: rebuild
                return {k: data[k] for k in ARRAY_KEYS}
    from tvm_cost.features.arrays import graph_arrays
    from tvm_cost.graph_api import operator_graph

    graph = operator_graph(record["spec"], target=record["target"])
    arrays = {**graph_arrays(graph), "func_names": np.array([n.func_name for n in graph.nodes], dtype=str)}
    save_npz_atomic(path, arrays)
    return arrays


def align_kernel_times(func_names: Sequence[str], kernels_ms: Sequence[Sequence[Any]], *, source: str = ""
                       ) -> np.ndarray:
    """Per-node measured ms from a record's `kernels_ms` (kernel calls in call order).

    The calls are the graph's nodes in order, less the ones TVM's VM runs as views instead of kernels (a
    reshape becomes ``vm.builtin.reshape``): those nodes get 0 ms.

    Raises:
        TvmCostError: the calls are not an in-order subsequence of the nodes (the model compiled differently).
    """
    out = np.zeros(len(func_names), np.float32)
    node = 0
    for name, ms in kernels_ms:
        while node < len(func_names) and func_names[node] != name:
            node += 1
        if node == len(func_names):
            raise TvmCostError(f"kernel call {name!r} does not match the operator graph's nodes", path=source or None)
        out[node] = ms
        node += 1
    return out


def load_e2e_dataset(
    path: str | Path,
    *,
    on_progress: Callable[[int, int], None] | None = None,
) -> list[Any]:
    """PyG `Data` for each successful record in the ``.jsonl`` at `path`.

    Each item has `x`, `edge_index`, `edge_attr`, `u` (see `tvm_cost.features.SCHEMA`), `y` = [[latency ms,
    planned memory bytes]] in natural units (nan where memory is unknown; the models' heads ("latency", "memory")
    predict their logs), and `latency_ms`, `family`, `spec`, `target_name`. Records with per-kernel times
    (``measure-e2e --per-kernel``) also give `node_ms` [N], each node's measured ms (`align_kernel_times`).
    """
    import torch
    from torch_geometric.data import Data

    path = Path(path)
    records = [r for r in E2EStore(path).records() if r.get("status") == "ok"]
    items = []
    for i, record in enumerate(records):
        arrays = graph_arrays_for(record, path.parent)
        memory = record.get("planned_memory_bytes")
        item = Data(
            x=torch.from_numpy(arrays["x"]), edge_index=torch.from_numpy(arrays["edge_index"]),
            edge_attr=torch.from_numpy(arrays["edge_attr"]), u=torch.from_numpy(arrays["u"]),
            y=torch.tensor([[record["latency_ms"], float(memory) if memory else float("nan")]],
                           dtype=torch.float32),
            latency_ms=float(record["latency_ms"]), family=record.get("config", {}).get("family", "onnx"),
            spec=record["spec"], target_name=record["target_name"],
        )
        if record.get("kernels_ms"):
            item.node_ms = torch.from_numpy(align_kernel_times(arrays["func_names"].tolist(), record["kernels_ms"],
                                                               source=f"{path}: {record['spec']}"))
        items.append(item)
        if on_progress is not None:
            on_progress(i + 1, len(records))
    return items


def load_merged_e2e_dataset(path: str | Path, extra: str | Path | None = None) -> list[Any]:
    """`load_e2e_dataset` of `path`, plus the configurations of `extra` not in `path`.

    When any item has per-kernel times, items without them get NaN node times (`without_node_times`), so all
    batch together and train the hierarchical model through the end-to-end term only.
    """
    from tvm_cost.models.kernel_sum import without_node_times

    items = load_e2e_dataset(path)
    if extra is not None:
        have = {d.spec for d in items}
        items += [d for d in load_e2e_dataset(extra) if d.spec not in have]
    if any(hasattr(d, "node_ms") for d in items):
        items = [d if hasattr(d, "node_ms") else without_node_times(d) for d in items]
    return items
