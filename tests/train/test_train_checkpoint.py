import json

import pytest
import torch
from torch_geometric.data import Batch

from tvm_cost.errors import TvmCostError
from tvm_cost.features.schema import SCHEMA
from tvm_cost.models import GCNBaseline, ModelConfig, SeerNet, build_model, synthetic_graphs
from tvm_cost.train.checkpoint import checkpoint_paths, load_checkpoint, save_checkpoint

CFG = ModelConfig(node_dim=8, edge_dim=3, global_dim=4, hidden=8, layers=1, heads=("latency", "memory"))
FAKE_SCHEMA = {"name": "synthetic", "version": "0", "hash": "0123456789abcdef"}


@pytest.fixture(scope="module")
def batch() -> Batch:
    return Batch.from_data_list(synthetic_graphs(4, heads=CFG.heads, seed=8))


def _perturbed(model: torch.nn.Module) -> torch.nn.Module:
    """Weights unlike a fresh model's (stands in for training)."""
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.01 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
    return model


@pytest.mark.parametrize("make, fit", [
    (lambda: SeerNet(CFG), False),  # untrained: fresh weights, identity normalization
    (lambda: _perturbed(SeerNet(CFG)), True),
    (lambda: _perturbed(GCNBaseline(CFG)), True),
    (lambda: build_model(kind="seernet", config=CFG, ensemble=2), True),
], ids=["untrained", "seernet", "gcn", "ensemble"])
def test_save_load_same_predictions(tmp_path, batch, make, fit):
    model = make()
    if fit:
        model.fit_normalization(batch.to_data_list())
    model.eval()
    path = save_checkpoint(tmp_path / "sub" / "model", model, schema=FAKE_SCHEMA, extra={"target": "llvm"})
    assert path.name == "model.safetensors" and path.with_suffix(".json").is_file()
    loaded, meta = load_checkpoint(tmp_path / "sub" / "model.safetensors", schema=FAKE_SCHEMA)
    assert type(loaded) is type(model) and not loaded.training
    with torch.no_grad():
        torch.testing.assert_close(loaded(batch), model(batch), rtol=0, atol=0)
    assert loaded.config == model.config
    assert meta["model_class"] == type(model).__name__ and meta["extra"] == {"target": "llvm"}
    assert meta["feature_schema"] == FAKE_SCHEMA and meta["torch_version"] == torch.__version__


def test_real_schema_round_trip(tmp_path):
    cfg = ModelConfig.for_schema(SCHEMA, hidden=8, layers=1)
    save_checkpoint(tmp_path / "m", SeerNet(cfg), schema=SCHEMA)
    _, meta = load_checkpoint(tmp_path / "m", schema=SCHEMA)
    assert meta["feature_schema"] == {"name": SCHEMA.name, "version": SCHEMA.version, "hash": SCHEMA.hash}
    load_checkpoint(tmp_path / "m", schema=SCHEMA.hash)


def _saved(tmp_path):
    save_checkpoint(tmp_path / "m", SeerNet(CFG), schema=FAKE_SCHEMA)
    return checkpoint_paths(tmp_path / "m")


def _one_line_error(path, match, **kwargs) -> str:
    with pytest.raises(TvmCostError, match=match) as info:
        load_checkpoint(path, **kwargs)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_refuses_mismatched_schema(tmp_path):
    weights, meta = _saved(tmp_path)
    message = _one_line_error(weights, "schema hash", schema={**FAKE_SCHEMA, "hash": "ffffffffffffffff"})
    assert str(meta) in message and "0123456789abcdef" in message


def test_refuses_truncated_weights(tmp_path):
    weights, _ = _saved(tmp_path)
    weights.write_bytes(weights.read_bytes()[:-100])
    assert str(weights) in _one_line_error(weights, "truncated")


def test_refuses_truncated_metadata(tmp_path):
    weights, meta = _saved(tmp_path)
    meta.write_text(meta.read_text()[:50])
    assert str(meta) in _one_line_error(weights, "truncated or not JSON")


def test_refuses_missing_files(tmp_path):
    weights, meta = _saved(tmp_path)
    weights.unlink()
    assert str(weights) in _one_line_error(weights, "weights file is missing")
    meta.unlink()
    assert str(meta) in _one_line_error(weights, "metadata file is missing")


def test_refuses_unknown_class_and_bad_config(tmp_path):
    weights, meta = _saved(tmp_path)
    data = json.loads(meta.read_text())
    meta.write_text(json.dumps({**data, "model_class": "os.system"}))
    _one_line_error(weights, "unknown model class 'os.system'")
    meta.write_text(json.dumps({**data, "config": {**data["config"], "hidden": 9}}))
    _one_line_error(weights, "does not fit SeerNet")
    meta.write_text(json.dumps({**data, "format": "pickle"}))
    _one_line_error(weights, "not a tvm-cost-checkpoint")


def test_save_requires_schema_fields(tmp_path):
    with pytest.raises(ValueError, match="schema"):
        save_checkpoint(tmp_path / "m", SeerNet(CFG), schema={"hash": "x"})
