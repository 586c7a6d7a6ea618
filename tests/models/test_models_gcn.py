import torch
from models_helpers import assert_graph_model
from torch_geometric.data import Batch

from tvm_cost.models import GCNBaseline, ModelConfig, build_model, synthetic_graphs

CFG = ModelConfig(node_dim=8, edge_dim=3, global_dim=4, hidden=16, layers=2)


def test_contract():
    graphs = synthetic_graphs(5, seed=4)
    model = build_model(kind="gcn", config=CFG).fit_normalization(graphs)
    assert isinstance(model, GCNBaseline)
    assert_graph_model(model, graphs)


def test_ignores_edge_features_but_not_edges():
    graphs = synthetic_graphs(3, seed=5)
    model = GCNBaseline(CFG).eval()
    b = Batch.from_data_list(graphs)
    with torch.no_grad():
        out = model(b)
        b2 = b.clone()
        b2.edge_attr = torch.randn_like(b.edge_attr)
        torch.testing.assert_close(model(b2), out)
        b2.edge_index, b2.edge_attr = b.edge_index[:, :0], b.edge_attr[:0]
        assert not torch.allclose(model(b2), out)
