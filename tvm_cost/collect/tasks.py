"""Models -> deduplicated tuning tasks, each remembering its weight (call count) in every model.

A task is one fused kernel (`ms.relax_integration.extract_tasks` on the module `relay_passes.lower` gives); the
same kernel in several models is one task, keyed by its structural hash as MetaSchedule's JSON database writes it,
so that `tasks.json` lines up with the workload file.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tvm
from tvm.s_tir import meta_schedule as ms

from relay_passes.lower import lower
from tvm_cost.atomic import atomic_write_json

log = logging.getLogger(__name__)

TASKS_FILE = "tasks.json"


@dataclass
class CollectTask:
    """One kernel to collect records for.

    Attributes:
        shash: Structural hash (decimal string), the key in `tasks.json` and `progress.json`.
        name: MetaSchedule's task name (e.g. ``fused_conv2d_add_relu``), from the first model it appeared in.
        mod: The TIR IRModule to schedule.
        workload: Its JSON in TVM's workload-file form ``[shash, base64]``.
        weights: Model name -> number of calls of this kernel in that model.
        flop: FLOPs of one call, as MetaSchedule estimates them.
    """

    shash: str
    name: str
    mod: tvm.IRModule
    workload: list[str]
    weights: dict[str, int] = field(default_factory=dict)
    flop: float = 0.0

    def describe(self) -> dict[str, Any]:
        """The `tasks.json` entry."""
        return {"task_name": self.name, "models": dict(self.weights), "flop": self.flop}


def _flop(mod: tvm.IRModule) -> float:
    from tvm.s_tir.analysis import estimate_tir_flops  # pylint: disable=import-outside-toplevel

    try:
        return float(estimate_tir_flops(mod))
    except Exception:  # pylint: disable=broad-except  # an estimate; some kernels have none
        return 0.0


def extract_tasks(
    models: Sequence[tuple[str, tvm.IRModule]],
    target: tvm.target.Target,
) -> list[CollectTask]:
    """Lower each model, extract its tasks and merge equal kernels across models.

    Args:
        models: (model name, Relax IRModule) pairs; the modules need not be lowered yet.
        target: The target to lower and extract for.

    Returns:
        Tasks in order of first appearance.
    """
    tasks: dict[str, CollectTask] = {}
    for model_name, mod in models:
        lowered = lower(mod, target)
        fused = getattr(lowered, "mod", lowered)  # LoweredModule or a bare IRModule
        extracted = ms.relax_integration.extract_tasks(fused, target)
        log.info("%s: %d tasks", model_name, len(extracted))
        for ext in extracted:
            task_mod = ext.dispatched[0]
            workload = ms.database.Workload(task_mod).as_json()
            shash = str(workload[0])
            task = tasks.get(shash)
            if task is None:
                task = CollectTask(shash, ext.task_name, task_mod, [shash, str(workload[1])], flop=_flop(task_mod))
                tasks[shash] = task
            task.weights[model_name] = task.weights.get(model_name, 0) + int(ext.weight)
    return list(tasks.values())


def _family(model_name: str) -> str:
    """``zoo:resnet18,batch=2`` -> ``resnet18``; other names are their own family."""
    head = model_name.split(",", 1)[0]
    return head[4:] if head.startswith("zoo:") else head


def interleave_families(tasks: Sequence[CollectTask]) -> list[CollectTask]:
    """Round-robin over model families (each task's first model), keeping first-appearance order within a family.

    Collection is usually stopped by a time budget; this order spreads whatever gets measured over every family
    instead of exhausting the first models' tasks.
    """
    queues: dict[str, list[CollectTask]] = {}
    for task in tasks:
        queues.setdefault(_family(next(iter(task.weights), task.name)), []).append(task)
    out: list[CollectTask] = []
    for rank in range(max((len(q) for q in queues.values()), default=0)):
        out.extend(q[rank] for q in queues.values() if rank < len(q))
    return out


def write_tasks_json(root: str | Path, tasks: Sequence[CollectTask]) -> Path:
    """Merge `tasks` into ``root/tasks.json`` (shash -> task_name, models: {model: weight}, flop).

    Model weights from earlier collections into the folder are kept; a model seen again gets its new weight.
    """
    path = Path(root) / TASKS_FILE
    merged: dict[str, dict[str, Any]] = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    for task in tasks:
        entry = merged.setdefault(task.shash, {})
        models = {**entry.get("models", {}), **task.weights}
        entry.update(task.describe())
        entry["models"] = models
    atomic_write_json(path, merged)
    return path
