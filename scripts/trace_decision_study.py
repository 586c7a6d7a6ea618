"""Do a MetaSchedule trace's sampling decisions rank candidates better than PerStoreFeature alone? One run.

PerStoreFeature describes the loops a schedule produced; the trace also says how they were chosen: the tile
factors of each tiled loop per level, the sampled unroll depth, where producers were computed. This script turns
the decisions of every measured record's trace (as the database stores it) into 26 numbers and trains one learner,
XGBoost's ``rank:pairwise`` within tasks, on three feature sets of the same candidates:

- ``psf``: PerStoreFeature rows summed and maxed over the candidate's stores, plus the task's globals (workload
  counts, target);
- ``psf+decisions``: the same plus the decisions;
- ``decisions+task``: the decisions and the task's globals only.

Each is scored on the held-out families (trained on the other families), and, as bounds on what the features
allow, on half of every test task after training on the other half, alone and with the training families (as in
`kernel_label_ceiling.py`). Mean over `--seeds`.

    python scripts/trace_decision_study.py --data /tmp/kdata/epyc-clean --json docs/trace_decision_study_epyc.json
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

import numpy as np

LEVELS = 4  # tile levels, innermost first; outer levels beyond add to the last
DECISION_COLUMNS = (
    *(f"log_spatial_tile_l{i}" for i in range(LEVELS)), *(f"log_reduce_tile_l{i}" for i in range(LEVELS)),
    *(f"spatial_share_l{i}" for i in range(LEVELS)), *(f"reduce_share_l{i}" for i in range(LEVELS)),
    "log_unroll", "log_other_categorical", "compute_at_loop", "compute_inline", "compute_root", "tiles_sampled",
    "log_last_spatial_inner", "log_last_reduce_inner", "cache_stages", "tiled_blocks",
)


def decision_features(trace_json: Any) -> np.ndarray:
    """`DECISION_COLUMNS` of a trace as a tuning database stores it (``[[inst, ...], [[index, decision], ...]]``).

    Only instructions before ``EnterPostproc`` count. A tile is spatial when its factor count is the number of S
    levels of its block's tiling structure (``SSRSRS`` on CPUs), reduction otherwise; a categorical sample is the
    unroll depth when an unroll annotation follows it.
    """
    insts, decision_list = trace_json
    decisions = {int(i): d for i, d in decision_list}
    spatial, reduce = np.zeros(LEVELS), np.zeros(LEVELS)
    unroll = other = last_spatial = last_reduce = 0.0
    at = inline = root = tiles = caches = tiled = 0
    structure = ""
    for i, (kind, inputs, attrs, _outputs) in enumerate(insts):
        if kind == "EnterPostproc":
            break
        if kind == "Annotate" and attrs[0] == "meta_schedule.tiling_structure":
            structure, tiled = str(inputs[1]).strip('"'), tiled + 1
        elif kind == "SamplePerfectTile":
            factors = [max(int(f), 1) for f in decisions[i]]
            is_spatial = len(factors) == (structure.count("S") or 4)
            levels = spatial if is_spatial else reduce
            for level, factor in enumerate(reversed(factors)):
                levels[min(level, LEVELS - 1)] += math.log2(factor)
            last_spatial, last_reduce = ((math.log2(factors[-1]), last_reduce) if is_spatial
                                         else (last_spatial, math.log2(factors[-1])))
            tiles += 1
        elif kind == "SampleCategorical":
            value = max(int(attrs[0][int(decisions[i])]), 0)
            nxt = insts[i + 1] if i + 1 < len(insts) else ["", [], [""], []]
            if nxt[0] == "Annotate" and "unroll" in str(nxt[2][0]):
                unroll += math.log2(1 + value)
            else:
                other += math.log2(1 + value)
        elif kind == "SampleComputeLocation":
            loc = int(decisions[i])
            at, inline, root = at + (loc >= 0), inline + (loc == -2), root + (loc == -1)
        elif kind in ("CacheRead", "CacheWrite", "ReverseComputeAt"):
            caches += 1
    return np.asarray([*spatial, *reduce, *(spatial / max(spatial.sum(), 1.0)), *(reduce / max(reduce.sum(), 1.0)),
                       unroll, other, at, inline, root, tiles, last_spatial, last_reduce, caches, tiled], np.float32)


def rank_scores(features: np.ndarray, latency: np.ndarray, group: np.ndarray, fit: np.ndarray, score: np.ndarray,
                seed: int) -> np.ndarray:
    """XGBoost rank:pairwise trained on the `fit` rows (relevance: 30 x the task's best / latency, floored)."""
    import xgboost as xgb

    fit = fit[np.argsort(group[fit], kind="stable")]
    relevance = np.zeros(len(fit))
    for g in np.unique(group[fit]):
        rows = group[fit] == g
        relevance[rows] = np.floor(30 * latency[fit][rows].min() / latency[fit][rows])
    train = xgb.DMatrix(features[fit], label=relevance)
    train.set_group(np.unique(group[fit], return_counts=True)[1])
    booster = xgb.train({"objective": "rank:pairwise", "eta": 0.1, "max_depth": 6, "min_child_weight": 2,
                         "subsample": 0.8, "colsample_bytree": 0.8, "seed": seed}, train, 300)
    return booster.predict(xgb.DMatrix(features[score]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--test-families", default="gpt,mlp_mixer")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    from pathlib import Path

    from tvm_cost.data.kernel_dataset import _read_raw
    from tvm_cost.features.schema import NUM_STORE_FEATURES
    from tvm_cost.tuning.offline import RANKING_METRICS, family_split, load_kernel_dataset, ranking_metrics, \
        task_families

    ds = load_kernel_dataset(args.data)
    raw = _read_raw(Path(args.data))
    psf = np.stack([np.concatenate([d.x[:, :NUM_STORE_FEATURES].sum(0).numpy(),
                                    d.x[:, :NUM_STORE_FEATURES].max(0).values.numpy(), d.u[0].numpy()]) for d in ds])
    decisions = np.stack([decision_features(raw[d.task].records[d.record][0]) for d in ds])
    task_globals = psf[:, -ds[0].u.shape[1]:]
    latency, group = ds.latency_ms, np.array([int(d.group) for d in ds])
    train, test = family_split(ds.groups, task_families(args.data), args.test_families.split(","))
    rng = np.random.default_rng(0)
    half = np.zeros(len(test), bool)
    for g in np.unique(group[test]):
        rows = np.flatnonzero(group[test] == g)
        half[rng.permutation(rows)[:len(rows) // 2]] = True
    settings = {"held_out": (train, test), "in_task_half": (test[half], test[~half]),
                "training_families_plus_half": (np.concatenate([train, test[half]]), test[~half])}
    feature_sets = {"psf": psf, "psf+decisions": np.hstack([psf, decisions]),
                    "decisions+task": np.hstack([decisions, task_globals])}
    seeds = [int(s) for s in args.seeds.split(",")]
    report: dict[str, Any] = {"data": args.data, "test_families": args.test_families, "records": len(ds),
                              "decision_columns": list(DECISION_COLUMNS), "seeds": seeds,
                              "nonzero_share": dict(zip(DECISION_COLUMNS, (decisions != 0).mean(0).round(3).tolist(),
                                                        strict=True))}
    for setting, (fit, score) in settings.items():
        for name, features in feature_sets.items():
            runs = [ranking_metrics(latency[score], rank_scores(features, latency, group, fit, score, seed),
                                    group[score]) for seed in seeds]
            report[f"{setting}/{name}"] = {m: float(np.mean([r[m] for r in runs])) for m in RANKING_METRICS}
            print(f"{setting:28s} {name:15s}", " ".join(f"{m} {report[f'{setting}/{name}'][m]:.3f}"
                                                        for m in RANKING_METRICS), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
