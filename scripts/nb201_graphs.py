"""Convert NAS-Bench-201 cells (HELP's architectures) to operator graphs, resumably, joined with HELP latencies.

Prints a JSON summary: graphs converted now, s/graph (median, mean), graphs with HELP latencies on all five GPUs
("joined_with_help"), and networks TVM folds to a constant (no kernel; no graph).

    nice -n 15 python scripts/nb201_graphs.py --help-dir ../shared/data/help --batches 1,32,256 \
        --limit 2000 --out ../nb201_graphs

Cells are taken in a seeded random order (`cell_order`), so the first N done are a uniform sample of all 15,625;
each cell is converted at every batch size before the next one starts. A rerun skips what is stored.
`--shard I/N` splits the order between N processes (one per core) writing to the same folder.
"""

from __future__ import annotations

import argparse
import collections
import fcntl
import json
import logging
import sys
import time
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--help-dir", default="../shared/data/help", help="the HELP data folder")
    parser.add_argument("--out", required=True, help="output folder (outside the repository)")
    parser.add_argument("--batches", default="1,32,256", help="comma-separated batch sizes")
    parser.add_argument("--target", default="cuda-2080ti", help="target preset the graphs are built for")
    parser.add_argument("--limit", type=int, default=None, help="convert the first N cells of the seeded order")
    parser.add_argument("--seed", type=int, default=0, help="seed of the cell order")
    parser.add_argument("--shard", default="0/1",
                        help="I/N: convert every N-th cell of the order from the I-th, so N processes share one --out")
    parser.add_argument("--as-run", action="store_true",
                        help="every cell edge computed, none as x*0, as NAS-Bench-201 (and HELP) ran the networks")
    args = parser.parse_args()
    logging.getLogger("tvm.s_tir.meta_schedule").setLevel(logging.WARNING)

    import numpy as np
    import torch
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, \
        TimeRemainingColumn

    from tvm_cost.data.external.help import HELP_GPUS, load_help
    from tvm_cost.data.external.nasbench201_graphs import NB201GraphConverter, cell_order, graph_path
    from tvm_cost.errors import TvmCostError

    torch.set_num_threads(1)
    batches = [int(b) for b in args.batches.split(",")]
    try:
        records = load_help(args.help_dir, space="nasbench201", device=HELP_GPUS)
    except TvmCostError as err:
        sys.exit(f"error: {err}")
    archs = {r.arch_index: r.arch for r in records}
    gpus_measured = collections.Counter((r.arch_index, r.batch) for r in records)
    shard, shards = (int(v) for v in args.shard.split("/"))
    if not 0 <= shard < shards:
        sys.exit(f"error: --shard {args.shard}: want I/N with 0 <= I < N")
    order = [int(i) for i in cell_order(seed=args.seed, n=len(archs))][: args.limit][shard::shards]
    converter = NB201GraphConverter(args.out, target=args.target, as_run=args.as_run)
    converter.root.mkdir(parents=True, exist_ok=True)
    import tvm

    with open(converter.root / "MANIFEST.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # shards start together: each appends its run to what the others wrote
        _record_run(converter, args, batches, tvm.__version__)

    seconds: list[float] = []
    skipped = 0
    start = time.perf_counter()
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[rate]:.2f} s/graph"), TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True)) as bar:
        task = bar.add_task("nb201 graphs", total=len(order) * len(batches), rate=0.0)
        for arch_index in order:
            for batch in batches:
                took = converter.convert(arch_index, archs[arch_index], batch)
                if took is None:
                    skipped += 1
                else:
                    seconds.append(took)
                bar.update(task, advance=1, rate=float(np.mean(seconds[-200:])) if seconds else 0.0,
                           description=f"nb201 cell {arch_index:05d}")
    joined = sum(gpus_measured[(i, b)] == 5 and graph_path(args.out, b, i).exists() for i in order for b in batches)
    empty = sum(graph_path(args.out, b, i).with_suffix(".empty").exists() for i in order for b in batches)
    failed = sum(graph_path(args.out, b, i).with_suffix(".failed").exists() for i in order for b in batches)
    # skipped: stored before, or constant
    summary = {"cells": len(order), "batches": batches, "converted": len(seconds), "skipped": skipped,
               "constant_networks": empty, "tvm_failed": failed,
               "joined_with_help": joined, "wall_s": round(time.perf_counter() - start, 1),
               "s_per_graph_median": round(float(np.median(seconds)), 3) if seconds else None,
               "s_per_graph_mean": round(float(np.mean(seconds)), 3) if seconds else None,
               "kernel_cache": {"hits": converter.cache.hits, "misses": converter.cache.misses},
               "legalize_cache": {"hits": converter.legalize_cache.hits,
                                  "misses": converter.legalize_cache.misses}}
    print(json.dumps(summary, indent=1))


def _record_run(converter: Any, args: argparse.Namespace, batches: list[int], tvm_version: str) -> None:
    """Append this run to the folder's MANIFEST.json (written atomically); exit if the folder holds other graphs."""
    from tvm_cost.atomic import atomic_open
    from tvm_cost.features.schema import SCHEMA

    manifest_path = converter.root / "MANIFEST.json"
    previous = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    if (previous.get("target", args.target), previous.get("seed", args.seed),
            previous.get("as_run", args.as_run)) != (args.target, args.seed, args.as_run):
        sys.exit(f"error: {args.out} holds graphs for target {previous['target']!r}, seed {previous['seed']}, "
                 f"as_run {previous.get('as_run', False)}; use another --out")
    runs = previous.get("runs", [])
    runs.append({"command": " ".join(sys.argv), "batches": batches, "limit": args.limit,
                 "date": time.strftime("%Y-%m-%d %H:%M")})
    manifest = {"target": args.target, "target_json": converter.resolved.target_json, "seed": args.seed,
                "as_run": args.as_run,
                "order": "tvm_cost.data.external.nasbench201_graphs.cell_order", "feature_schema": SCHEMA.version,
                "feature_schema_hash": SCHEMA.hash, "tvm": tvm_version, "help_dir": args.help_dir, "runs": runs}
    with atomic_open(manifest_path) as f:
        f.write(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    main()
