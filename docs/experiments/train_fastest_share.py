"""Experiment (run twenty-eight, docs/kernel_model.md): `tvm-cost train` on each task's fastest SHARE of candidates
only, in DATA and the --rank-data folders alike: a GNN specialized in the good candidates a screen keeps.

    python docs/experiments/train_fastest_share.py 0.5 train DATA --out OUT ...     # then as tvm-cost train
"""
import sys

import numpy as np

import tvm_cost.cli_kernel as ck

share = float(sys.argv[1])
orig = ck._kept


def kept(ds, path, excluded):
    items = orig(ds, path, excluded)
    by = {}
    for d in items:
        by.setdefault(int(d.group), []).append(d)
    out = []
    for group in by.values():
        cut = np.quantile([d.latency_ms for d in group], share)
        out += [d for d in group if d.latency_ms <= cut]
    print(f"{path}: kept {len(out)} of {len(items)}", file=sys.stderr)
    return out


ck._kept = kept
from tvm_cost.cli import main  # noqa: E402

sys.exit(main(sys.argv[2:]))
