"""The end-to-end dataset joins records with operator graphs and caches the graphs by schema hash."""

from __future__ import annotations

import pytest
import torch

from tvm_cost.data import e2e_dataset
from tvm_cost.e2e.store import E2EStore
from tvm_cost.features.schema import SCHEMA

SPEC = "zoo:mlp,width=16,depth=1,in_features=32"


@pytest.fixture()
def synthetic_records(tmp_path):
    """Synthetic latencies (not measurements): only the join and the cache are under test."""
    store = E2EStore(tmp_path / "e2e" / "e2e_records.jsonl")
    target = {"kind": "llvm", "num-cores": 2}
    store.append({"key": "a", "spec": SPEC, "status": "ok", "latency_ms": 2.0, "target": target,
                  "target_name": "llvm-2core", "config": {"family": "mlp"}, "planned_memory_bytes": 1024})
    store.append({"key": "b", "spec": "zoo:nope", "status": "failed", "error": "unknown zoo family"})
    return store.path


def test_records_become_graphs_with_log_latency(synthetic_records):
    items = e2e_dataset.load_e2e_dataset(synthetic_records)
    assert len(items) == 1  # the failed record is not a training example
    data = items[0]
    assert data.x.shape[1] == len(SCHEMA.node) and data.u.shape == (1, len(SCHEMA.globals))
    assert torch.allclose(data.y, torch.tensor([[2.0, 1024.0]]))
    assert data.family == "mlp" and data.latency_ms == 2.0


def test_second_load_reads_the_cache(synthetic_records, monkeypatch):
    first = e2e_dataset.load_e2e_dataset(synthetic_records)
    cached = list((synthetic_records.parent / "processed" / SCHEMA.hash).glob("*.npz"))
    assert len(cached) == 1

    def no_build(*args, **kwargs):
        raise AssertionError("rebuilt a cached graph")

    monkeypatch.setattr("tvm_cost.graph_api.operator_graph", no_build)
    second = e2e_dataset.load_e2e_dataset(synthetic_records)
    assert torch.equal(first[0].x, second[0].x)
