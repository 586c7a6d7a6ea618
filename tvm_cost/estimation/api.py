"""`estimate`: a model's end-to-end latency on a target, predicted at compile time from its operator graph.

import -> lower (TVM's passes) -> features -> the shipped estimator (`KernelBoost` for llvm; a `KernelSumNet`
ensemble where one is given): each member predicts every fused kernel's latency; the estimate is their sum, the
band is the members' spread, and the per-node predictions are the per-subgraph table.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tvm_cost.errors import TvmCostError

log = logging.getLogger(__name__)

ESTIMATOR_DIR = Path(__file__).resolve().parent.parent / "checkpoints" / "e2e"
"""Shipped end-to-end estimators: ``<target name>.kernel_boost.json`` + members (`KernelBoost`), or
``<target name>.safetensors`` + ``.json`` (`KernelSumNet`)."""


@dataclass
class SubgraphEstimate:
    """One fused kernel of the model: node name, MetaSchedule task name, op kinds inside, predicted ms, share."""

    name: str
    task_name: str
    op_kinds: list[str]
    predicted_ms: float
    share: float


@dataclass
class Estimate:
    """The end-to-end estimate.

    Attributes:
        end_to_end_ms: Mean over the ensemble members of their summed kernel predictions.
        low_ms, high_ms: The members' lowest and highest sums (the uncertainty band).
        subgraphs: Per fused kernel, largest first.
        target: The target's name and JSON.
        schedules: "default" (TVM's default schedules) or "database" (a tuning database's best records).
        checkpoint: The estimator used.
        measured_on: The CPU its training latencies were measured on (None if the checkpoint does not say): the
            machine whose latency this estimates.
        seconds: Time per step: lower, features, predict.
    """

    end_to_end_ms: float
    low_ms: float
    high_ms: float
    subgraphs: list[SubgraphEstimate]
    target: dict[str, Any]
    schedules: str
    checkpoint: str
    measured_on: str | None = None
    seconds: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict; top-level keys include `end_to_end_ms`, `subgraphs` and `target`."""
        return asdict(self)


def estimator_checkpoint(target_name: str, checkpoint: str | Path | None = None) -> Path:
    """The estimator for `target_name`: `checkpoint` if given, else the shipped one (nearest of the family), a
    `KernelBoost` (``.kernel_boost.json``) before a `KernelSumNet` (``.safetensors``)."""
    from tvm_cost.estimation.kernel_boost import SUFFIX
    from tvm_cost.tuning.checkpoints import shipped_checkpoint

    if checkpoint is not None:
        return Path(checkpoint)
    for suffix in (SUFFIX, ".safetensors"):
        found = shipped_checkpoint(target_name, directory=ESTIMATOR_DIR, suffix=suffix)
        if found is not None:
            return found
    shipped = sorted({p.name.split(".")[0] for p in ESTIMATOR_DIR.glob("*.json")})
    raise TvmCostError(f"no end-to-end estimator for target {target_name} (shipped: {', '.join(shipped)}); "
                       "train one with scripts/train_e2e_estimator.py and pass --checkpoint")


NodePredictor = Callable[[Any], np.ndarray]
"""PyG graph -> predicted ms of each node, one row per ensemble member ([members, N])."""


def load_estimator(path: str | Path) -> tuple[NodePredictor, dict[str, Any]]:
    """The node predictor of an estimator checkpoint and its metadata: a `KernelBoost` (``.kernel_boost.json``)
    or a `KernelSumNet` (``.safetensors``, an ensemble or one model)."""
    import torch

    from tvm_cost.estimation.kernel_boost import SUFFIX, KernelBoost
    from tvm_cost.features.schema import SCHEMA
    from tvm_cost.models import EnsembleModel, KernelSumNet
    from tvm_cost.train import load_checkpoint

    if str(path).endswith(SUFFIX):
        boost, meta = KernelBoost.load(path, schema=SCHEMA)
        return boost.node_ms, meta
    model, meta = load_checkpoint(path, schema=SCHEMA)
    members = list(model.members) if isinstance(model, EnsembleModel) else [model]
    nets = [m for m in members if isinstance(m, KernelSumNet)]
    if len(nets) < len(members):
        raise TvmCostError(f"not an end-to-end estimator ({meta.get('model_class')} of "
                           f"{type(members[0]).__name__}); expected KernelSumNet or KernelBoost", path=path)

    def node_ms(data: Any) -> np.ndarray:
        with torch.no_grad():
            return torch.stack([m.node_log_ms(data).exp() for m in nets]).double().numpy()

    return node_ms, meta


