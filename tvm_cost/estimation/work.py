"""Work: FLOPs + bytes of a kernel or a whole model, to learn latency per unit of work instead of latency.

Trees cannot predict past the largest label they saw and GNNs extrapolate poorly, so a model or kernel larger
than any in training gets a capped or wild estimate. Learning log(latency / work) keeps the target in range when
the work grows; the estimate is then multiplied back. On held-out model families this took KernelBoost from 7.9 %
to 4.5 % MAPE and the end-to-end GNNs from 32-41 % to 17-22 % (docs/e2e.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tvm_cost.features.schema import SCHEMA

_NODE_LOG_FLOPS, _NODE_LOG_BYTES = SCHEMA.node.index("log_flops"), SCHEMA.node.index("log_bytes")
_LOG_TOTAL_FLOPS, _LOG_TOTAL_BYTES = SCHEMA.globals.index("log_total_flops"), SCHEMA.globals.index("log_total_bytes")


def node_log_work(item: Any) -> np.ndarray:
    """ln(FLOPs + bytes) of each node of an operator graph, from its ``log_flops`` and ``log_bytes`` (ln(1 + x)).

    Shapes:
        -> [N]
    """
    x = item.x.numpy()
    return np.logaddexp(x[:, _NODE_LOG_FLOPS], x[:, _NODE_LOG_BYTES])


def graph_work(items: Sequence[Any]) -> np.ndarray:
    """Total FLOPs + bytes of each operator graph, from its globals ``log_total_flops`` and ``log_total_bytes``.

    Shapes:
        -> [len(items)]
    """
    u = np.stack([d.u.reshape(-1).numpy() for d in items])
    return np.expm1(u[:, _LOG_TOTAL_FLOPS]) + np.expm1(u[:, _LOG_TOTAL_BYTES])


def per_work(items: Sequence[Any]) -> list[Any]:
    """Copies of e2e items whose latency label (``y[:, 0]``) is divided by the graph's work; other columns kept."""
    out = []
    for d, work in zip(items, graph_work(items), strict=True):
        c = d.clone()
        c.y = d.y.clone()
        c.y[:, 0] = d.y[:, 0] / float(work)
        out.append(c)
    return out
