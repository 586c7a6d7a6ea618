"""The HELP NAS-Bench-201 study: GPU descriptors as globals, the join with HELP, splits, and a small end-to-end run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tvm_cost.estimation.help_study import (
    HELP_NB201_GPUS,
    CellSet,
    cross_gpu,
    in_distribution,
    load_cells,
    op_count_reference,
    split_cells,
    with_hardware,
)
from tvm_cost.features.schema import SCHEMA

HELP_DIR = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "help"
CELL = "|nor_conv_1x1~0|+|skip_connect~0|none~1|+|avg_pool_3x3~0|nor_conv_1x1~1|nor_conv_3x3~2|"


def test_one_graph_serves_every_help_gpu() -> None:
    """Built for sm_75 or sm_61, the graph is the same; only the descriptors in `u` differ, as `with_hardware` sets."""
    pytest.importorskip("tvm")
    from relay_passes.build import graph_from_lowered
    from relay_passes.lower import lower
    from tvm_cost.data.external.nasbench201_relax import nb201_to_relax
    from tvm_cost.features.arrays import graph_arrays
    from tvm_cost.targets import resolve_target

    arrays = {}
    for gpu in ("2080ti", "1080ti"):
        resolved = resolve_target(f"cuda-{gpu}")
        mod = nb201_to_relax(CELL, batch=2, channels=4, cells_per_stage=1, fold_batch_norm=True)
        arrays[gpu] = graph_arrays(graph_from_lowered(lower(mod, resolved.tvm_target()), resolved, batch_size=2))
    for key in ("x", "edge_index", "edge_attr"):
        assert np.array_equal(arrays["2080ti"][key], arrays["1080ti"][key])
    assert not np.array_equal(arrays["2080ti"]["u"], arrays["1080ti"]["u"])
    assert np.array_equal(with_hardware(arrays["2080ti"]["u"], "cuda-1080ti"), arrays["1080ti"]["u"])


def test_split_cells_caps_training_and_samples_tests() -> None:
    split = split_cells(50, n_train=20, val_fraction=0.1, seed=3)
    assert (len(split.train), len(split.val), len(split.test)) == (18, 2, 30)
    assert len(set(split.train) | set(split.val) | set(split.test)) == 50
    assert len(split_cells(50, n_train=20, n_test=7).test) == 7
    assert len(split_cells(10, n_train=1000).test) == 1  # never leaves the test set empty
    with pytest.raises(ValueError, match="at least 2 cells"):
        split_cells(1)


def _synthetic_cells(n: int, seed: int = 0) -> CellSet:
    """Graphs whose latency is a power law of their FLOPs, scaled per GPU by peak FLOP/s (not measurements)."""
    rng = np.random.default_rng(seed)
    gpus = HELP_NB201_GPUS
    peak = np.array([11340, 13450, 16310, 10970, 12150])
    arrays: list[dict[str, np.ndarray]] = []
    latency = []
    for _ in range(n):
        nodes = int(rng.integers(3, 7))
        u = np.zeros((1, len(SCHEMA.globals)), np.float32)
        u[0, 0], u[0, 1] = rng.uniform(15, 20), rng.uniform(12, 16)
        src = np.arange(nodes - 1)
        arrays.append({"x": rng.random((nodes, len(SCHEMA.node)), dtype=np.float32),
                       "edge_index": np.stack([src, src + 1]).astype(np.int64),
                       "edge_attr": rng.random((nodes - 1, len(SCHEMA.edge)), dtype=np.float32), "u": u})
        latency.append(np.exp(0.8 * u[0, 0] - 12.0) * 12000.0 / peak)
    return CellSet(32, gpus, np.arange(n), arrays, np.array(latency))


def test_study_runs_every_model_and_the_linear_baseline_fits_a_power_law() -> None:
    cells = _synthetic_cells(60)
    split = split_cells(60, n_train=40, seed=0)
    result = in_distribution(cells, split, models=("linear_flops_bytes", "gbt_aggregates", "gcn"), epochs=2)
    assert set(result) == {"linear_flops_bytes", "gbt_aggregates", "gcn"}
    assert set(result["gcn"]) == {*HELP_NB201_GPUS, "all"} and result["gcn"]["all"]["n"] == 5 * len(split.test)
    assert result["linear_flops_bytes"]["titanx"]["mape"] < 1e-3
    held = cross_gpu(cells, split, "titan_rtx", models=("linear_flops_bytes",))
    assert held["linear_flops_bytes"]["n"] == len(split.test) and held["linear_flops_bytes"]["mape"] < 1e-3
    with pytest.raises(ValueError, match="unknown GPU"):
        cross_gpu(cells, split, "v100")


def test_load_cells_joins_graphs_with_help_latencies(tmp_path: Path) -> None:
    if not HELP_DIR.is_dir():
        pytest.skip(f"real data not available: {HELP_DIR} is missing (see docs/external_data.md)")
    from tvm_cost.data.external.help import load_help
    from tvm_cost.data.external.nasbench201_graphs import graph_path

    cells = _synthetic_cells(2)
    for index, arrays in zip((5, 11), cells.arrays):
        path = graph_path(tmp_path, 256, index)
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, **arrays)  # type: ignore[arg-type]  # numpy's stub reads ** as allow_pickle
    loaded = load_cells(tmp_path, HELP_DIR, 256)
    assert loaded.arch_index.tolist() == [5, 11] and loaded.gpus == HELP_NB201_GPUS
    truth = {(r.arch_index, r.device): r.latency_ms
             for r in load_help(HELP_DIR, space="nasbench201", device=[f"{g}_256" for g in HELP_NB201_GPUS])
             if r.arch_index in (5, 11)}
    assert loaded.latency_ms.tolist() == [[truth[(i, g)] for g in HELP_NB201_GPUS] for i in (5, 11)]
    assert np.array_equal(loaded.arrays[1]["x"], cells.arrays[1]["x"])


def test_op_count_reference_sees_none_edges_only_with_all_edges() -> None:
    """Latency counting every edge's op, `none` included (synthetic): only the all-edges fit recovers it."""
    from tvm_cost.data.external.nasbench201 import NB201_OPS, parse_nb201

    rng = np.random.default_rng(0)
    archs = {}
    for i in range(80):
        ops = rng.choice(NB201_OPS, size=6)
        archs[i] = "+".join("|" + "|".join(f"{ops[k]}~{src}" for k, src in edges) + "|"
                            for edges in ([(0, 0)], [(1, 0), (2, 1)], [(3, 0), (4, 1), (5, 2)]))
    cost = {"none": 0.3, "skip_connect": 0.05, "nor_conv_1x1": 0.4, "nor_conv_3x3": 0.9, "avg_pool_3x3": 0.2}
    per_edge = np.array([np.exp(sum(cost[e.op] for e in parse_nb201(archs[i]))) for i in range(80)])
    cells = CellSet(32, ("1080ti",), np.arange(80), [{}] * 80, per_edge[:, None])
    result = op_count_reference(cells, split_cells(80, n_train=50), archs)
    assert result["all_edges"]["1080ti"]["mape"] < 1e-6 < result["live_edges"]["1080ti"]["mape"]
    assert result["all_edges"]["all"]["n"] == 30
