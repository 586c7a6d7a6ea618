#!/usr/bin/env python
"""Records/s of data collection: TVM's default LocalBuilder/LocalRunner vs. the fast path, and ranking fidelity.

One small conv2d and one dense task, the same collection loop (`tvm_cost.collect.collect`, half random samples,
half XGBoost-guided evolutionary search) in each mode; only the builder and the runner differ:

- default: ``ms.builder.LocalBuilder()`` (fresh pool per batch, 30 s timeout, tensor-intrinsics import per worker)
  and ``ms.runner.LocalRunner()`` (EvaluatorConfig number=3, repeat=1, min_repeat_ms=100);
- default-t120: the same with a 120 s build timeout (is the timeout alone the problem?);
- fast: `FastBuilder` (persistent pool, no tensor-intrinsics import, 120 s timeout) and a `LocalRunner` with
  number=1, repeat=3, min_repeat_ms=10.

Then a random sample of each mode's measured records is re-timed with a long evaluator (number=5, repeat=10,
min_repeat_ms=50) and the Spearman correlation between stored and re-timed latencies is reported per task.

Usage: python scripts/bench_collect_throughput.py [--trials 64] [--modes default,fast] [--out /tmp/bench_collect]
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import shutil
import time
from pathlib import Path

import tvm
from tvm.script import ir as I
from tvm.script import relax as R


def conv2d_model() -> tvm.IRModule:
    @I.ir_module
    class Conv:
        @R.function
        def main(x: R.Tensor((1, 32, 28, 28), "float32"),  # type: ignore[valid-type]  # TVMScript types
                 w: R.Tensor((32, 32, 3, 3), "float32")):  # type: ignore[valid-type]
            with R.dataflow():
                y = R.nn.conv2d(x, w, padding=1)
                z = R.nn.relu(y)
                R.output(z)
            return z

    return Conv


def dense_model() -> tvm.IRModule:
    @I.ir_module
    class Dense:
        @R.function
        def main(x: R.Tensor((16, 512), "float32"),  # type: ignore[valid-type]  # TVMScript types
                 w: R.Tensor((512, 512), "float32")):  # type: ignore[valid-type]
            with R.dataflow():
                y = R.matmul(x, w)
                z = R.nn.relu(y)
                R.output(z)
            return z

    return Dense


def run_mode(mode: str, tasks: list, target: tvm.target.Target, out: Path, trials: int, batch: int) -> dict:
    from tvm.s_tir import meta_schedule as ms

    from tvm_cost.collect import fast
    from tvm_cost.collect.engine import CollectConfig, collect
    from tvm_cost.collect.store import RecordStore

    if mode == "default":
        builder, runner = ms.builder.LocalBuilder(), ms.runner.LocalRunner()
    elif mode == "default-t120":  # the default builder and runner, only with a build timeout as long as ours
        builder, runner = ms.builder.LocalBuilder(timeout_sec=120.0), ms.runner.LocalRunner()
    elif mode == "fast":
        builder = fast.make_builder("fast", timeout_sec=120.0)
        runner = fast.make_runner(evaluator=fast.FAST_EVALUATOR)
    else:
        raise ValueError(f"unknown mode {mode!r}; choose default, default-t120 or fast")
    shutil.rmtree(out, ignore_errors=True)
    config = CollectConfig(trials_per_task=trials, batch_size=batch, random_fraction=0.5, seed=1)
    load = os.getloadavg()[0]
    with RecordStore(out) as store:
        summary = collect(tasks, target=target, store=store, builder=builder, runner=runner, config=config)
    if hasattr(builder, "close"):
        builder.close()
    runner.pool.shutdown()
    summary["measured_per_s"] = round(summary["measured"] / summary["elapsed_s"], 3)
    summary["load_avg_1m_at_start"] = round(load, 2)
    return summary


def ranking_fidelity(rows: list[dict], names: dict[str, str]) -> dict[str, dict]:
    """Per task: n, Spearman(stored, long median) and Spearman(long #1, long #2)."""
    from tvm_cost.collect.noise import spearman

    by_task: dict[str, list[dict]] = {}
    for row in rows:
        if row.get("samples_secs") and len(row["samples_secs"]) == 2:
            by_task.setdefault(names.get(row["workload"], row["workload"]), []).append(row)
    out = {}
    for name, group in sorted(by_task.items()):
        stored = spearman([r["stored_secs"] for r in group], [r["median"] for r in group])
        retest = spearman([r["samples_secs"][0] for r in group], [r["samples_secs"][1] for r in group])
        out[name] = {"n": len(group), "stored_vs_long": None if stored is None else round(stored, 3),
                     "long_vs_long": None if retest is None else round(retest, 3)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=64, help="records per task")
    parser.add_argument("--batch", type=int, default=32, help="candidates per batch")
    parser.add_argument("--modes", default="default,fast", help="comma-separated: default, default-t120, fast")
    parser.add_argument("--k", type=int, default=32, help="records re-timed with the long evaluator per mode")
    parser.add_argument("--out", default="/tmp/bench_collect", help="scratch folder")
    parser.add_argument("--json", default=None, help="also write the results here")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    from tvm_cost.collect import fast
    from tvm_cost.collect.noise import remeasure
    from tvm_cost.collect.tasks import extract_tasks

    target = tvm.target.Target({"kind": "llvm", "num-cores": 2})
    tasks = extract_tasks([("conv2d", conv2d_model()), ("dense", dense_model())], target)
    tasks = [t for t in tasks if t.flop > 0]
    t0 = time.monotonic()
    importlib.import_module("tvm.s_tir.tensor_intrin")  # paid once by every TuneContext; kept out of timings

    import_s = time.monotonic() - t0
    print(f"tasks: {[t.name for t in tasks]}; one-time tensor_intrin import in the collector: {import_s:.1f} s")
    results: dict = {"trials_per_task": args.trials, "batch": args.batch, "tensor_intrin_import_s": round(import_s, 1),
                     "cpus": os.cpu_count(), "modes": {}}
    for i, mode in enumerate(args.modes.split(",")):
        out = Path(args.out) / f"{i}-{mode}"
        summary = run_mode(mode, tasks, target, out, args.trials, args.batch)
        print(f"{mode:8s} records={summary['records']} measured={summary['measured']} failed={summary['failed']} "
              f"elapsed={summary['elapsed_s']:.1f}s records/s={summary['records_per_s']:.3f} "
              f"measured/s={summary['measured_per_s']:.3f} (load avg {summary['load_avg_1m_at_start']})", flush=True)
        t1 = time.monotonic()
        noise = remeasure(out, k=args.k, seed=0, times=2, evaluator=fast.LONG_EVALUATOR,
                          out_path=out / "long_remeasure.json")
        fidelity = ranking_fidelity(noise["records"], {t.shash: t.name for t in tasks})
        print(f"{'':8s} Spearman per task, stored vs long re-timing (median of 2), and long vs long (noise "
              f"ceiling): {fidelity} ({time.monotonic() - t1:.0f} s)", flush=True)
        summary["ranking"] = fidelity
        results["modes"][f"{i}-{mode}"] = summary
    print(json.dumps(results, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
