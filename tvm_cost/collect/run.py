"""`run_collect`: the one call the CLI makes — models and a target in, records under ``tuning_logs/<target>/``."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tvm_cost.errors import Interrupt, TvmCostError

log = logging.getLogger(__name__)

ModelSpec = str | tuple[str, Any]


def resolve_target(target: Any) -> tuple[str, dict[str, Any], Any]:
    """(folder name, target JSON, `tvm.target.Target`) from a preset, a JSON dict/string, a tag or a Target.

    Raises:
        TvmCostError: the target cannot be resolved.
    """
    import tvm  # pylint: disable=import-outside-toplevel

    from tvm_cost import targets  # pylint: disable=import-outside-toplevel
    from tvm_cost.collect.records import to_py  # pylint: disable=import-outside-toplevel

    if isinstance(target, tvm.target.Target) or (isinstance(target, str) and "/" in target
                                                 and not target.lstrip().startswith("{")):
        try:
            exported = to_py(tvm.target.Target(target).export())
        except Exception as err:  # pylint: disable=broad-except
            raise TvmCostError(f"unknown target {target!r}: {str(err).splitlines()[-1]}") from None
        exported = {k: v for k, v in exported.items() if k not in ("tag", "keys") and v not in ("", None)}
        resolved = targets.resolve_target(exported)
        name = target.split("/")[-1] if isinstance(target, str) else resolved.name
    else:
        resolved = targets.resolve_target(target)
        name = resolved.name
    try:
        tvm_target = tvm.target.Target(resolved.target_json)
    except Exception as err:  # pylint: disable=broad-except
        raise TvmCostError(f"TVM refuses target {json.dumps(resolved.target_json)}: "
                           f"{str(err).strip().splitlines()[-1]}") from None
    return name, resolved.target_json, tvm_target


def import_models(models: Sequence[ModelSpec]) -> list[tuple[str, Any]]:
    """(name, Relax IRModule) pairs from model specs.

    A spec is a string (``zoo:NAME[,k=v...]`` or an ONNX path, named by itself) or a (name, model) pair where
    model is anything `tvm_cost.importer.import_model` takes (a Relax IRModule, a torch module with
    ``example_inputs`` as a (module, inputs) pair, an ExportedProgram ...).
    """
    from tvm_cost.importer import import_model  # pylint: disable=import-outside-toplevel

    out = []
    for spec in models:
        if isinstance(spec, str):
            out.append((spec, import_model(spec).mod))
            continue
        name, model = spec
        if isinstance(model, tuple) and len(model) == 2:
            out.append((name, import_model(model[0], example_inputs=tuple(model[1])).mod))
        else:
            out.append((name, import_model(model).mod))
    return out


def run_collect(
    *,
    models: Sequence[ModelSpec],
    target: Any = "llvm",
    out_root: str | Path = "tuning_logs",
    out_name: str | None = None,
    trials_per_task: int = 64,
    random_fraction: float = 0.5,
    batch_size: int = 32,
    seed: int = 0,
    measure: bool = True,
    builder: str = "fast",
    builder_workers: int | None = None,
    build_timeout_s: float = 120.0,
    run_timeout_s: float = 30.0,
    number: int = 1,
    repeat: int = 3,
    min_repeat_ms: int = 10,
    rpc_tracker: str | None = None,
    rpc_key: str | None = None,
    rpc_workers: int = 1,
    population_size: int = 128,
    time_budget_s: float | None = None,
    max_tasks: int | None = None,
    max_flop: float | None = None,
    progress: bool | Callable[[dict[str, Any]], None] = False,
    command: str | None = None,
    all_intrinsics: bool = False,
    interleave: bool = True,
) -> dict[str, Any]:
    """Collect measured records for `models` on `target`; resumable, append-only.

    Records go to ``out_root/<target name>/`` (``database_*.json`` measured, ``failures_*.json`` failed, plus
    ``tasks.json``, ``progress.json`` and ``MANIFEST.json``). Run it again with the same arguments to resume.

    Args:
        models: Model specs (see `import_models`).
        target: Preset ("llvm", "cuda-sm90" ...), TVM target JSON (dict or string), a tag such as
            "nvidia/nvidia-h100", or a `tvm.target.Target`.
        out_root: Parent folder of the target folders.
        out_name: Target folder name; defaults to the resolved target's (e.g. ``llvm-2core``).
        trials_per_task: Records per task (measured + failed).
        random_fraction: Share of random design-space samples; the rest is XGBoost-guided evolutionary search.
        batch_size: Candidates per batch and checkpoint.
        seed: Base seed.
        measure: False stops after building (no GPU needed for CUDA); nothing is written then.
        builder: "fast" (persistent pool, no tensor-intrinsics import) or "default" (MetaSchedule's LocalBuilder).
        builder_workers: Build processes; defaults to the CPU count.
        build_timeout_s: Per-build timeout.
        run_timeout_s: Per-candidate run timeout (local runner).
        number: Evaluator: runs averaged per repeat.
        repeat: Evaluator: repeats recorded per candidate.
        min_repeat_ms: Evaluator: minimum time of one repeat.
        rpc_tracker: "HOST:PORT" of an RPC tracker to measure through (with `rpc_key`).
        rpc_key: The device key registered at the tracker.
        rpc_workers: Candidates measured in parallel through RPC.
        population_size: Evolutionary-search population.
        time_budget_s: Stop cleanly before exceeding this many seconds of collection.
        max_tasks: Only the first this-many tasks (after deduplication).
        max_flop: Skip tasks above this many FLOPs a call: a large kernel's bad candidates run for seconds each,
            so skipping them multiplies records/s (``tasks.json`` still lists every extracted task).
        progress: True for a rich progress bar on stderr, or a callback receiving a dict per batch.
        command: Command line for the manifest; defaults to this process's.
        all_intrinsics: Import every tensor intrinsic (21-66 s) instead of the target's own
            (`fast.preload_tensor_intrinsics`, a process-wide change).
        interleave: Visit tasks round-robin over model families (`tasks.interleave_families`) rather than in
            order of first appearance, so a time-budgeted run covers every family.

    Returns:
        The summary (records, measured, failed, tasks, elapsed_s, records_per_s, stopped, out_dir ...).

    Raises:
        TvmCostError: unusable target, model or output folder.
    """
    from tvm.s_tir.meta_schedule.runner import EvaluatorConfig  # pylint: disable=import-outside-toplevel

    from tvm_cost.collect import fast, manifest  # pylint: disable=import-outside-toplevel
    from tvm_cost.collect.engine import CollectConfig, collect  # pylint: disable=import-outside-toplevel
    from tvm_cost.collect.progress import rich_progress  # pylint: disable=import-outside-toplevel
    from tvm_cost.collect.store import RecordStore  # pylint: disable=import-outside-toplevel
    from tvm_cost.collect.tasks import (  # pylint: disable=import-outside-toplevel
        extract_tasks, interleave_families, write_tasks_json)

    name, target_json, tvm_target = resolve_target(target)
    out_dir = Path(out_root) / (out_name or name)
    if measure and target_json.get("kind") in ("llvm", "c"):  # timed on this CPU
        manifest.check_same_machine(out_dir, manifest.manifest_cpu(out_dir))
    if not all_intrinsics:
        fast.preload_tensor_intrinsics(tvm_target)
    config = CollectConfig(trials_per_task=trials_per_task, random_fraction=random_fraction, batch_size=batch_size,
                           seed=seed, population_size=population_size, measure=measure,
                           time_budget_s=time_budget_s, search_threads=builder_workers)
    config.phase_targets()  # validates random_fraction
    evaluator = EvaluatorConfig(number=number, repeat=repeat, min_repeat_ms=min_repeat_ms)
    tasks = all_tasks = extract_tasks(import_models(models), tvm_target)
    if interleave:
        tasks = interleave_families(tasks)
    if max_flop is not None:
        tasks = [t for t in tasks if t.flop <= max_flop]
        if not tasks:
            raise TvmCostError(f"no task of the models has at most {max_flop:g} FLOPs (--max-flop)")
    if max_tasks is not None:
        tasks = tasks[:max_tasks]
    if not tasks:
        raise TvmCostError("the models have no tunable tasks")
    settings = {"collect": config.as_dict(), "evaluator": evaluator._asdict(), "builder": builder,
                "build_timeout_s": build_timeout_s, "run_timeout_s": run_timeout_s,
                "runner": f"rpc {rpc_tracker} key={rpc_key}" if rpc_tracker else "local"}
    bld = fast.make_builder(builder, max_workers=builder_workers, timeout_sec=build_timeout_s, target=tvm_target)
    runner = None
    if measure:
        runner = fast.make_runner(evaluator=evaluator, timeout_sec=run_timeout_s, rpc_tracker=rpc_tracker,
                                  rpc_key=rpc_key, rpc_workers=rpc_workers)
    store = RecordStore(out_dir).open() if measure else None
    run_entry: dict[str, Any] = {"start": manifest.now_iso(), "command": command or manifest.command_line(),
                                 "cpu_model": manifest.cpu_model(),
                                 "models": sorted({m for t in tasks for m in t.weights})}
    summary: dict[str, Any] = {}
    try:
        if store is not None:
            write_tasks_json(out_dir, all_tasks)
        with rich_progress(progress) as callback:
            summary = collect(tasks, target=tvm_target, store=store, builder=bld, runner=runner, config=config,
                              progress=callback)
    except (KeyboardInterrupt, RuntimeError) as err:
        if isinstance(err, KeyboardInterrupt) or Interrupt.seen:  # every finished batch is in the databases
            summary = {"stopped": "interrupted"}
        raise
    finally:
        if store is not None:  # provenance first: tearing down TVM's worker pools can crash the process
            run_entry.update(end=manifest.now_iso(), summary=summary or {"stopped": "error"})
            manifest.write_manifest(out_dir, target=target_json, settings=settings, run=run_entry)
            store.close()
        if hasattr(bld, "close"):
            bld.close()
        if (pool := getattr(runner, "pool", None)) is not None:  # LocalRunner / RPCRunner worker processes
            pool.shutdown()
    summary.update(out_dir=str(out_dir) if measure else None, target=name)
    return summary


def run_remeasure(
    *,
    target: Any = "llvm",
    out_root: str | Path = "tuning_logs",
    out_name: str | None = None,
    k: int = 24,
    seed: int = 0,
    times: int = 5,
    command: str | None = None,
) -> dict[str, Any]:
    """Re-time `k` random records of a target folder `times` times each: ``noise.json`` and a MANIFEST run entry.

    The noise study behind ``tvm-cost collect --remeasure K`` (`tvm_cost.collect.noise.remeasure`, collection's
    evaluator). Timings made on another CPU say nothing about the stored ones, so such a folder is refused, and so
    is one a collection is writing to.

    Returns:
        The study's summary (median spreads, Spearman between stored and re-timed latencies).

    Raises:
        TvmCostError: no such folder, measured on another CPU, or locked by a running collection.
    """
    import fcntl  # pylint: disable=import-outside-toplevel

    from tvm_cost.collect import fast, manifest, noise  # pylint: disable=import-outside-toplevel

    name, target_json, tvm_target = resolve_target(target)
    out_dir = Path(out_root) / (out_name or name)
    if not (out_dir / manifest.MANIFEST_FILE).is_file():
        raise TvmCostError("no MANIFEST.json: not a collected tuning-log folder", path=out_dir)
    manifest.check_same_machine(out_dir, manifest.manifest_cpu(out_dir))
    old = json.loads((out_dir / manifest.MANIFEST_FILE).read_text(encoding="utf-8"))
    with open(out_dir / ".lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise TvmCostError("a collection is writing to this folder; re-measure when it is done",
                               path=out_dir) from None
        fast.preload_tensor_intrinsics(tvm_target)
        start = manifest.now_iso()
        result = noise.remeasure(out_dir, k=k, seed=seed, times=times)
        summary = {key: value for key, value in result["summary"].items() if key != "spearman_within_workload"}
        manifest.write_manifest(out_dir, target=old.get("target", target_json), run={
            "start": start, "end": manifest.now_iso(), "command": command or manifest.command_line(),
            "cpu_model": manifest.cpu_model(), "remeasure": {"k": k, "seed": seed, "times": times},
            "summary": summary})
    return summary
