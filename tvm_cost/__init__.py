"""tvm-cost: a learned cost model for Apache TVM."""

from tvm_cost.errors import TvmCostError

__all__ = ["TvmCostError"]
__version__ = "0.1.0"
