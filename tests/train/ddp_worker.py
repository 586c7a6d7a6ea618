"""A DDP training worker for `test_train_ddp.py` (its own module so spawned processes can import it)."""

from __future__ import annotations

import json
from pathlib import Path

import torch
import torch.distributed as dist
from safetensors.torch import save_file

from tvm_cost.models import ModelConfig, SeerNet, synthetic_graphs
from tvm_cost.train import TrainConfig, train

HEADS = ("latency", "memory")


def worker(rank: int, world: int, port: int, out_dir: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        train_set = synthetic_graphs(24, heads=HEADS, seed=20)
        val_set = synthetic_graphs(8, heads=HEADS, seed=21)
        for name, pcgrad in (("plain", False), ("pcgrad", True)):
            # a different init per rank: DDP must start every rank from rank 0's weights
            model = SeerNet(ModelConfig(node_dim=8, edge_dim=3, global_dim=4, hidden=8, layers=1, heads=HEADS,
                                        seed=rank))
            seen: list[int] = []
            config = TrainConfig(epochs=2, batch_size=4, lr=1e-2, pcgrad=pcgrad, rank_weight=0.5, seed=3)
            history = train(model, train_set, val_set, config=config,
                            callback=lambda r: seen.append(int(r["rank"])))
            save_file({k: v.contiguous() for k, v in model.state_dict().items()},
                      str(Path(out_dir) / f"{name}{rank}.safetensors"))
            (Path(out_dir) / f"{name}{rank}.json").write_text(json.dumps(
                {"records": history.records, "seen": seen}))
    finally:
        dist.destroy_process_group()
