import pytest
import torch
from models_helpers import assert_graph_model
from torch_geometric.data import Batch, Data

from tvm_cost.models import ModelConfig, SeerNet, build_model, synthetic_graphs

CFG = ModelConfig(node_dim=8, edge_dim=3, global_dim=4, hidden=16, layers=2, heads=("latency", "memory"))


@pytest.fixture(scope="module")
def graphs() -> list[Data]:
    return synthetic_graphs(6, heads=CFG.heads, seed=3)


def test_contract(graphs):
    model = SeerNet(CFG).fit_normalization(graphs)
    assert_graph_model(model, graphs)


def test_contract_with_summed_node_shares(graphs):
    model = SeerNet(CFG.replace(readout="sum")).fit_normalization(graphs)
    assert_graph_model(model, graphs)


def test_sum_readout_adds_the_node_shares_in_linear_space(graphs):
    """Two unconnected copies of a graph whose global features are the same take twice its time (log 2 more)."""
    model = SeerNet(CFG.replace(readout="sum")).fit_normalization(graphs).eval()
    g = graphs[0]
    n = g.num_nodes
    double = Data(x=torch.cat([g.x, g.x]), edge_index=torch.cat([g.edge_index, g.edge_index + n], dim=1),
                  edge_attr=torch.cat([g.edge_attr, g.edge_attr]), u=g.u)
    with torch.no_grad():
        one, two = model(g), model(double)
    # max+mean aggregations into the global node see the same values twice, so its state is unchanged
    torch.testing.assert_close(two - one, torch.full_like(one, float(torch.log(torch.tensor(2.0)))))
    with pytest.raises(ValueError, match="readout"):
        ModelConfig(node_dim=8, edge_dim=3, global_dim=4, readout="attention")
    with pytest.raises(ValueError, match="GCNBaseline pools"):
        build_model(kind="gcn", config=CFG.replace(readout="sum"))


def test_contract_unfitted_raw_features(graphs):
    """Without stats the raw (scaled) features are clipped, not propagated as huge values."""
    assert_graph_model(SeerNet(CFG), graphs)


def test_edgeless_and_single_node_graphs():
    model = SeerNet(CFG)
    lone = Data(x=torch.randn(1, 8), edge_index=torch.zeros(2, 0, dtype=torch.long),
                edge_attr=torch.zeros(0, 3), u=torch.randn(1, 4))
    empty_edges = Data(x=torch.randn(3, 8), edge_index=torch.zeros(2, 0, dtype=torch.long),
                       edge_attr=torch.zeros(0, 3), u=torch.randn(1, 4))
    assert_graph_model(model, [lone, empty_edges])


def test_without_edge_and_global_features():
    cfg = ModelConfig(node_dim=5, edge_dim=0, global_dim=0, hidden=8, layers=1)
    graphs = [Data(x=torch.randn(4, 5), edge_index=torch.tensor([[0, 1, 2], [1, 2, 3]])) for _ in range(3)]
    out = assert_graph_model(SeerNet(cfg), graphs)
    assert out.shape == (3, 1)


def test_forward_tensors_matches_forward(graphs):
    model = SeerNet(CFG).eval()
    b = Batch.from_data_list(graphs)
    torch.testing.assert_close(model.forward_tensors(b.x, b.edge_index, b.edge_attr, b.u, b.batch, b.num_graphs),
                               model(b))


def test_seeded_init_leaves_global_rng_alone():
    state = torch.random.get_rng_state()
    a, b, c = SeerNet(CFG), SeerNet(CFG), SeerNet(CFG.replace(seed=1))
    assert torch.equal(torch.random.get_rng_state(), state)
    sa, sb, sc = a.state_dict(), b.state_dict(), c.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not all(torch.equal(sa[k], sc[k]) for k in sa)


