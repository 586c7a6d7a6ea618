"""CUDA smoke test: training, MC dropout and checkpoints with the model on a GPU."""

import pytest
import torch

from tvm_cost.models import ModelConfig, SeerNet, synthetic_graphs
from tvm_cost.train import TrainConfig, load_checkpoint, save_checkpoint, train

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]


def test_train_predict_save_on_cuda(tmp_path):
    graphs = synthetic_graphs(32, seed=30)
    model = SeerNet(ModelConfig(node_dim=8, edge_dim=3, global_dim=4, hidden=16, layers=1, dropout=0.2))
    cpu_state, cuda_state = torch.random.get_rng_state(), torch.cuda.get_rng_state()
    history = train(model, graphs, graphs, config=TrainConfig(epochs=3, batch_size=8, device="cuda"))
    assert history.records[-1]["train_loss"] < history.records[0]["train_loss"]
    batch = next(iter(torch.utils.data.DataLoader(graphs, batch_size=32, collate_fn=_collate))).to("cuda")
    mean, std = model.predict(batch, samples=4, seed=0)
    assert mean.is_cuda and (std > 0).all()
    assert torch.equal(torch.random.get_rng_state(), cpu_state)
    assert torch.equal(torch.cuda.get_rng_state(), cuda_state)
    save_checkpoint(tmp_path / "m", model, schema={"name": "synthetic", "version": "0", "hash": "x"})
    loaded, _ = load_checkpoint(tmp_path / "m", map_location="cuda")
    torch.testing.assert_close(loaded(batch), model.eval()(batch))


def _collate(items):
    from torch_geometric.data import Batch

    return Batch.from_data_list(items)
