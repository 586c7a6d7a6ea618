"""Do a MetaSchedule trace's sampling decisions rank candidates better than PerStoreFeature alone? One run.

PerStoreFeature describes the loops a schedule produced; the trace also says how they were chosen: the tile
factors of each tiled loop per level, the sampled unroll depth, where producers were computed
(`tvm_cost.features.trace_decisions`, 26 numbers per record). This script trains one learner, the booster of
`tvm_cost.tuning.ranker` (XGBoost ``rank:pairwise`` within tasks), on four feature sets of the same candidates:

- ``psf``: PerStoreFeature rows summed and maxed over the candidate's stores, plus the task's globals (workload
  counts, target);
- ``psf+decisions``: the same plus the decisions (the "rows" ranker);
- ``decisions+task``: the decisions and the task's globals only;
- ``trace``: those plus each trace's raw decisions (`trace_decisions.raw_decisions`; the "trace" ranker).

Also ``screened``: the "trace" ranker screening the "rows" one within each test task as `ScreenedCostModel` does
(the rows ranker orders the trace ranker's best quarter, at least 16, above the rest).

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

    from tvm_cost.features.program_schema import PROGRAM_SCHEMA
    from tvm_cost.features.trace_decisions import DECISION_COLUMNS
    from tvm_cost.tuning.offline import RANKING_METRICS, bound_settings, family_split, load_kernel_dataset, \
        ranking_metrics, task_families
    from tvm_cost.tuning.ranker import booster_scores, ranker_features
    from tvm_cost.tuning.screen import screened_scores

    ds = load_kernel_dataset(args.data)
    features = ranker_features(list(ds))  # rows summed, rows maxed, task globals, decisions
    psf, decisions = features[:, :-len(DECISION_COLUMNS)], features[:, -len(DECISION_COLUMNS):]
    task_globals = psf[:, -len(PROGRAM_SCHEMA.globals):]
    latency, group = ds.latency_ms, np.array([int(d.group) for d in ds])
    train, test = family_split(ds.groups, task_families(args.data), args.test_families.split(","))
    settings = bound_settings(train, test, group)
    feature_sets = {"psf": psf, "psf+decisions": features,
                    "decisions+task": np.hstack([decisions, task_globals]),
                    "trace": ranker_features(list(ds), "trace")}  # decisions, task globals, raw decisions
    seeds = [int(s) for s in args.seeds.split(",")]
    report: dict[str, Any] = {"data": args.data, "test_families": args.test_families, "records": len(ds),
                              "decision_columns": list(DECISION_COLUMNS), "seeds": seeds,
                              "nonzero_share": dict(zip(DECISION_COLUMNS, (decisions != 0).mean(0).round(3).tolist(),
                                                        strict=True))}
    for setting, (fit, score) in settings.items():
        per_seed: dict[str, list[np.ndarray]] = {}
        for name, matrix in feature_sets.items():
            per_seed[name] = [booster_scores(matrix[fit], latency[fit], group[fit], matrix[score], seeds=[seed])
                              for seed in seeds]
        per_seed["screened"] = [screened_scores(t, r, group[score])
                                for t, r in zip(per_seed["trace"], per_seed["psf+decisions"], strict=True)]
        for name, runs in per_seed.items():
            metrics = [ranking_metrics(latency[score], s, group[score]) for s in runs]
            report[f"{setting}/{name}"] = {m: float(np.mean([r[m] for r in metrics])) for m in RANKING_METRICS}
            print(f"{setting:28s} {name:15s}", " ".join(f"{m} {report[f'{setting}/{name}'][m]:.3f}"
                                                        for m in RANKING_METRICS), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