def estimate(
    model: Any,
    *,
    target: Any = "llvm",
    database: Any = None,
    checkpoint: str | Path | None = None,
    example_inputs: tuple | None = None,
    input_shapes: list[str] | dict[str, list[int]] | None = None,
) -> Estimate:
    """Predict `model`'s end-to-end latency on `target` without running it.

    Args:
        model: What `tvm_cost.import_model` takes (ONNX path, ``zoo:`` spec, torch module, ExportedProgram,
            Relax IRModule) or an `ImportedModel`.
        target: Preset name or TVM target JSON.
        database: MetaSchedule database (or its folder): estimate its tuned schedules instead of the defaults.
        checkpoint: An estimator checkpoint; default: the one shipped for the target.
        example_inputs, input_shapes: As for `tvm_cost.operator_graph`.

    Raises:
        TvmCostError: bad model, no estimator for the target, or a checkpoint of another feature schema.
    """
    from relay_passes.build import graph_from_lowered
    from relay_passes.lower import lower
    from tvm_cost.features.arrays import to_pyg
    from tvm_cost.graph_api import load_database
    from tvm_cost.importer import ImportedModel, import_model, parse_input_shapes
    from tvm_cost.targets import resolve_target

    resolved = resolve_target(target)
    path = estimator_checkpoint(resolved.name, checkpoint)
    node_predictor, meta = load_estimator(path)
    measured_on = meta.get("extra", {}).get("measured_on")
    _warn_other_machine(measured_on, resolved, path)
    if not isinstance(model, ImportedModel):
        shapes = parse_input_shapes(input_shapes) if isinstance(input_shapes, list) else input_shapes
        model = import_model(model, example_inputs=example_inputs, input_shapes=shapes)
    if isinstance(database, (str, Path)):
        database = load_database(database)
    t0 = time.perf_counter()
    lowered = lower(model.mod, resolved.tvm_target())
    t1 = time.perf_counter()
    graph = graph_from_lowered(lowered, resolved, database=database, source=model.source,
                               batch_size=model.batch_size)
    data = to_pyg(graph)
    t2 = time.perf_counter()
    node_ms = node_predictor(data)
    t3 = time.perf_counter()
    sums = node_ms.sum(1)
    per_node = node_ms.mean(0)
    total = float(sums.mean())
    subgraphs = sorted((SubgraphEstimate(n.name, n.task_name, list(n.op_kinds), float(ms), float(ms) / total)
                        for n, ms in zip(graph.nodes, per_node)), key=lambda s: -s.predicted_ms)
    return Estimate(total, float(sums.min()), float(sums.max()), subgraphs,
                    {"name": resolved.name, "json": resolved.target_json},
                    "database" if database is not None else "default", str(path), measured_on,
                    {"lower": t1 - t0, "features": t2 - t1, "predict": t3 - t2})


def _warn_other_machine(measured_on: str | None, resolved: Any, path: Path) -> None:
    """Warn when a CPU estimator's labels come from another CPU model than this one (its estimate is for that)."""
    if resolved.tvm_target().kind.name != "llvm":
        return
    from tvm_cost.collect.manifest import other_cpu_warning

    warning = other_cpu_warning(measured_on, path.name)
    if warning:
        log.warning("%s", warning)


def plot_estimate(result: Estimate, path: str | Path, *, top: int = 15) -> Path:
    """A PNG bar chart of the `top` largest subgraphs' predicted ms, titled with the end-to-end estimate."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = result.subgraphs[:top][::-1]
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(shown) + 1.5))
    ax.barh([s.name for s in shown], [s.predicted_ms for s in shown], color="tab:blue")
    for i, s in enumerate(shown):
        ax.text(s.predicted_ms, i, f" {100 * s.share:.1f}%", va="center", fontsize=8)
    ax.set_xlabel("predicted ms")
    ax.set_title(f"{result.target['name']}: {result.end_to_end_ms:.2f} ms end to end "
                 f"({result.low_ms:.2f}-{result.high_ms:.2f}), top {len(shown)} of {len(result.subgraphs)} kernels")
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
