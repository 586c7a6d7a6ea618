"""Training losses: log-space regression, pairwise ranking within groups, listwise ranking within groups.

Conventions: `pred_log` is a model output (natural log of the metric); `score` is higher-is-better (minus the
predicted log-latency, see `GraphCostModel.score`); `latency` is the measured value (any positive unit);
`group` is an int64 id per candidate (e.g. the tuning task), arbitrary values, not necessarily sorted.
Ranking losses only compare candidates of the same group.
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.utils import scatter, softmax, to_dense_batch


def _zero(like: Tensor) -> Tensor:
    return like.sum() * 0.0  # keeps the graph so .backward() works on a batch without terms


def log_mse_loss(pred_log: Tensor, target: Tensor) -> Tensor:
    """Mean squared error between `pred_log` and ``log(target)``, over entries with a finite positive target.

    Missing metrics (NaN or <= 0 in `target`) are skipped, so multi-metric data with gaps trains every head.

    Shapes:
        pred_log, target: same shape (e.g. [G] or [G, heads]) -> scalar.
    """
    ok = torch.isfinite(target) & (target > 0)
    if not bool(ok.any()):
        return _zero(pred_log)
    return F.mse_loss(pred_log[ok], target[ok].log())


def _compact(group: Tensor) -> Tensor:
    return torch.unique(group, return_inverse=True)[1]


def centered_log_mse_loss(pred_log: Tensor, latency: Tensor, group: Tensor) -> Tensor:
    """Log-space MSE after centering predictions and targets on their group's mean ("per-task normalized").

    Only how candidates differ within their group counts, not the group's overall level, so tasks of very
    different sizes weigh alike; candidates alone in their group (in the batch) are skipped.

    Shapes:
        pred_log, latency, group: [B] -> scalar.
    """
    ok = torch.isfinite(latency) & (latency > 0)
    index = _compact(group[ok])
    if index.numel() == 0:
        return _zero(pred_log)
    num = int(index.max()) + 1
    sizes = scatter(torch.ones_like(pred_log[ok]), index, dim_size=num, reduce="sum")
    keep = sizes[index] > 1
    if not bool(keep.any()):
        return _zero(pred_log)
    target = latency[ok].log()
    pred_c = pred_log[ok] - scatter(pred_log[ok], index, dim_size=num, reduce="mean")[index]
    target_c = target - scatter(target, index, dim_size=num, reduce="mean")[index]
    return F.mse_loss(pred_c[keep], target_c[keep])


def pairwise_ranking_loss(score: Tensor, latency: Tensor, group: Tensor, *,
                          kind: Literal["logistic", "hinge"] = "logistic", margin: float = 1.0,
                          tie_tol: float = 0.0, top_weight: float = 0.0) -> Tensor:
    r"""Mean pairwise loss over ordered pairs of one group where ``i`` is truly faster than ``j``.

    RankNet's logistic loss :math:`\log(1 + e^{-(s_i - s_j)})` (Burges et al. 2005), or the hinge
    :math:`\max(0, m - (s_i - s_j))` with margin `margin`. A pair counts when ``latency_j > latency_i *
    (1 + tie_tol)``, so near-ties within measurement noise are not forced apart. With `top_weight` p > 0 the mean
    is weighted by :math:`(\min_{group} latency / latency_i)^p`, the faster member's throughput relative to its
    group's best: the order among fast candidates, the one a converging search acts on, counts more than the
    order among slow ones (0: all pairs alike). All pairs are formed densely, ``O(B^2)`` memory for a batch of B
    candidates (fine up to a few thousand).

    Shapes:
        score, latency, group: [B] -> scalar (0 with a gradient path when no pair qualifies).
    """
    same = group[:, None] == group[None, :]
    better = latency[None, :] > latency[:, None] * (1.0 + tie_tol)  # [i, j]: i faster than j
    finite = torch.isfinite(latency)
    pairs = same & better & finite[:, None] & finite[None, :]
    if not bool(pairs.any()):
        return _zero(score)
    diff = (score[:, None] - score[None, :])[pairs]
    if kind == "logistic":
        terms = F.softplus(-diff)
    elif kind == "hinge":
        terms = F.relu(margin - diff)
    else:
        raise ValueError(f"unknown pairwise loss kind {kind!r}; choices: logistic, hinge")
    if top_weight == 0:
        return terms.mean()
    index = _compact(group)
    best = scatter(latency.masked_fill(~finite, float("inf")), index, reduce="min")[index]
    weight = (best / latency).clamp(max=1.0).pow(top_weight)[:, None].expand_as(pairs)[pairs]
    return (weight * terms).sum() / weight.sum()


def listnet_loss(score: Tensor, latency: Tensor, group: Tensor, *, temperature: float = 1.0) -> Tensor:
    r"""ListNet top-one cross entropy (Cao et al. 2007), averaged over groups of two or more candidates.

    Target distribution per group: :math:`\mathrm{softmax}(-\log(\mathrm{latency}) / T)`, i.e. proportional to
    :math:`\mathrm{latency}^{-1/T}` (throughput); predicted distribution: :math:`\mathrm{softmax}(s)`.

    Shapes:
        score, latency, group: [B] -> scalar.
    """
    index = _compact(group)
    num = int(index.max()) + 1 if index.numel() else 0
    sizes = scatter(torch.ones_like(score), index, dim_size=num, reduce="sum")
    if num == 0 or not bool((sizes > 1).any()):
        return _zero(score)
    target = softmax(-latency.log() / temperature, index, num_nodes=num)
    log_p = torch.log(softmax(score, index, num_nodes=num).clamp(min=1e-30))
    ce = scatter(-target * log_p, index, dim_size=num, reduce="sum")
    return ce[sizes > 1].mean()


def listmle_loss(score: Tensor, latency: Tensor, group: Tensor) -> Tensor:
    r"""ListMLE (Xia et al. 2008): negative Plackett-Luce log-likelihood of the true order, per group.

    With candidates of a group sorted fastest first, :math:`\sum_i [\log \sum_{k \ge i} e^{s_k} - s_i]`; averaged
    over groups of two or more candidates. Tied latencies are ordered arbitrarily (stably).

    Shapes:
        score, latency, group: [B] -> scalar.
    """
    index = _compact(group)
    if index.numel() == 0:
        return _zero(score)
    # Sort by group, then slowest first, so each "k >= i" suffix becomes a prefix within the group.
    order = torch.argsort(latency, descending=True, stable=True)
    order = order[torch.argsort(index[order], stable=True)]
    dense, mask = to_dense_batch(score[order], index[order], fill_value=float("-inf"))
    valid = mask.sum(1) > 1
    if not bool(valid.any()):
        return _zero(score)
    terms = torch.where(mask, torch.logcumsumexp(dense, dim=1) - dense, 0.0)
    return terms.sum(1)[valid].mean()
