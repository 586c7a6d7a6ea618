"""Batch samplers: shuffled or whole-group batches, identical on every DDP rank's schedule, seeded per epoch."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import torch
from torch.utils.data import DistributedSampler, Sampler
from torch_geometric.loader import DataLoader


class GroupBatchSampler(Sampler[list[int]]):
    """Batches made of whole groups (e.g. all candidates of one tuning task), so ranking losses see many pairs.

    Each epoch (seeded by ``seed + epoch``, like `DistributedSampler`) shuffles the groups and the candidates
    within them, cuts groups larger than `batch_size` into chunks, and packs consecutive chunks into batches of at
    most `batch_size`. Under DDP the batch list is padded by repetition to a multiple of `num_replicas` and rank
    ``r`` takes every ``num_replicas``-th batch, so all ranks run the same number of steps.

    Args:
        groups: Group id of each dataset item.
        batch_size: Maximum items per batch.
        seed: Base seed.
        num_replicas, rank: DDP world size and this process's rank.
    """

    def __init__(self, groups: Sequence[int] | torch.Tensor, *, batch_size: int, seed: int = 0,
                 num_replicas: int = 1, rank: int = 0) -> None:
        self.groups = torch.as_tensor(groups).reshape(-1)
        self.batch_size, self.seed, self.num_replicas, self.rank = batch_size, seed, num_replicas, rank
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def _batches(self) -> list[list[int]]:
        gen = torch.Generator().manual_seed(self.seed + self.epoch)
        ids = torch.unique(self.groups)
        chunks: list[list[int]] = []
        for gid in ids[torch.randperm(ids.numel(), generator=gen)].tolist():
            found = torch.nonzero(self.groups == gid).reshape(-1)
            members: list[int] = found[torch.randperm(found.numel(), generator=gen)].tolist()
            chunks += [members[i:i + self.batch_size] for i in range(0, len(members), self.batch_size)]
        batches: list[list[int]] = []
        for chunk in chunks:
            if batches and len(batches[-1]) + len(chunk) <= self.batch_size:
                batches[-1] += chunk
            else:
                batches.append(list(chunk))
        if self.num_replicas > 1 and batches:
            batches += batches[:(-len(batches)) % self.num_replicas]
        return batches[self.rank::self.num_replicas]

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self._batches())

    def __len__(self) -> int:
        return len(self._batches())


def make_loader(dataset: Sequence[Any], *, batch_size: int, batching: str = "random", seed: int = 0,
                num_replicas: int = 1, rank: int = 0) -> tuple[DataLoader, Any]:
    """A PyG `DataLoader` over `dataset` and its sampler (call ``sampler.set_epoch(e)`` before each epoch).

    "random" uses `DistributedSampler` (also for one process: it is seeded per epoch without a global RNG);
    "group" uses `GroupBatchSampler` over each item's ``group`` attribute.
    """
    if batching == "group":
        groups = [int(d.group.reshape(-1)[0]) for d in dataset]
        sampler: Any = GroupBatchSampler(groups, batch_size=batch_size, seed=seed, num_replicas=num_replicas,
                                         rank=rank)
        return DataLoader(dataset, batch_sampler=sampler, generator=torch.Generator().manual_seed(seed)), sampler
    if batching != "random":
        raise ValueError(f"unknown batching {batching!r}; choices: random, group")
    sampler = DistributedSampler(dataset, num_replicas=num_replicas, rank=rank, shuffle=True,  # type: ignore[arg-type]
                                 seed=seed)
    # The explicit generator only feeds the loader's worker base seed, which otherwise comes from the global RNG.
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler,
                      generator=torch.Generator().manual_seed(seed)), sampler
