"""`KernelBoost` learns per-kernel times from node features (SYNTHETIC times), sums them, and saves safely."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from tvm_cost.errors import TvmCostError
from tvm_cost.estimation.kernel_boost import SUFFIX, KernelBoost, node_rows
from tvm_cost.features.schema import SCHEMA


def _graph(rng: np.random.Generator) -> Data:
    """A graph whose SYNTHETIC kernel times follow its nodes' first feature: ms = exp(2 x0 - 1)."""
    n = int(rng.integers(3, 9))
    x = torch.from_numpy(rng.uniform(0, 3, (n, len(SCHEMA.node))).astype(np.float32))
    u = torch.from_numpy(rng.uniform(0, 1, (1, len(SCHEMA.globals))).astype(np.float32))
    node_ms = torch.exp(2 * x[:, 0] - 1).double()
    return Data(x=x, u=u, node_ms=node_ms, latency_ms=float(node_ms.sum()))


def test_per_kernel_trees_beat_a_per_kernel_mean_on_held_out_graphs():
    rng = np.random.default_rng(0)
    train, test = [_graph(rng) for _ in range(80)], [_graph(rng) for _ in range(20)]
    train[0].node_ms[:] = float("nan")  # a graph measured end to end only: its nodes are skipped
    true = np.array([d.latency_ms for d in test])
    pred = KernelBoost(rounds=200).fit(train).predict(test)
    mean_ms = np.nanmean(np.concatenate([d.node_ms.numpy() for d in train]))
    naive = np.array([mean_ms * d.num_nodes for d in test])
    assert np.mean(np.abs(pred - true) / true) < 0.3 * np.mean(np.abs(naive - true) / true)
    assert node_rows(test[0]).shape == (test[0].num_nodes, len(SCHEMA.node) + len(SCHEMA.globals))


def _work_graph(rng: np.random.Generator, low: float, high: float) -> Data:
    """SYNTHETIC kernels whose time is proportional to their work: ms = 1e-6 (FLOPs + bytes) exp(x0 / 2)."""
    n = int(rng.integers(3, 9))
    x = rng.uniform(0, 1, (n, len(SCHEMA.node))).astype(np.float32)
    x[:, SCHEMA.node.index("log_flops")] = np.log1p(rng.uniform(low, high, n))
    x[:, SCHEMA.node.index("log_bytes")] = np.log1p(rng.uniform(low, high, n) / 10)
    work = np.expm1(x[:, SCHEMA.node.index("log_flops")]) + np.expm1(x[:, SCHEMA.node.index("log_bytes")])
    node_ms = torch.from_numpy(1e-6 * work * np.exp(x[:, 0] / 2))
    return Data(x=torch.from_numpy(x), u=torch.zeros(1, len(SCHEMA.globals)), node_ms=node_ms,
                latency_ms=float(node_ms.sum()))


def test_kernels_larger_than_any_seen_scale_with_their_work():
    """Trees alone cap a prediction at the slowest training kernel; on time per unit of work they do not."""
    rng = np.random.default_rng(4)
    train = [_work_graph(rng, 1e4, 1e6) for _ in range(80)]
    larger = [_work_graph(rng, 3e7, 1e8) for _ in range(10)]  # 30-100x the largest training kernel
    true = np.array([d.latency_ms for d in larger])
    pred = KernelBoost(rounds=200).fit(train).predict(larger)
    slowest_seen = max(float(d.node_ms.max()) for d in train)
    assert (true > 20 * slowest_seen).all()
    assert np.mean(np.abs(pred - true) / true) < 0.1


def test_members_differ_and_their_mean_is_the_estimate():
    rng = np.random.default_rng(1)
    graphs = [_graph(rng) for _ in range(30)]
    model = KernelBoost(rounds=50, members=3).fit(graphs)
    per_member = model.node_ms(graphs[0])
    assert per_member.shape == (3, graphs[0].num_nodes) and not np.allclose(per_member[0], per_member[1])
    assert model.predict(graphs[:1])[0] == pytest.approx(per_member.sum(1).mean())


