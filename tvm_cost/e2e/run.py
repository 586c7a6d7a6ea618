"""`tvm-cost measure-e2e`: measure many model configurations end to end, resumably, with provenance."""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tvm_cost.collect.manifest import check_same_machine
from tvm_cost.e2e.store import E2EStore
from tvm_cost.errors import TvmCostError

log = logging.getLogger(__name__)


def versions() -> dict[str, str]:
    """TVM, tvm-ffi and feature-schema versions, the provenance every measured record carries."""
    import tvm
    import tvm_ffi

    from tvm_cost.features.schema import SCHEMA

    return {"tvm": tvm.__version__, "tvm_ffi": tvm_ffi.__version__, "feature_schema": SCHEMA.version,
            "feature_schema_hash": SCHEMA.hash}


def _database_id(path: str | None) -> str:
    if path is None:
        return "default"
    records = Path(path) / "database_tuning_record.json"
    digest = hashlib.sha256(records.read_bytes()).hexdigest()[:12] if records.exists() else "missing"
    return f"database:{digest}"


def run_e2e(
    specs: Sequence[str],
    *,
    target: Any = "llvm",
    out: str | Path,
    database: str | None = None,
    repeat: int = 5,
    min_repeat_ms: int = 100,
    kernel_runs: int = 0,
    on_progress: Callable[[int, int, dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Measure each zoo spec / ONNX path in `specs` and append one record per configuration to `out`.

    Configurations already in `out` (same spec and schedules) are skipped, so an interrupted run resumes.
    A configuration that fails to import, compile or run is recorded with ``status: "failed"`` and its error,
    never with a latency. With `kernel_runs` > 0 each record also holds `kernels_ms`, the per-kernel times
    (`measure.time_kernels`).

    Returns:
        A summary: measured, failed, skipped, seconds.
    """
    from tvm_cost.e2e.measure import measure_e2e
    from tvm_cost.graph_api import load_database
    from tvm_cost.importer import import_model
    from tvm_cost.targets import resolve_target

    resolved = resolve_target(target)
    tvm_target = resolved.tvm_target()
    db = load_database(database) if database else None
    schedules = _database_id(database)
    store = E2EStore(out)
    if resolved.hardware.kind == "cpu":  # timed on this CPU: never beside another CPU's latencies
        recorded = next((r.get("hardware") for r in store.records() if r.get("status") == "ok"), None)
        check_same_machine(out, recorded, current=resolved.hardware.name)
    done = store.done_keys()
    common = {"target": resolved.target_json, "target_name": resolved.name, "hardware": resolved.hardware.name,
              "hardware_spec": resolved.hardware.as_dict(),  # the descriptors the features of this record use
              "schedules": schedules, "command": " ".join(sys.argv), **versions()}
    summary: dict[str, float] = {"measured": 0, "failed": 0, "skipped": 0}
    t_start = time.perf_counter()
    for i, spec in enumerate(specs):
        key = f"{spec}|{resolved.name}|{schedules}"
        if key in done:
            summary["skipped"] += 1
            continue
        record: dict[str, Any] = {"key": key, "spec": spec, **common,
                                  "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                                  "load_avg_1m": round(os.getloadavg()[0], 2)}  # other work on the machine
        try:
            imported = import_model(spec)
            inputs = _example_inputs(imported)
            result = measure_e2e(imported.mod, tvm_target, inputs, database=db, repeat=repeat,
                                 min_repeat_ms=min_repeat_ms, kernel_runs=kernel_runs)
            record.update(status="ok", config=imported.config, batch_size=imported.batch_size,
                          repeat=repeat, min_repeat_ms=min_repeat_ms, **result.as_dict())
            summary["measured"] += 1
        except TvmCostError as err:
            record.update(status="failed", error=str(err))
            summary["failed"] += 1
            log.warning("%s: %s", spec, err)
        store.append(record)
        if on_progress is not None:
            on_progress(i + 1, len(specs), record)
    summary["seconds"] = round(time.perf_counter() - t_start, 1)
    summary["records_in_file"] = sum(1 for r in store.records() if r.get("status") == "ok")
    return summary


def torch_gflops(spec: str) -> float:
    """GFLOPs of one forward pass of a zoo model, counted by torch's FlopCounterMode (milliseconds, no TVM)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from tvm_cost import zoo

    model = zoo.parse_spec(spec)
    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        model.module(*model.example_inputs)
    return counter.get_total_flops() / 1e9


def sample_specs(n: int, *, seed: int, family: str | None = None, max_gflops: float | None = None) -> list[str]:
    """`n` zoo specs from `zoo.sample_configs`, skipping those above `max_gflops` (TVM's default CPU schedules
    are unscheduled loops: a 10-GFLOP model takes tens of seconds per inference here)."""
    from tvm_cost.zoo import sample_configs, to_spec

    specs: list[str] = []
    drawn = 0
    while len(specs) < n:
        batch = sample_configs(family, drawn + 4 * n, seed)[drawn:]
        drawn += len(batch)
        for cfg in batch:
            spec = to_spec(cfg.pop("name"), cfg)
            if max_gflops is None or torch_gflops(spec) <= max_gflops:
                specs.append(spec)
                if len(specs) == n:
                    break
        if drawn > 10 * n + 20:  # under a tenth of the space fits: the budget is too tight
            raise TvmCostError(f"only {len(specs)} of {n} sampled configurations are under {max_gflops} GFLOPs")
    return specs


def _example_inputs(imported: Any) -> tuple[Any, ...]:
    """Input shapes and dtypes of the model's `main`, as numpy zeros (measure_e2e fills random values)."""
    import numpy as np
    from tvm import relax

    arrays = []
    for param in imported.mod["main"].params:
        ty = param.ty
        if not isinstance(ty, relax.TensorType):
            raise TvmCostError(f"input {param.name!r} is not a tensor", path=imported.source)
        shape = [int(d.value) for d in ty.shape.values]
        dtype = str(ty.dtype)
        # token ids: keep them small so embedding lookups stay in range
        arrays.append(np.ones(shape, dtype) if dtype.startswith("int") else np.zeros(shape, dtype))
    return tuple(arrays)
