import torch

from tvm_cost.models import feature_stats, synthetic_graphs


def test_synthetic_graphs_are_seeded_dags():
    a, b = synthetic_graphs(5, seed=1), synthetic_graphs(5, seed=1)
    assert all(torch.equal(x.x, y.x) and torch.equal(x.edge_index, y.edge_index) for x, y in zip(a, b))
    assert not torch.equal(synthetic_graphs(1, seed=2)[0].x[:1], a[0].x[:1])
    for g in a:
        src, dst = g.edge_index
        assert (src < dst).all()  # acyclic
        assert g.y.shape == (1, 1) and (g.y > 0).all() and g.u.shape == (1, 4)
    assert [int(g.group) for g in a] == [0, 1, 2, 3, 0]


def test_target_function_shared_across_seeds():
    """Same features give the same target whatever the graph seed: train and validation sets agree."""
    g = synthetic_graphs(1, seed=3, raw_scale=False)[0]
    h = synthetic_graphs(1, seed=3, raw_scale=False, task_seed=1)[0]
    assert torch.equal(g.x, h.x) and not torch.equal(g.y, h.y)


def test_feature_stats_skip_missing_targets():
    graphs = synthetic_graphs(4, heads=("latency", "memory"), seed=4)
    graphs[0].y = torch.tensor([[float("nan"), 2.0]])
    graphs[1].y = torch.tensor([[0.0, 2.0]])  # non-positive: not a measurement
    for g in graphs[2:]:
        g.y[:, 1] = 2.0
    stats = feature_stats(graphs, node_dim=8, edge_dim=3, global_dim=4, num_heads=2)
    lat = torch.cat([g.y[:, 0] for g in graphs[2:]]).log()
    torch.testing.assert_close(stats["y_mean"][0], lat.mean())
    assert stats["y_std"][1] == 1.0  # constant column: centered only
    assert stats["edge_mean"].shape == (3,) and torch.isfinite(stats["x_std"]).all()


def test_constant_input_columns_standardize_to_zero_whatever_they_become():
    """A column constant in training (a target descriptor of one machine) must not move a prediction later."""
    from tvm_cost.models import ModelConfig, build_model

    graphs = synthetic_graphs(6, seed=5)
    for g in graphs:
        g.u[:, 1] = 3.0
        g.u[:, 2] = 10.397 * (1 + 2e-7 * torch.randn(1))  # a float32 log of one machine's cache size: ~1e-6 spread
    stats = feature_stats(graphs, node_dim=8, edge_dim=3, global_dim=4, num_heads=1)
    assert torch.isinf(stats["u_std"][[1, 2]]).all() and torch.isfinite(stats["u_std"][[0, 3]]).all()
    assert feature_stats(graphs, node_dim=8, edge_dim=3, global_dim=4, num_heads=1,
                         drop_constant=False)["u_std"][1] == 1.0
    model = build_model(kind="seernet", config=ModelConfig(node_dim=8, edge_dim=3, global_dim=4, heads=("latency",)))
    model.fit_normalization(graphs)
    model.eval()
    other = graphs[0].clone()
    other.u[:, 1:3] = 40.0  # another machine
    with torch.no_grad():
        torch.testing.assert_close(model(other), model(graphs[0]))
        changed = graphs[0].clone()
        changed.u[:, 0] += 5.0  # a column that varied in training does move it
        assert not torch.allclose(model(changed), model(graphs[0]))
