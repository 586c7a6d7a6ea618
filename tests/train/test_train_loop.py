import numpy as np
import pytest
import torch

from tvm_cost.models import ModelConfig, SeerNet, build_model, synthetic_graphs
from tvm_cost.train import GroupBatchSampler, TrainConfig, evaluate, train

CFG = ModelConfig(node_dim=8, edge_dim=3, global_dim=4, hidden=16, layers=1, dropout=0.0)
FAST = TrainConfig(epochs=3, batch_size=16, lr=3e-3)


@pytest.fixture(scope="module")
def data():
    return synthetic_graphs(48, seed=10), synthetic_graphs(16, seed=11)


def test_loop_fits_and_reports(data):
    """End to end through the loop: the validation error drops well below the untrained model's."""
    train_set, _ = data
    model = SeerNet(CFG)
    seen = []
    history = train(model, train_set, train_set, config=FAST.replace(epochs=40, patience=None),
                    callback=seen.append)
    assert len(history.records) == 40 and seen == history.records
    first, best = history.records[0], history.records[history.best_epoch]
    assert best["val_loss"] < 0.25 * first["val_loss"] and best["val_rmse_log_latency"] < 0.35
    assert {"train_loss", "lr", "val_mse_latency", "val_pairwise_acc", "val_peak@1", "val_kendall"} <= set(best)
    final = evaluate(model, train_set, config=FAST)  # best weights restored
    assert final["val_loss"] == pytest.approx(history.best_value, rel=1e-5)


def test_seeded_and_global_rng_untouched(data):
    train_set, val_set = data
    cfg = CFG.replace(dropout=0.2)
    state = torch.random.get_rng_state()
    a, b = SeerNet(cfg), SeerNet(cfg)
    ha = train(a, train_set, val_set, config=FAST)
    hb = train(b, train_set, val_set, config=FAST)
    assert torch.equal(torch.random.get_rng_state(), state)
    np.testing.assert_equal(ha.records, hb.records)  # NaN-aware: peak@5 is undefined on groups of 4
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    hc = train(SeerNet(cfg), train_set, val_set, config=FAST.replace(seed=1))
    assert hc.records != ha.records


def test_early_stopping_and_plateau(data):
    train_set, val_set = data
    # the learning rate as the monitored value: in "max" mode no epoch after the first improves on it
    config = FAST.replace(epochs=10, patience=2, schedule="plateau", plateau_patience=0, monitor="lr",
                          monitor_mode="max")
    history = train(SeerNet(CFG), train_set, val_set, config=config)
    assert history.stopped_early and len(history.records) == 3 and history.best_epoch == 0
    assert history.column("lr") == pytest.approx([3e-3, 3e-3, 1.5e-3])  # halved after the first bad epoch


def test_ranking_terms_group_batches_and_pcgrad(data):
    train_set, val_set = data
    heads = ("latency", "memory")
    cfg = CFG.replace(heads=heads)
    train2, val2 = synthetic_graphs(32, heads=heads, seed=12), synthetic_graphs(8, heads=heads, seed=13)
    config = FAST.replace(epochs=4, rank_weight=1.0, listwise_weight=0.5, listwise="listnet", batching="group",
                          pcgrad=True, monitor="val_pairwise_acc", monitor_mode="max")
    history = train(build_model(config=cfg), train2, val2, config=config)
    record = history.records[-1]
    assert {"val_mse_latency", "val_mse_memory", "val_rank", "val_listwise", "val_mape_memory"} <= set(record)
    assert history.records[-1]["train_loss"] < history.records[0]["train_loss"]
    with pytest.raises(ValueError, match="monitor 'val_nope'"):
        train(SeerNet(CFG), train_set, val_set, config=FAST.replace(monitor="val_nope"))


def test_without_validation_monitors_train_loss(data):
    train_set, _ = data
    history = train(build_model(kind="gcn", config=CFG), train_set, config=FAST)
    assert history.best_value == min(history.column("train_loss"))


def test_group_batch_sampler() -> None:
    groups = [0] * 5 + [1] * 3 + [2] * 2 + [3] * 9
    sampler = GroupBatchSampler(groups, batch_size=4, seed=0)
    batches = list(sampler)
    assert sorted(i for b in batches for i in b) == list(range(len(groups)))
    assert all(len(b) <= 4 for b in batches)
    for g in (1, 2):  # groups that fit a batch are never split
        assert sum(any(groups[i] == g for i in b) for b in batches) == 1
    assert list(sampler) == batches and len(sampler) == len(batches)
    sampler.set_epoch(1)
    assert list(sampler) != batches
    ranks = [GroupBatchSampler(groups, batch_size=4, seed=0, num_replicas=2, rank=r) for r in (0, 1)]
    assert len(ranks[0]) == len(ranks[1]) == (len(batches) + 1) // 2
    with pytest.raises(ValueError, match="batching"):
        TrainConfig(batching="task")  # type: ignore[arg-type]
