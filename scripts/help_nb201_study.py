"""HELP NAS-Bench-201 study: GNNs and baselines on five GPUs at batch 1/32/256, and cross-GPU, in one run.

    nice -n 10 python scripts/help_nb201_study.py --graphs ../nb201_graphs --help-dir ../shared/data/help \
        --batches 32,256,1 --n-train 1000 --epochs 40 --out docs/help_nb201_results.json

Graphs come from scripts/nb201_graphs.py. Latencies are HELP's PyTorch/cuDNN measurements, not TVM kernels.
Prints one markdown table per part and writes all numbers to --out.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time


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
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--models", default="seernet,gcn,linear_flops_bytes,gbt_aggregates")
    parser.add_argument("--cross-gpu-models", default="seernet,gcn,linear_flops_bytes,gbt_aggregates",
                        help="models for the cross-GPU part ('' skips it)")
    parser.add_argument("--out", help="JSON results file")
    args = parser.parse_args()
    logging.getLogger("tvm.s_tir.meta_schedule").setLevel(logging.WARNING)
    import torch

    from tvm_cost.errors import TvmCostError
    from tvm_cost.estimate.help_study import cross_gpu, in_distribution, load_cells, split_cells

    torch.set_num_threads(1)
    models = [m for m in args.models.split(",") if m]
    cross_models = [m for m in args.cross_gpu_models.split(",") if m]
    report: dict = {"command": " ".join(sys.argv), "graphs": args.graphs, "seed": args.seed,
                    "n_train": args.n_train, "epochs": args.epochs, "batches": {}}
    for batch in (int(b) for b in args.batches.split(",")):
        start = time.perf_counter()
        try:
            cells = load_cells(args.graphs, args.help_dir, batch)
        except TvmCostError as err:
            sys.exit(f"error: {err}")
        split = split_cells(len(cells.arch_index), n_train=args.n_train, n_test=args.n_test, seed=args.seed)
        part = {"cells_with_graphs": len(cells.arch_index), "train_cells": len(split.train),
                "val_cells": len(split.val), "test_cells": len(split.test),
                "in_distribution": in_distribution(cells, split, models=models, seed=args.seed, epochs=args.epochs)}
        print(f"\n## batch {batch}: {part['train_cells']} + {part['val_cells']} training cells per GPU, "
              f"{part['test_cells']} test cells per GPU (MAPE % / within 10% / Spearman)\n")
        print(_table(part["in_distribution"], [*cells.gpus, "all"]), flush=True)
        if cross_models:
            part["cross_gpu"] = {g: cross_gpu(cells, split, g, models=cross_models, seed=args.seed,
                                              epochs=args.epochs) for g in cells.gpus}
            by_model = {m: {g: part["cross_gpu"][g][m] for g in cells.gpus} for m in cross_models}
            print(f"\n### batch {batch}, cross-GPU: trained on the four other GPUs, tested on the column's\n")
            print(_table(by_model, list(cells.gpus)), flush=True)
        part["seconds"] = round(time.perf_counter() - start, 1)
        report["batches"][str(batch)] = part
        if args.out:  # after each batch size, so a long run keeps what it finished
            with open(args.out, "w", encoding="utf-8") as f:
                f.write(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
