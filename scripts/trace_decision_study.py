"""Do a MetaSchedule trace's sampling decisions rank candidates better than PerStoreFeature alone? One run.

PerStoreFeature describes the loops a schedule produced; the trace also says how they were chosen: the tile
factors of each tiled loop per level, the sampled unroll depth, where producers were computed
(`tvm_cost.features.trace_decisions`, 26 numbers per record). This script trains one learner, the booster of
`tvm_cost.tuning.ranker` (XGBoost ``rank:pairwise`` within tasks), on three feature sets of the same candidates:

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
from typing import Any

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--test-families", default="gpt,mlp_mixer")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    from pathlib import Path

    from tvm_cost.features.trace_decisions import DECISION_COLUMNS
    from tvm_cost.tuning.offline import RANKING_METRICS, family_split, load_kernel_dataset, ranking_metrics, \
        task_families
    from tvm_cost.tuning.ranker import booster_scores, ranker_features

    ds = load_kernel_dataset(args.data)
    features = ranker_features(list(ds))  # rows summed, rows maxed, task globals, decisions
    psf, decisions = features[:, :-len(DECISION_COLUMNS)], features[:, -len(DECISION_COLUMNS):]
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
    feature_sets = {"psf": psf, "psf+decisions": features,
                    "decisions+task": np.hstack([decisions, task_globals])}
    seeds = [int(s) for s in args.seeds.split(",")]
    report: dict[str, Any] = {"data": args.data, "test_families": args.test_families, "records": len(ds),
                              "decision_columns": list(DECISION_COLUMNS), "seeds": seeds,
                              "nonzero_share": dict(zip(DECISION_COLUMNS, (decisions != 0).mean(0).round(3).tolist(),
                                                        strict=True))}
    for setting, (fit, score) in settings.items():
        for name, matrix in feature_sets.items():
            runs = [ranking_metrics(latency[score], booster_scores(matrix[fit], latency[fit], group[fit], matrix[score],
                                                                   seeds=[seed]), group[score]) for seed in seeds]
            report[f"{setting}/{name}"] = {m: float(np.mean([r[m] for r in runs])) for m in RANKING_METRICS}
            print(f"{setting:28s} {name:15s}", " ".join(f"{m} {report[f'{setting}/{name}'][m]:.3f}"
                                                        for m in RANKING_METRICS), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
