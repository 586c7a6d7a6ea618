"""PCGrad: gradient surgery for training several heads (metrics, or regression + ranking) together."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
import torch.distributed as dist
from torch import Tensor


def project_conflicting(grads: Tensor, *, generator: torch.Generator) -> Tensor:
    r"""Project each task gradient off the normal plane of every task gradient it conflicts with.

    Gradient Surgery for Multi-Task Learning, Yu et al. 2020, https://arxiv.org/abs/2001.06782 (Algorithm 1):
    for task ``i``, for ``j`` in a random order (``j != i``), if :math:`g_i^{pc} \cdot g_j < 0` then
    :math:`g_i^{pc} \leftarrow g_i^{pc} - \frac{g_i^{pc} \cdot g_j}{\lVert g_j \rVert^2} g_j`, always projecting
    against the original :math:`g_j`. Tasks whose gradients do not conflict are left unchanged.

    Args:
        grads: One flattened gradient per task.
        generator: Draws the order of the other tasks, one permutation per task.

    Shapes:
        grads: [T, P] -> [T, P] (the projected gradients; sum or average them for the update).
    """
    out = grads.clone()
    num = grads.shape[0]
    norms = (grads * grads).sum(1)
    for i in range(num):
        for j in torch.randperm(num, generator=generator).tolist():
            if j == i or norms[j] == 0:
                continue
            dot = out[i] @ grads[j]
            if dot < 0:
                out[i] -= dot / norms[j] * grads[j]
    return out


class PCGrad:
    """An optimizer wrapper whose `backward` applies PCGrad to a list of task losses.

    Usage: ``opt.zero_grad(); opt.backward([loss_a, loss_b]); opt.step()``. Per-task gradients are taken with
    `torch.autograd.grad` (no hooks), and, as in the paper, surgery applies to the shared parameters only (those
    two or more tasks reach): their task gradients are projected with `project_conflicting` and combined; a
    task-specific parameter (e.g. one head) gets its task's plain gradient. The result is written to ``.grad``.

    Under `torch.distributed` each task gradient is averaged over ranks before projection, so every rank applies
    the same update; run the forward of a `DistributedDataParallel` model under ``no_sync()`` (its own reducer is
    not used here).

    Args:
        optimizer: Any torch optimizer over the parameters to train.
        generator: Source of the random task orders (explicit, for reproducibility).
        reduction: Combine the projected gradients by "sum" (the paper) or "mean".
    """

    def __init__(self, optimizer: torch.optim.Optimizer, *, generator: torch.Generator,
                 reduction: Literal["sum", "mean"] = "sum") -> None:
        if reduction not in ("sum", "mean"):
            raise ValueError(f"unknown reduction {reduction!r}; choices: sum, mean")
        self.optimizer, self.generator, self.reduction = optimizer, generator, reduction

    @property
    def params(self) -> list[Tensor]:
        return [p for group in self.optimizer.param_groups for p in group["params"] if p.requires_grad]

    def zero_grad(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)

    def step(self) -> None:
        self.optimizer.step()

    def backward(self, losses: Sequence[Tensor]) -> Tensor:
        """Set ``.grad`` of every parameter to the PCGrad combination of `losses`' gradients.

        Returns:
            The projected per-task gradients of the shared parameters, ``[T, P_shared]`` (for logging or tests).
        """
        params = self.params
        per_task = [torch.autograd.grad(loss, params, retain_graph=k < len(losses) - 1, allow_unused=True)
                    for k, loss in enumerate(losses)]
        shared = [sum(g[i] is not None for g in per_task) > 1 for i in range(len(params))]
        flat = torch.stack([torch.cat([(torch.zeros_like(p) if g is None else g).reshape(-1)
                                       for p, g in zip(params, grads)]) for grads in per_task])
        if dist.is_available() and dist.is_initialized():
            dist.all_reduce(flat)
            flat /= dist.get_world_size()
        mask = torch.cat([torch.full((p.numel(),), s, dtype=torch.bool, device=flat.device)
                          for p, s in zip(params, shared)])
        projected = project_conflicting(flat[:, mask], generator=self.generator)
        combined = flat.clone()
        combined[:, mask] = projected
        total = combined.sum(0) if self.reduction == "sum" else combined.mean(0)
        offset = 0
        for p, used in zip(params, zip(*per_task)):
            n = p.numel()
            p.grad = None if all(g is None for g in used) else total[offset:offset + n].view_as(p).clone()
            offset += n
        return projected
