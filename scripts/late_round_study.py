"""Do the cost models tell apart the candidates a tune measures late? Each model is fitted on a bench run's first
measurements and ranks that run's later ones, which a converging search draws near its best.

Needs a `tvm-cost bench kernel --keep-records` folder. For every run (task, kind, seed) there: its measured
schedules in tune order (failed ones dropped); the first ``seen`` count as measured (fed in rounds of `--round`,
as the tune fed them), the rest up to the run's budget are ranked. Scored on the rest, pooled per kind whose
search picked the candidates:

- ``gnn``: the checkpoint alone; ``gnn-online``: fine-tuned on the seen ones as `GNNCostModel.update` does;
  ``gnn-adapt`` and ``gnn-top``: the bench's stronger fine-tunings (`tvm_cost.tuning.bench.ADAPT`, `TOP`);
  ``gnn-top<p>`` for each `--top-weight` p: the same with the ranking loss weighted toward the fastest
  (`GNNCostModelConfig.rank_top_weight`);
- ``xgb``: TVM's `XGBModel` fitted on the seen ones (as xgb-warm16 is at that point of its tune);
- ``ensemble``: `EnsembleCostModel`'s rank mean of ``gnn-online`` and ``xgb``; ``random``.

Also the spread of the ranked candidates' latencies (median over runs of max / min): how close they are.

    python scripts/late_round_study.py --bench docs/bench_kernel_epyc8 \\
        --checkpoint docs/bench_kernel_xeon/xeon-no-mbv2-r50 --seen 32,64,96 --json docs/late_round_study.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", required=True, help="a `bench kernel --keep-records` output folder")
    parser.add_argument("--checkpoint", required=True, help="the GNN checkpoint the bench ran with")
    parser.add_argument("--seen", default="64", help="comma-separated: candidates counted as measured")
    parser.add_argument("--round", type=int, default=16, help="candidates measured per tune round")
    parser.add_argument("--top-weight", default="", help="comma-separated rank_top_weight values to also try")
    parser.add_argument("--json", help="write the report here")
    args = parser.parse_args()
    import torch
    from rich.progress import track

    from tvm_cost.data.kernel_dataset import KernelDataset
    from tvm_cost.features.program_schema import CANDIDATE_SCHEMA
    from tvm_cost.train import load_checkpoint
    from tvm_cost.tuning.bench import ADAPT, TOP, RunStore, record_folder
    from tvm_cost.tuning.config import GNNCostModelConfig
    from tvm_cost.tuning.offline import online_comparison_scores, ranking_metrics

    torch.set_num_threads(1)
    pretrained, _ = load_checkpoint(args.checkpoint, schema=CANDIDATE_SCHEMA)
    bench = Path(args.bench)
    runs = RunStore(bench / "runs.jsonl").runs
    if not runs:
        parser.error(f"{bench}: no runs.jsonl")
    sequences = []
    for run in track(runs, description="featurizing the runs' records"):
        items = list(KernelDataset(bench / "records" / record_folder(run.task, run.kind, run.seed)))
        sequences.append((run, items[:run.max_trials]))
    config = GNNCostModelConfig()
    variants = {"gnn-adapt": config.replace(**ADAPT), "gnn-top": config.replace(**TOP)}
    variants.update({f"gnn-top{p}": config.replace(rank_top_weight=float(p)) for p in args.top_weight.split(",") if p})
    report: dict[str, Any] = {"bench": str(bench), "checkpoint": args.checkpoint, "round": args.round, "results": {}}
    for k in [int(v) for v in args.seen.split(",")]:
        scores: dict[str, dict[str, list[np.ndarray]]] = {}
        latency: dict[str, list[np.ndarray]] = {}
        group: dict[str, list[np.ndarray]] = {}
        spread: dict[str, list[float]] = {}
        for gid, (run, items) in enumerate(track(sequences, description=f"seen={k}")):
            seen, rest = items[:k], items[k:]
            if len(seen) < k or len(rest) < 2:
                continue
            grp = np.full(len(rest), gid)
            rng = np.random.default_rng(gid)
            for name, s in online_comparison_scores(pretrained, seen, rest, config, variants, seed=run.seed,
                                                    round_size=args.round, rng=rng).items():
                scores.setdefault(run.kind, {}).setdefault(name, []).append(s)
            lat = np.array([d.latency_ms for d in rest])
            latency.setdefault(run.kind, []).append(lat)
            group.setdefault(run.kind, []).append(grp)
            spread.setdefault(run.kind, []).append(float(lat.max() / lat.min()))
        result: dict[str, Any] = {}
        for kind, by_model in scores.items():
            lat, grp = np.concatenate(latency[kind]), np.concatenate(group[kind])
            result[kind] = {"runs": len(latency[kind]), "max_over_min_median": float(np.median(spread[kind])),
                            "metrics": {n: ranking_metrics(lat, np.concatenate(s), grp) for n, s in by_model.items()}}
            print(f"seen={k}, candidates {kind} picked ({result[kind]['runs']} runs, max/min latency "
                  f"{result[kind]['max_over_min_median']:.2f}): pairwise / peak@1 / peak@5")
            for n, m in result[kind]["metrics"].items():
                print(f"  {n:<11} {m['pairwise_acc']:.3f} / {m['peak@1']:.3f} / {m['peak@5']:.3f}")
        report["results"][str(k)] = result
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
