"""Two gloo processes on 127.0.0.1 train with DistributedDataParallel and end with identical weights."""

import json
import socket

import pytest
import torch
import torch.multiprocessing as mp
from ddp_worker import worker
from safetensors.torch import load_file


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow  # ~20 s: two fresh interpreters import torch, PyG and tvm_cost
def test_two_ranks_end_with_identical_weights(tmp_path):
    mp.spawn(worker, args=(2, _free_port(), str(tmp_path)), nprocs=2, join=True)
    for name in ("plain", "pcgrad"):
        w0, w1 = (load_file(str(tmp_path / f"{name}{r}.safetensors")) for r in (0, 1))
        assert w0.keys() == w1.keys()
        for key in w0:
            assert torch.equal(w0[key], w1[key]), f"{name}: {key} differs between ranks"
        h0, h1 = (json.loads((tmp_path / f"{name}{r}.json").read_text()) for r in (0, 1))
        assert h0["seen"] == [0, 0] and h1["seen"] == [1, 1]
        strip = [{k: v for k, v in rec.items() if k != "rank"} for rec in h0["records"]]
        assert strip == [{k: v for k, v in rec.items() if k != "rank"} for rec in h1["records"]]
