"""The MetaSchedule adapter: GNN cost model, tree rankers, their ensembles and screens, and tuning entry points.

    from tvm_cost.tuning import GNNCostModel, tune_tir
    db = tune_tir(func, target="llvm", cost_model="gnn", max_trials=64, work_dir="work")  # default "auto"

Importing this package imports tvm and torch (the cost models are TVM objects).
"""

from tvm_cost.tuning.checkpoints import CHECKPOINT_DIR, shipped_checkpoint, target_name
from tvm_cost.tuning.config import GNNCostModelConfig
from tvm_cost.tuning.cost_model import GNNCostModel
from tvm_cost.tuning.ensemble import EnsembleCostModel, percentile_ranks
from tvm_cost.tuning.ranker_model import RankerCostModel
from tvm_cost.tuning.replay import measured_latency_ms
from tvm_cost.tuning.scoring import scores_from_log_latency
from tvm_cost.tuning.screen import ScreenedCostModel
from tvm_cost.tuning.tune import COST_MODEL_KINDS, CostModelKind, auto_kind, make_cost_model, tune_model, tune_tir
from tvm_cost.tuning.xgb import make_xgb

__all__ = [
    "CHECKPOINT_DIR",
    "COST_MODEL_KINDS",
    "CostModelKind",
    "EnsembleCostModel",
    "GNNCostModel",
    "GNNCostModelConfig",
    "RankerCostModel",
    "ScreenedCostModel",
    "auto_kind",
    "make_cost_model",
    "make_xgb",
    "measured_latency_ms",
    "percentile_ranks",
    "scores_from_log_latency",
    "shipped_checkpoint",
    "target_name",
    "tune_model",
    "tune_tir",
]
