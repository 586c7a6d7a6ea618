"""Real GPU measurements published by others (HELP, NeuSight), with loaders that take the data folder.

The data are not part of this package; see ``docs/external_data.md`` for where the originals live. Importing
this package is cheap (standard library + numpy); the NAS-Bench-201 builders import torch, and
:func:`nb201_to_relax` also TVM, on first use.
"""

from __future__ import annotations

from typing import Any

from tvm_cost.data.external.help import (
    HELP_GPUS,
    HELP_SPACES,
    HelpRecord,
    help_latency_matrix,
    load_help,
    load_help_archs,
    parse_help_device,
)
from tvm_cost.data.external.neusight import (
    GpuSpec,
    NeuSightLabel,
    OpRecord,
    TraceNode,
    gpu_key,
    load_collected_ops,
    load_gpu_specs,
    load_labels,
    load_op_table,
    load_test_ops,
    load_trace,
)

_LAZY = {
    "NB201Network": "tvm_cost.data.external.nasbench201",
    "parse_nb201": "tvm_cost.data.external.nasbench201",
    "nb201_to_relax": "tvm_cost.data.external.nasbench201_relax",
}

__all__ = [
    "HELP_GPUS",
    "HELP_SPACES",
    "GpuSpec",
    "HelpRecord",
    "NB201Network",
    "NeuSightLabel",
    "OpRecord",
    "TraceNode",
    "gpu_key",
    "help_latency_matrix",
    "load_collected_ops",
    "load_gpu_specs",
    "load_help",
    "load_help_archs",
    "load_labels",
    "load_op_table",
    "load_test_ops",
    "load_trace",
    "nb201_to_relax",
    "parse_help_device",
    "parse_nb201",
]


def __getattr__(name: str) -> Any:
    """Imports the torch/TVM-backed names on first use, keeping ``import tvm_cost.data.external`` fast."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
