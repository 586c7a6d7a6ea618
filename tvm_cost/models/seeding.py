"""Seeded randomness that leaves torch's global generators as it found them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def isolated_rng(seed: int, device: torch.device | str = "cpu") -> Iterator[None]:
    """Run the body with torch's default generator(s) seeded by `seed`, then restore their previous state.

    Module constructors and `nn.Dropout` draw from torch's global generators and take no `generator` argument;
    this gives them a reproducible stream without the library touching the caller's global RNG state.

    Args:
        seed: Seed for the CPU generator and, for a CUDA `device`, that device's generator.
        device: Where the random numbers are drawn.
    """
    device = torch.device(device)
    cuda = device.type == "cuda"
    devices = [device.index if device.index is not None else torch.cuda.current_device()] if cuda else []
    with torch.random.fork_rng(devices=devices, device_type="cuda"):
        torch.random.default_generator.manual_seed(seed)
        if cuda:
            with torch.cuda.device(devices[0]):
                torch.cuda.manual_seed(seed)
        yield
