"""tvm-cost: a learned cost model for Apache TVM.

Importing this package does not import tvm or torch; the functions below import them when called.
"""

from relay_passes.graph import OperatorGraph, OpNode, TensorEdge
from tvm_cost.errors import TvmCostError
from tvm_cost.features.schema import SCHEMA, FeatureSchema
from tvm_cost.graph_api import load_database, operator_graph
from tvm_cost.importer import ImportedModel, import_model
from tvm_cost.targets import PRESETS, HardwareSpec, ResolvedTarget, resolve_target

_LAZY = {  # these import tvm (seconds): resolved on first use
    "GNNCostModel": "tvm_cost.tuning",
    "EnsembleCostModel": "tvm_cost.tuning",
    "RankerCostModel": "tvm_cost.tuning",
    "ScreenedCostModel": "tvm_cost.tuning",
    "make_cost_model": "tvm_cost.tuning",
    "tune_tir": "tvm_cost.tuning",
    "tune_model": "tvm_cost.tuning",
    "estimate": "tvm_cost.estimation.api",
    "Estimate": "tvm_cost.estimation.api",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'tvm_cost' has no attribute {name!r}")


__all__ = [
    "EnsembleCostModel",
    "Estimate",
    "GNNCostModel",
    "PRESETS",
    "RankerCostModel",
    "SCHEMA",
    "ScreenedCostModel",
    "FeatureSchema",
    "HardwareSpec",
    "ImportedModel",
    "OpNode",
    "OperatorGraph",
    "ResolvedTarget",
    "TensorEdge",
    "TvmCostError",
    "estimate",
    "import_model",
    "load_database",
    "make_cost_model",
    "operator_graph",
    "resolve_target",
    "tune_model",
    "tune_tir",
]
__version__ = "0.1.0"
