"""HELP NAS-Bench-201 study: GNNs and baselines on five GPUs at batch 1/32/256, and cross-GPU, in one run.

    nice -n 10 python scripts/help_nb201_study.py --graphs ../nb201_graphs --help-dir ../shared/data/help \
        --batches 32,256 --n-train 1000 --out docs/help_nb201_results.json

Graphs come from scripts/nb201_graphs.py. Latencies are HELP's PyTorch/cuDNN measurements, not TVM kernels.
Prints one markdown table per part and writes all numbers to --out.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path


def _table(rows: dict[str, dict[str, dict[str, float]]], columns: list[str]) -> str:
    """Markdown: one row per model, MAPE % / within-10% share % / Spearman per column."""
    lines = ["| model | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for model, cells in rows.items():
        lines.append(f"| {model} | " + " | ".join(
            f"{cells[c]['mape'] * 100:.1f} / {cells[c]['within_10pct'] * 100:.0f} / {cells[c]['spearman']:.3f}"
            if c in cells else "-" for c in columns) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", required=True, help="folder written by scripts/nb201_graphs.py")
    parser.add_argument("--help-dir", default="../shared/data/help")
    parser.add_argument("--batches", default="32,256,1")
    parser.add_argument("--n-train", type=int, default=1000, help="training cells per GPU (10%% of them validate)")
    parser.add_argument("--n-test", type=int, default=None, help="cap on test cells (a seeded sample)")
    parser.add_argument("--epochs-seernet", type=int, default=8)
    parser.add_argument("--epochs-gcn", type=int, default=30)
    parser.add_argument("--cross-gpu-train", type=int, default=300,
                        help="training cells for the cross-GPU part (a seeded subset of the in-distribution ones)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--models", default="seernet,gcn,linear_flops_bytes,gbt_aggregates")
    parser.add_argument("--cross-gpu-models", default="seernet,gcn,linear_flops_bytes,gbt_aggregates",
                        help="models for the cross-GPU part ('' skips it)")
    parser.add_argument("--reference", action="store_true",
                        help="also fit the op-count reference (log latency linear in the cell string's op counts)")
    parser.add_argument("--out", help="JSON results file; a rerun updates the parts it computes")
    args = parser.parse_args()
    logging.getLogger("tvm.s_tir.meta_schedule").setLevel(logging.WARNING)
    import numpy as np
    import torch

    from tvm_cost.data.splits import Split
    from tvm_cost.errors import TvmCostError
    from tvm_cost.data.external.help import load_help_archs
    from tvm_cost.estimation.help_study import cross_gpu, in_distribution, load_cells, op_count_reference, split_cells

    torch.set_num_threads(1)
    models = [m for m in args.models.split(",") if m]
    cross_models = [m for m in args.cross_gpu_models.split(",") if m]
    epochs = {"seernet": args.epochs_seernet, "gcn": args.epochs_gcn}
    report: dict = {"batches": {}}
    if args.out and Path(args.out).exists():  # one file across runs: each run adds or replaces what it computes
        report = json.loads(Path(args.out).read_text())
    for batch in (int(b) for b in args.batches.split(",")):
        start = time.perf_counter()
        try:
            cells = load_cells(args.graphs, args.help_dir, batch)
        except TvmCostError as err:
            sys.exit(f"error: {err}")
        split = split_cells(len(cells.arch_index), n_train=args.n_train, n_test=args.n_test, seed=args.seed)
        part: dict = report["batches"].get(str(batch), {})  # a run with fewer parts keeps the others
        part.update({"cells_with_graphs": len(cells.arch_index), "train_cells": len(split.train),
                     "val_cells": len(split.val), "test_cells": len(split.test),
                     "help_latency_ms_median": {g: float(np.median(cells.latency_ms[:, i]))
                                                for i, g in enumerate(cells.gpus)}})
        part.setdefault("runs", []).append({"command": " ".join(sys.argv), "date": time.strftime("%Y-%m-%d %H:%M"),
                                            "seed": args.seed, "epochs": epochs})
        print(f"\n## batch {batch}: {part['train_cells']} + {part['val_cells']} training cells per GPU, "
              f"{part['test_cells']} test cells per GPU (MAPE % / within 10% / Spearman)\n")
        if models:
            part["in_distribution"] = in_distribution(cells, split, models=models, seed=args.seed, epochs=epochs)
            print(_table(part["in_distribution"], [*cells.gpus, "all"]), flush=True)
        if args.reference:
            archs = {i: a for (_, i), a in load_help_archs(args.help_dir, space="nasbench201").items()}
            part["op_count_reference"] = op_count_reference(cells, split, archs)
            print("\nreference, not a graph model: log latency linear in the cell's op counts\n")
            print(_table(part["op_count_reference"], [*cells.gpus, "all"]), flush=True)
        if cross_models:
            n_val = int(round(args.cross_gpu_train * 0.1))
            rng = np.random.default_rng(args.seed)  # a random subset: rows are sorted by arch index
            cross_split = Split(np.sort(rng.permutation(split.train)[: args.cross_gpu_train - n_val]),
                                np.sort(rng.permutation(split.val)[:n_val]), split.test)
            part["cross_gpu_train_cells"] = len(cross_split.train) + len(cross_split.val)
            part["cross_gpu"] = {g: cross_gpu(cells, cross_split, g, models=cross_models, seed=args.seed,
                                              epochs=epochs) for g in cells.gpus}
            by_model = {m: {g: part["cross_gpu"][g][m] for g in cells.gpus} for m in cross_models}
            print(f"\n### batch {batch}, cross-GPU: {part['cross_gpu_train_cells']} cells on the four other GPUs, "
                  "tested on the column's GPU\n")
            print(_table(by_model, list(cells.gpus)), flush=True)
        part["runs"][-1]["seconds"] = round(time.perf_counter() - start, 1)
        report["batches"][str(batch)] = part
        if args.out:  # after each batch size, so a long run keeps what it finished
            with open(args.out, "w", encoding="utf-8") as f:
                f.write(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
