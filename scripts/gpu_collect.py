#!/usr/bin/env python
"""Collect measured CUDA records on a GPU machine in one command, inside a fixed time budget.

Builds on the machine's CPUs (one build process per core, nvcc through ``TVM_CUDA_COMPILE_MODE=nvcc`` where
cuda-bindings is missing), times on its GPU with the fast evaluator, and writes TVM JSON databases, tasks.json,
progress.json, MANIFEST.json, a re-measurement of a sample (noise.json) and summary.json under
``$OUT/tuning_logs/<target>/``. The collection stops cleanly before its budget (default 420 s, so that start-up,
task extraction and the noise check fit in 10 minutes); rerun the same command to continue where it stopped.

Usage:
    OUT=/path/to/out python scripts/gpu_collect.py [--budget-s 420] [--models zoo:resnet18,resolution=64 ...]
        [--sample 40 --seed 0]
    (scripts/gpu_collect.sh wraps it with an environment check and a hard timeout.)
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path

DEFAULT_MODELS = [
    "zoo:resnet18,width=0.5,resolution=64",
    "zoo:mobilenet_v2,width=0.5,resolution=64",
    "zoo:bert,width=128,depth=2,heads=2,seq_len=64",
    "zoo:mlp,width=256,depth=2",
]


def gpu_target() -> str | dict:
    """The target of GPU 0 from nvidia-smi (compute capability -> arch), or the H100 tag as a fallback."""
    from tvm_cost.collect.manifest import gpu_info

    gpu = gpu_info()
    if gpu is None:
        print("nvidia-smi missing or unusable; assuming an H100-class GPU", flush=True)
        return "nvidia/nvidia-h100"
    print(f"GPU: {gpu['name']}, compute capability {gpu['compute_cap']}", flush=True)
    return {"kind": "cuda", "arch": "sm_" + gpu["compute_cap"].replace(".", "")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.environ.get("OUT", "gpu_out"), help="output folder (default: $OUT)")
    parser.add_argument("--budget-s", type=float, default=420.0, help="seconds of collection")
    parser.add_argument("--models", nargs="+", default=None,
                        help="model specs (zoo:... or .onnx); default: a small set, or none with --sample")
    parser.add_argument("--sample", type=int, default=0, metavar="N",
                        help="also collect N sampled zoo configurations (every family, for held-out-family studies)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the configuration sampler")
    parser.add_argument("--max-flop", type=float, default=None, help="skip tasks above this many FLOPs a call")
    parser.add_argument("--target", default=None, help="target JSON or tag (default: from nvidia-smi)")
    parser.add_argument("--trials-per-task", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-tasks", type=int, default=None)
    parser.add_argument("--noise-k", type=int, default=16, help="records to re-measure afterwards (0: none)")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("tvm.s_tir.meta_schedule", "tvm"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    start = time.monotonic()

    from tvm_cost.collect import remeasure, run_collect
    from tvm_cost.zoo import sample_configs, to_spec

    models = list(args.models if args.models is not None else ([] if args.sample else DEFAULT_MODELS))
    models += [to_spec(cfg.pop("name"), cfg) for cfg in sample_configs(None, args.sample, args.seed)]

    target = json.loads(args.target) if args.target and args.target.startswith("{") else args.target
    target = target or gpu_target()
    out_root = Path(args.out) / "tuning_logs"
    summary = run_collect(
        models=models, target=target, out_root=out_root, trials_per_task=args.trials_per_task,
        batch_size=args.batch_size, builder_workers=os.cpu_count(), run_timeout_s=10.0, max_tasks=args.max_tasks,
        time_budget_s=args.budget_s, max_flop=args.max_flop, progress=not args.no_progress,
        command=" ".join(sys.argv))
    out_dir = Path(summary["out_dir"])
    print(json.dumps(summary, indent=1), flush=True)
    if args.noise_k > 0 and summary["measured"] > 0:
        noise = remeasure(out_dir, k=args.noise_k, seed=0, times=5)
        print("noise:", json.dumps(noise["summary"]), flush=True)
    summary["wall_s"] = round(time.monotonic() - start, 1)
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=1))
    print(f"done in {summary['wall_s']} s; databases in {out_dir}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
