"""tvm-cost: a learned cost model for Apache TVM.

Importing this package does not import tvm or torch; the functions below import them when called.
"""

from relay_passes.graph import OperatorGraph, OpNode, TensorEdge
from tvm_cost.errors import TvmCostError
from tvm_cost.features.schema import SCHEMA, FeatureSchema
from tvm_cost.graph_api import load_database, operator_graph
from tvm_cost.importer import ImportedModel, import_model
from tvm_cost.targets import PRESETS, HardwareSpec, ResolvedTarget, resolve_target

__all__ = [
    "PRESETS",
    "SCHEMA",
    "FeatureSchema",
    "HardwareSpec",
    "ImportedModel",
    "OpNode",
    "OperatorGraph",
    "ResolvedTarget",
    "TensorEdge",
    "TvmCostError",
    "import_model",
    "load_database",
    "operator_graph",
    "resolve_target",
]
__version__ = "0.1.0"
