"""How good are a GNN checkpoint's times once a tune has measured some candidates of the task?

An offline replay on measured candidates: for every held-out task with at least `--min-candidates`, a random
order; the first ``k`` candidates are "measured" and fed to `finetune_steps` in rounds of `--round` with
`GNNCostModel`'s shipped settings (what ``update()`` does in a tune), the rest are predicted. Reports, averaged
over tasks, the share of the rest predicted within 2x of the measured latency: pretrained and fine-tuned, each
raw and through the calibration fitted on the checkpoint's training candidates (`tvm_cost.train.calibration`, as
`tvm-cost train` fits it), and "+ shift": moved by the median measured-minus-predicted ln(ms) of the ``k``, as
`GNNCostModel.predict_with_uncertainty` does. With `--times-checkpoint` (a times member, never fine-tuned in a
tune) also its times, alone and shifted.

    python scripts/calibration_finetune_study.py --data tuning_logs/llvm-1core-xeon \\
        --checkpoint docs/bench_kernel_epyc29/xeon-no-mbv2-r50-cand --test-families mobilenet_v2,resnet50 \\
        --times-checkpoint docs/bench_kernel_epyc29/xeon-no-mbv2-r50-cand-times
"""

from __future__ import annotations

import argparse
import json

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--checkpoint", required=True, help="a GNN trained without --test-families")
    parser.add_argument("--test-families", required=True)
    parser.add_argument("--times-checkpoint", help="its times member (tvm-cost train writes OUT-times)")
    parser.add_argument("--seen", default="16,32", help="measured candidates per task (multiples of --round)")
    parser.add_argument("--round", type=int, default=16, help="candidates per fine-tuning round (the bench's 16)")
    parser.add_argument("--min-candidates", type=int, default=48)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    import torch

    from tvm_cost.features.program_schema import CANDIDATE_SCHEMA
    from tvm_cost.train import fit_calibration, item_log_work, load_checkpoint, share_within_factor
    from tvm_cost.tuning.config import GNNCostModelConfig
    from tvm_cost.tuning.offline import family_split, load_kernel_dataset, online_finetuned_scores, predict_log_ms, \
        task_families

    torch.set_num_threads(1)
    ds = load_kernel_dataset(args.data)
    items = [ds[i] for i in range(len(ds))]
    train_idx, test_idx = family_split(ds.groups, task_families(args.data), args.test_families.split(","))
    model, _ = load_checkpoint(args.checkpoint, schema=CANDIDATE_SCHEMA)
    times = load_checkpoint(args.times_checkpoint, schema=CANDIDATE_SCHEMA)[0] if args.times_checkpoint else None
    fit = [items[int(i)] for i in train_idx]
    cal = fit_calibration(predict_log_ms(model, fit), item_log_work(model, fit), np.array([d.latency_ms for d in fit]))
    tasks: dict[str, list] = {}
    for i in test_idx:
        tasks.setdefault(items[int(i)].task, []).append(items[int(i)])
    config, rng = GNNCostModelConfig(), np.random.default_rng(args.seed)
    seen_counts = [int(k) for k in args.seen.split(",")]
    shares: dict[int, dict[str, list[float]]] = {k: {} for k in seen_counts}
    used = [t for t in tasks.values() if len(t) >= args.min_candidates]
    for task in used:
        task = [task[j] for j in rng.permutation(len(task))]
        measured = np.log([d.latency_ms for d in task])
        work = item_log_work(model, task)
        pre = predict_log_ms(model, task)
        pre_cal = cal.apply(pre, work)
        alone = predict_log_ms(times, task) if times is not None else None
        for k in seen_counts:

            def shifted(pred: np.ndarray, k: int = k) -> np.ndarray:
                """`pred` of the whole task -> the rest's, moved by the median error on the first k."""
                return pred[k:] + np.median(measured[:k] - pred[:k])

            post = -online_finetuned_scores(model, task[:k], task, config, seed=0, round_size=args.round)
            post_cal = cal.apply(post, work)
            rows = {"pretrained": pre[k:], "pretrained calibrated": pre_cal[k:],
                    "fine-tuned": post[k:], "fine-tuned calibrated": post_cal[k:],
                    "fine-tuned calibrated + shift": shifted(post_cal)}
            if alone is not None:
                rows.update({"times member": alone[k:], "times member + shift": shifted(alone),
                             "pretrained calibrated and times member, mean": 0.5 * (alone + pre_cal)[k:],
                             "fine-tuned calibrated and times member, mean + shift": shifted(0.5 * (alone + post_cal))})
            for name, pred in rows.items():
                shares[k].setdefault(name, []).append(share_within_factor(np.exp(measured[k:]), np.exp(pred)))
    print(json.dumps({"calibration": cal.to_dict(), "tasks": len(used), "within_2x_mean_over_tasks": {
        str(k): {name: round(float(np.mean(v)), 3) for name, v in by_name.items()} for k, by_name in shares.items()}},
        indent=1))


if __name__ == "__main__":
    main()
