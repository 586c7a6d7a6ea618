"""Tests here run single-threaded: tiny graphs gain nothing from threads, and on a shared 2-core box thread
contention made them ~10x slower. Restored after each test, so other folders' tests keep their setting."""

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_torch_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
