import pytest
import torch
from models_helpers import assert_graph_model
from torch_geometric.data import Batch

from tvm_cost.models import EnsembleModel, ModelConfig, SeerNet, build_model, synthetic_graphs

CFG = ModelConfig(node_dim=8, edge_dim=3, global_dim=4, hidden=8, layers=1, heads=("latency", "memory"))


def test_ensemble_contract_and_uncertainty():
    graphs = synthetic_graphs(4, heads=CFG.heads, seed=6)
    model = build_model(config=CFG, ensemble=3).fit_normalization(graphs)
    assert isinstance(model, EnsembleModel) and len(model.members) == 3
    out = assert_graph_model(model, graphs, deterministic_predict=False)
    members = [m.state_dict() for m in model.members]
    assert not torch.equal(members[0]["node_encoder.0.weight"], members[1]["node_encoder.0.weight"])
    for m in model.members:  # one set of stats for all members
        torch.testing.assert_close(m.x_mean, model.members[0].x_mean)
    mean, std = model.predict(Batch.from_data_list(graphs))
    torch.testing.assert_close(mean, out)
    assert (std > 0).all()
    # member i is the single model seeded with seed + i
    single = SeerNet(CFG.replace(seed=2))
    assert torch.equal(single.state_dict()["node_encoder.0.weight"], members[2]["node_encoder.0.weight"])


def test_ensemble_arguments():
    with pytest.raises(ValueError, match="size"):
        EnsembleModel(CFG, size=1)
    with pytest.raises(ValueError, match="choices"):
        EnsembleModel(CFG, kind="xgb")
    assert EnsembleModel(CFG, kind="gcn", size=2).init_args() == {"kind": "gcn", "size": 2}
