"""Measured-data collection: models -> tasks -> candidates -> build and time -> TVM JSON databases.

The stages, one module each: `tasks` (lower, extract, deduplicate across models), `engine` (random and
XGBoost-guided evolutionary candidates per task), `measure` with `fast` (persistent build pool, cheap evaluator,
local or RPC runner), `store` (append-only, resumable databases), `records` (readers for ``.json``/``.json.gz``),
`manifest` (provenance), `noise` (re-measurement spread). `run_collect` ties them together for the CLI.

Importing this package is cheap; TVM loads on first use of a stage.
"""

from __future__ import annotations

import importlib
from typing import Any

from tvm_cost.collect.run import import_models, resolve_target, run_collect, run_remeasure

_LAZY = {
    "CollectConfig": "engine",
    "collect": "engine",
    "CollectTask": "tasks",
    "extract_tasks": "tasks",
    "FastBuilder": "fast",
    "FAST_EVALUATOR": "fast",
    "LONG_EVALUATOR": "fast",
    "make_builder": "fast",
    "make_runner": "fast",
    "RecordStore": "store",
    "Record": "records",
    "load_records": "records",
    "write_manifest": "manifest",
    "compress_databases": "manifest",
    "remeasure": "noise",
}

__all__ = ["import_models", "resolve_target", "run_collect", "run_remeasure", *sorted(_LAZY)]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"tvm_cost.collect.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'tvm_cost.collect' has no attribute {name!r}")
