"""Experiment (run twenty-eight, docs/kernel_model.md): the GNN with each candidate's 26 trace-decision features
(`tvm_cost.features.trace_decisions`) appended to its globals `u`, without a schema change.

It patches, in this process only, what the GNN reads: `load_kernel_dataset` (items' `u` gets their `decisions`),
the model config of `tvm-cost train` / `eval` (`global_dim` + 26) and, for `bench`, `CandidateFeaturizer`'s graph
extraction (live candidates' `u` gets the decisions of `sch.trace`). The rankers also read `u`, so `bench` takes
only kinds whose GNN featurizer walks alone ("gnn", "ensemble"). The checkpoints keep schema `tvm-cost-program` v1
in their metadata, so the shipped code loads them but feeds 14 globals: use them through this script only.

    python docs/experiments/gnn_trace_decisions.py train DATA --out OUT ...         # tvm-cost train
    python docs/experiments/gnn_trace_decisions.py eval DATA ...                    # tvm-cost eval
    python docs/experiments/gnn_trace_decisions.py study scripts/online_adaptation_study.py --checkpoint OUT ...
    python docs/experiments/gnn_trace_decisions.py bench kernel --checkpoint OUT --cost-models gnn ...
"""

import dataclasses
import runpy
import sys

import numpy as np
import torch

import tvm_cost.cli_kernel as cli_kernel
import tvm_cost.tuning.offline as offline
from tvm_cost.features.trace_decisions import DECISION_COLUMNS, decision_features, trace_json
from tvm_cost.tuning.replay import CandidateFeaturizer

_load, _configs, _extract = offline.load_kernel_dataset, cli_kernel._configs, CandidateFeaturizer._extract


def load_kernel_dataset(*args, **kwargs):
    ds = _load(*args, **kwargs)
    for d in ds._items:
        d.u = torch.cat([d.u, d.decisions.to(d.u.dtype)], dim=1)
    return ds


def configs(args, seed=0):
    model, train = _configs(args, seed)
    return dataclasses.replace(model, global_dim=model.global_dim + len(DECISION_COLUMNS)), train


def extract(self, context, candidates, spec, u):
    graphs = _extract(self, context, candidates, spec, u)
    if not self.walk:
        raise SystemExit("gnn_trace_decisions.py: a ranker shares this featurizer; bench gnn / ensemble kinds only")
    for g, c in zip(graphs, candidates, strict=True):
        g["u"] = np.concatenate([g["u"], decision_features(trace_json(c.sch.trace))[None].astype(g["u"].dtype)], 1)
    return graphs


offline.load_kernel_dataset, cli_kernel._configs, CandidateFeaturizer._extract = load_kernel_dataset, configs, extract
if sys.argv[1] == "study":
    sys.argv = sys.argv[2:]
    runpy.run_path(sys.argv[0], run_name="__main__")
else:
    from tvm_cost.cli import main

    sys.exit(main(sys.argv[1:]))
