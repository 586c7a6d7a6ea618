"""End-to-end dataset: measured model latencies (``e2e_records.jsonl``) joined with their operator graphs.

Raw = the JSON-lines records `tvm-cost measure-e2e` writes; processed = one ``.npz`` of graph arrays per record
under ``processed/<schema hash>/`` beside them (no pickle), so a schema change rebuilds instead of misreading.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from tvm_cost.e2e.store import E2EStore
from tvm_cost.features.schema import SCHEMA


ARRAY_KEYS = ("x", "edge_index", "edge_attr", "u")


def _cache_path(root: Path, key: str) -> Path:
    return root / "processed" / SCHEMA.hash / (hashlib.sha1(key.encode()).hexdigest() + ".npz")


def graph_arrays_for(record: dict[str, Any], cache_root: Path) -> dict[str, np.ndarray]:
    """Operator-graph arrays of a record's model on its target, from the cache or built (and cached)."""
    path = _cache_path(cache_root, record["spec"] + "|" + record["target_name"])
    if path.exists():
        with np.load(path, allow_pickle=False) as data:
            return {k: data[k] for k in ARRAY_KEYS}
    from tvm_cost.features.arrays import graph_arrays
    from tvm_cost.graph_api import operator_graph

    arrays = graph_arrays(operator_graph(record["spec"], target=record["target"]))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, **arrays)
    tmp.replace(path)  # atomic: an interrupted build leaves no half-written cache entry
    return arrays


def load_e2e_dataset(
    path: str | Path,
    *,
    on_progress: Callable[[int, int], None] | None = None,
) -> list[Any]:
    """PyG `Data` for each successful record in the ``.jsonl`` at `path`.

    Each item has `x`, `edge_index`, `edge_attr`, `u` (see `tvm_cost.features.SCHEMA`), `y` = [[latency ms,
    planned memory bytes]] in natural units (nan where memory is unknown; the models' heads ("latency", "memory")
    predict their logs), and `latency_ms`, `family`, `spec`, `target_name`.
    """
    import torch
    from torch_geometric.data import Data

    path = Path(path)
    records = [r for r in E2EStore(path).records() if r.get("status") == "ok"]
    items = []
    for i, record in enumerate(records):
        arrays = graph_arrays_for(record, path.parent)
        memory = record.get("planned_memory_bytes")
        items.append(Data(
            x=torch.from_numpy(arrays["x"]), edge_index=torch.from_numpy(arrays["edge_index"]),
            edge_attr=torch.from_numpy(arrays["edge_attr"]), u=torch.from_numpy(arrays["u"]),
            y=torch.tensor([[record["latency_ms"], float(memory) if memory else float("nan")]],
                           dtype=torch.float32),
            latency_ms=float(record["latency_ms"]), family=record.get("config", {}).get("family", "onnx"),
            spec=record["spec"], target_name=record["target_name"],
        ))
        if on_progress is not None:
            on_progress(i + 1, len(records))
    return items
