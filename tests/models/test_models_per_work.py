"""Models that predict per unit of work (`ModelConfig.work_globals`): the offset, its stats, extrapolation."""

import math

import pytest
import torch
from models_helpers import assert_graph_model
from torch_geometric.data import Batch, Data

from tvm_cost.models import ModelConfig, build_model, synthetic_graphs
from tvm_cost.models.base import graph_log_work
from tvm_cost.models.seeding import isolated_rng
from tvm_cost.train.losses import log_mse_loss

CFG = ModelConfig(node_dim=8, edge_dim=3, global_dim=4, hidden=16, layers=2, dropout=0.0,
                  heads=("latency", "memory"), readout="sum")
WORK = (1, 3)


def _with_work(graphs: list[Data], log_work: list[float]) -> list[Data]:
    """Copies of `graphs` whose u columns `WORK` hold ln(1 + count) with ln(sum of (1 + count)) = `log_work`."""
    out = []
    for g, w in zip(graphs, log_work, strict=True):
        g = g.clone()
        g.u = g.u.clone()
        g.u[0, list(WORK)] = w - math.log(2.0)  # two equal counts: logsumexp adds ln 2 back
        out.append(g)
    return out


@pytest.fixture(scope="module")
def graphs() -> list[Data]:
    return _with_work(synthetic_graphs(6, heads=CFG.heads, seed=3), [2.0, 3.0, 5.0, 7.0, 11.0, 13.0])


@pytest.mark.parametrize("readout", ["pool", "sum"])
def test_forward_adds_the_log_work_to_every_head(graphs, readout):
    plain = build_model(config=CFG.replace(readout=readout)).fit_normalization(graphs).eval()
    per_work = build_model(config=CFG.replace(readout=readout, work_globals=WORK)).eval()
    per_work.load_state_dict(plain.state_dict())  # same weights and stats: outputs differ by the offset only
    batch = Batch.from_data_list(graphs)
    work = torch.logsumexp(batch.u[:, list(WORK)], dim=1, keepdim=True)
    torch.testing.assert_close(work[:, 0], torch.tensor([2.0, 3.0, 5.0, 7.0, 11.0, 13.0]))
    with torch.no_grad():
        torch.testing.assert_close(per_work(batch), plain(batch) + work)
    torch.testing.assert_close(graph_log_work(per_work.config, batch), work)
    assert torch.equal(graph_log_work(plain.config, batch), torch.zeros(6, 1))
    assert_graph_model(per_work, graphs)


def test_fit_normalization_standardizes_the_target_per_unit_of_work(graphs):
    model = build_model(config=CFG.replace(work_globals=WORK)).fit_normalization(graphs)
    batch = Batch.from_data_list(graphs)
    per_work = batch.y.log() - torch.logsumexp(batch.u[:, list(WORK)], dim=1, keepdim=True)
    torch.testing.assert_close(model.y_mean, per_work.mean(0), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(model.y_std, per_work.std(0, unbiased=False), rtol=1e-4, atol=1e-5)


def test_config_validation_and_round_trip():
    cfg = ModelConfig.from_dict({**CFG.to_dict(), "work_globals": [1, 3]})
    assert cfg.work_globals == WORK and ModelConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match="work_globals"):
        CFG.replace(work_globals=(4,))
    no_globals = Data(x=torch.ones(2, 8), edge_index=torch.zeros(2, 0, dtype=torch.long))
    with pytest.raises(ValueError, match="no u"):
        build_model(config=CFG.replace(work_globals=WORK))(no_globals)


def _fit(config: ModelConfig, graphs: list[Data], steps: int = 300) -> torch.nn.Module:
    model = build_model(config=config).fit_normalization(graphs).train()
    batch = Batch.from_data_list(graphs)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    with isolated_rng(0):
        for _ in range(steps):
            opt.zero_grad()
            log_mse_loss(model(batch), batch.y).backward()
            opt.step()
    return model.eval()


def test_per_work_extrapolates_to_graphs_larger_than_any_seen():
    """Latency = work x a feature-dependent factor; trained on small work, tested on 1000x more: the per-work
    model scales with the work, the plain one stays near the largest latency it saw (synthetic data)."""
    def dataset(n: int, seed: int, low: float, high: float) -> list[Data]:
        base = synthetic_graphs(n, heads=("latency",), seed=seed)
        work = torch.empty(n).uniform_(low, high, generator=torch.Generator().manual_seed(seed)).tolist()
        out = _with_work(base, work)
        for g, w in zip(out, work, strict=True):
            g.y = g.y * math.exp(w)
        return out

    train, test = dataset(48, 0, 2.0, 6.0), dataset(16, 1, 12.0, 13.0)
    cfg = CFG.replace(heads=("latency",), hidden=32)
    batch = Batch.from_data_list(test)

    def log_error(model: torch.nn.Module) -> float:
        with torch.no_grad():
            return float((model(batch) - batch.y.log()).abs().median())

    per_work, plain = _fit(cfg.replace(work_globals=WORK), train), _fit(cfg, train)
    assert log_error(per_work) < 1.0 < 3.0 < log_error(plain)
