"""Training of graph cost models: losses, PCGrad, metrics, checkpoints and the training loop."""

from tvm_cost.train.calibration import Calibration, fit_calibration, item_log_work
from tvm_cost.train.checkpoint import checkpoint_paths, load_checkpoint, read_metadata, save_checkpoint
from tvm_cost.train.config import TrainConfig
from tvm_cost.train.losses import centered_log_mse_loss, listmle_loss, listnet_loss, log_mse_loss, \
    pairwise_ranking_loss
from tvm_cost.train.loop import History, evaluate, train
from tvm_cost.train.metrics import kendall_tau, mape, pairwise_accuracy, peak_at_k, share_within, share_within_factor, \
    spearman
from tvm_cost.train.objective import TaskLoss
from tvm_cost.train.pcgrad import PCGrad, project_conflicting
from tvm_cost.train.sampling import GroupBatchSampler, make_loader

__all__ = [
    "Calibration",
    "GroupBatchSampler",
    "History",
    "PCGrad",
    "TaskLoss",
    "TrainConfig",
    "centered_log_mse_loss",
    "checkpoint_paths",
    "evaluate",
    "fit_calibration",
    "item_log_work",
    "kendall_tau",
    "listmle_loss",
    "listnet_loss",
    "load_checkpoint",
    "log_mse_loss",
    "make_loader",
    "mape",
    "pairwise_accuracy",
    "pairwise_ranking_loss",
    "peak_at_k",
    "project_conflicting",
    "read_metadata",
    "save_checkpoint",
    "share_within",
    "share_within_factor",
    "spearman",
    "train",
]