def test_save_load_round_trip_and_refusals(tmp_path):
    rng = np.random.default_rng(2)
    graphs = [_graph(rng) for _ in range(30)]
    model = KernelBoost(rounds=30, members=2).fit(graphs)
    meta_path = model.save(tmp_path / "llvm-1core", schema=SCHEMA, extra={"measured_on": "some CPU"})
    assert meta_path.name == "llvm-1core" + SUFFIX
    loaded, meta = KernelBoost.load(meta_path, schema=SCHEMA)
    assert meta["extra"]["measured_on"] == "some CPU"
    np.testing.assert_allclose(loaded.node_ms(graphs[3]), model.node_ms(graphs[3]), rtol=1e-6)

    stale = json.loads(meta_path.read_text())
    stale["feature_schema"]["hash"] = "0" * 16
    (tmp_path / "stale.kernel_boost.json").write_text(json.dumps(stale))
    with pytest.raises(TvmCostError, match="feature schema hash 0000000000000000 does not match"):
        KernelBoost.load(tmp_path / "stale.kernel_boost.json", schema=SCHEMA)
    member = tmp_path / meta["members"][1]["file"]
    member.write_bytes(member.read_bytes()[:-10])  # truncated
    with pytest.raises(TvmCostError, match="member .* does not match its sha256"):
        KernelBoost.load(meta_path, schema=SCHEMA)
    old = json.loads(meta_path.read_text())
    old["format_version"] = 1  # trees on log ms, before the work margin
    (tmp_path / "old.kernel_boost.json").write_text(json.dumps(old))
    with pytest.raises(TvmCostError, match="version 1 .*retrain it"):
        KernelBoost.load(tmp_path / "old.kernel_boost.json", schema=SCHEMA)
    (tmp_path / "broken.kernel_boost.json").write_text("{not json")
    with pytest.raises(TvmCostError, match="broken.kernel_boost.json.*cannot read estimator metadata"):
        KernelBoost.load(tmp_path / "broken.kernel_boost.json", schema=SCHEMA)


def test_hierarchical_inputs_are_out_of_fold_for_training_graphs():
    from tvm_cost.estimation.hierarchical import add_kernel_predictions

    rng = np.random.default_rng(3)
    graphs = [_graph(rng) for _ in range(40)]
    out, trees = add_kernel_predictions(graphs, folds=4, rounds=60)
    assert all(o.x.shape[1] == g.x.shape[1] + 1 and torch.equal(o.x[:, :-1], g.x) for o, g in zip(out, graphs))
    in_sample = np.concatenate([np.log(trees.node_ms(g)[0]) for g in graphs])
    out_of_fold = np.concatenate([o.x[:, -1].numpy() for o in out])
    truth = np.concatenate([np.log(g.node_ms.numpy()) for g in graphs])
    # trees fitted on a graph predict it better than trees that never saw it: the column is out of fold
    assert np.mean((in_sample - truth) ** 2) < np.mean((out_of_fold - truth) ** 2)


def test_residual_gnn_starts_at_the_trees():
    from torch_geometric.data import Batch

    from tvm_cost.estimation.hierarchical import ResidualKernelSumNet, add_kernel_predictions
    from tvm_cost.models import ModelConfig

    rng = np.random.default_rng(4)
    graphs = []
    for _ in range(12):
        g = _graph(rng)
        g.edge_index = torch.tensor([[0, 1], [1, 2]])
        g.edge_attr = torch.zeros(2, len(SCHEMA.edge))
        g.y = torch.tensor([[g.latency_ms]])
        graphs.append(g)
    out, _ = add_kernel_predictions(graphs, folds=3, rounds=30)
    config = ModelConfig.for_schema(SCHEMA, hidden=16, layers=1)
    model = ResidualKernelSumNet(config.replace(node_dim=config.node_dim + 1)).fit_normalization(out).eval()
    batch = Batch.from_data_list(out[:3])
    with torch.no_grad():
        torch.testing.assert_close(model.node_log_ms(batch), batch.x[:, -1])  # no correction before training
    assert 0 < float(model.y_std) < 5 and float(model.y_mean) == 0.0