def test_standardization_makes_units_irrelevant(graphs):
    """Rescaling and shifting every input column, with stats fit on the rescaled data, changes nothing."""
    scale = {"x": torch.rand(8) * 100 + 0.01, "edge_attr": torch.rand(3) * 100 + 0.01, "u": torch.rand(4) * 10}
    scaled = []
    for g in graphs:
        h = g.clone()
        for key, s in scale.items():
            h[key] = g[key] * s + 3.0
        scaled.append(h)
    a = SeerNet(CFG).fit_normalization(graphs).eval()
    b = SeerNet(CFG).fit_normalization(scaled).eval()
    with torch.no_grad():
        torch.testing.assert_close(a(Batch.from_data_list(graphs)), b(Batch.from_data_list(scaled)),
                                   atol=1e-4, rtol=1e-4)


def test_fit_normalization_stats(graphs):
    model = SeerNet(CFG).fit_normalization(graphs)
    x = torch.cat([g.x for g in graphs]).double()
    torch.testing.assert_close(model.x_mean, x.mean(0).float())
    torch.testing.assert_close(model.x_std, x.std(0, unbiased=False).float(), rtol=1e-4, atol=1e-6)
    y = torch.cat([g.y for g in graphs]).log()
    torch.testing.assert_close(model.y_mean, y.mean(0), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="shape"):
        model.set_normalization({"x_mean": torch.zeros(3)})
    with pytest.raises(ValueError, match="unknown"):
        model.set_normalization({"bogus_mean": torch.zeros(3)})


def test_mc_dropout(graphs):
    model = SeerNet(CFG.replace(dropout=0.3)).fit_normalization(graphs).train()
    b = Batch.from_data_list(graphs)
    state = torch.random.get_rng_state()
    mean, std = model.predict(b, samples=8, seed=1)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert model.training  # mode restored
    assert mean.shape == std.shape == (6, 2) and (std > 0).all()
    mean2, std2 = model.predict(b, samples=8, seed=1)
    assert torch.equal(mean, mean2) and torch.equal(std, std2)
    assert not torch.equal(model.predict(b, samples=8, seed=2)[0], mean)


def test_heads_and_score(graphs):
    model = SeerNet(CFG)
    assert model.head_index() == 0 and model.head_index("memory") == 1
    assert SeerNet(CFG.replace(heads=("memory",))).head_index() == 0
    with pytest.raises(ValueError, match="choices: latency, memory"):
        model.head_index("power")


def test_config_validation_and_round_trip():
    with pytest.raises(ValueError, match="heads"):
        ModelConfig(node_dim=3, edge_dim=1, global_dim=1, heads=("latency", "latency"))
    with pytest.raises(ValueError, match="dropout"):
        ModelConfig(node_dim=3, edge_dim=1, global_dim=1, dropout=1.0)
    cfg = ModelConfig(node_dim=3, edge_dim=1, global_dim=1, heads=["latency", "memory"])
    assert cfg.heads == ("latency", "memory")
    assert ModelConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match="unknown fields"):
        ModelConfig.from_dict({**cfg.to_dict(), "colour": 1})


def test_config_for_schema():
    from tvm_cost.features.schema import SCHEMA

    cfg = ModelConfig.for_schema(SCHEMA, hidden=8)
    assert (cfg.node_dim, cfg.edge_dim, cfg.global_dim) == (len(SCHEMA.node), len(SCHEMA.edge),
                                                            len(SCHEMA.globals))


def test_build_model_kinds() -> None:
    assert isinstance(build_model(config=CFG), SeerNet)
    with pytest.raises(ValueError, match="choices: seernet, gcn"):
        build_model(kind="xgb", config=CFG)  # type: ignore[arg-type]
    model = SeerNet(CFG)
    assert build_model(kind=model, config=CFG) is model  # a model of this package passes through
    with pytest.raises(ValueError, match="unknown model kind Linear"):
        build_model(kind=torch.nn.Linear(2, 1), config=CFG)  # type: ignore[arg-type]
