"""The operator graph: fused TIR subgraphs as nodes, tensors as edges. Pure Python + numpy, no TVM.

Shape contract (N nodes, E edges, S_i stores in node i, F = 164 MetaSchedule per-store features):
    nodes[i].store_features: float32[S_i, F] — PerStoreFeature of the schedule that will run.
    edges[k]: src, dst in [0, N), producer -> consumer, with the tensor's shape and dtype.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

_DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "int8": 1, "uint8": 1, "int32": 4,
                "int64": 8, "bool": 1}


def dtype_bytes(dtype: str) -> int:
    """Bytes per element of a TVM dtype string."""
    return _DTYPE_BYTES.get(dtype, 4)


@dataclass
class OpNode:
    """One kernel TVM compiles: a fused PrimFunc called once from `main`.

    Attributes:
        name: The Relax variable its result is bound to (unique in the graph).
        func_name: The PrimFunc's global name in the lowered module.
        task_name: MetaSchedule's task name for its workload (as `extract_tasks` names it).
        workload_hash: MetaSchedule's structural hash of the workload (decimal string).
        op_kinds: Legalized ops fused into it, in order.
        output_shape: Shape of its (first) output.
        output_dtype: Dtype of its (first) output.
        stats: Static counts (FLOPs, bytes, loops ...) from `relay_passes.tir_stats`.
        schedule_source: "default" (TVM's pipeline schedule for the target), "database" (a tuning record) or
            "default-fallback" (TVM's CUDA rules without DLight's Matmul rule, which raised on this kernel).
        store_features: float32[S, 164] MetaSchedule PerStoreFeature rows of the scheduled kernel.
    """

    name: str
    func_name: str
    task_name: str
    workload_hash: str
    op_kinds: list[str]
    output_shape: list[int]
    output_dtype: str
    stats: dict[str, float]
    schedule_source: str = "default"
    store_features: np.ndarray = field(default_factory=lambda: np.zeros((0, 164), np.float32))

    @property
    def flops(self) -> float:
        return self.stats["flops"]

    @property
    def bytes(self) -> float:
        return self.stats["bytes"]

    @property
    def intensity(self) -> float:
        """Arithmetic intensity, FLOPs per byte of compulsory traffic."""
        return self.flops / max(self.bytes, 1.0)


@dataclass
class TensorEdge:
    """A tensor produced by node `src` and read by node `dst`."""

    src: int
    dst: int
    shape: list[int]
    dtype: str

    @property
    def bytes(self) -> float:
        return float(np.prod(self.shape, dtype=np.float64)) * dtype_bytes(self.dtype)


@dataclass
class OperatorGraph:
    """A model as TVM will run it.

    Attributes:
        nodes: Kernels in execution order.
        edges: Producer -> consumer tensors between kernels.
        globals: Graph-level values (totals, batch size, target descriptors).
        target: The TVM target JSON.
        fusion: "default" (TVM's fused kernels) or "none" (one node per op, PerfSeer's view).
        schema_version: Version of the feature schema the graph was built for.
        source: Where the model came from.
    """

    nodes: list[OpNode]
    edges: list[TensorEdge]
    globals: dict[str, Any]
    target: dict[str, Any]
    fusion: str
    schema_version: str
    source: str = ""

    def to_json_dict(self, *, store_features: bool = True) -> dict[str, Any]:
        """A JSON-ready dict; `store_features=False` drops the per-store matrices to keep files small."""
        nodes = []
        for node in self.nodes:
            d = asdict(node)
            d["store_features"] = node.store_features.tolist() if store_features else None
            d.update(flops=node.flops, bytes=node.bytes, intensity=node.intensity)
            nodes.append(d)
        edges = [{**asdict(e), "bytes": e.bytes, "rank": len(e.shape)} for e in self.edges]
        return {"schema_version": self.schema_version, "source": self.source, "fusion": self.fusion,
                "target": self.target, "globals": self.globals, "nodes": nodes, "edges": edges}

    def save_json(self, path: str | Path, *, store_features: bool = True) -> None:
        Path(path).write_text(json.dumps(self.to_json_dict(store_features=store_features), indent=1))

    @classmethod
    def from_json_dict(cls, data: dict[str, Any]) -> "OperatorGraph":
        nodes = []
        for d in data["nodes"]:
            rows = d.get("store_features")
            feats = np.asarray(rows if rows else np.zeros((0, 164)), dtype=np.float32).reshape(-1, 164)
            nodes.append(OpNode(
                name=d["name"], func_name=d["func_name"], task_name=d["task_name"],
                workload_hash=d["workload_hash"], op_kinds=list(d["op_kinds"]), output_shape=list(d["output_shape"]),
                output_dtype=d["output_dtype"], stats=dict(d["stats"]), schedule_source=d["schedule_source"],
                store_features=feats))
        edges = [TensorEdge(e["src"], e["dst"], list(e["shape"]), e["dtype"]) for e in data["edges"]]
        return cls(nodes, edges, dict(data["globals"]), dict(data["target"]), data["fusion"],
                   data["schema_version"], data.get("source", ""))

    @classmethod
    def load_json(cls, path: str | Path) -> "OperatorGraph":
        return cls.from_json_dict(json.loads(Path(path).read_text()))
