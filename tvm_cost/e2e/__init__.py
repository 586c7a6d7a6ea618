"""End-to-end latency labels: compile whole models with TVM and time them."""

from tvm_cost.e2e.measure import E2EResult, compile_model, measure_e2e
from tvm_cost.e2e.store import E2EStore

__all__ = ["E2EResult", "E2EStore", "compile_model", "measure_e2e"]
