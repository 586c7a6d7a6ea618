"""Run twenty-eight: gnn with trace decisions (docs/bench_kernel_epyc28d) against gnn without (..28e, and both in
..28_merged), `std` as the reference. Run from the repository root."""
import json, math, sys
from tvm_cost.tuning.bench import BenchRun, summarize
KEYS = ('task', 'task_name', 'kind', 'seed', 'max_trials', 'trials', 'wall_s')
def runs(folder, rename=None):
    out = []
    for r in map(json.loads, open(folder + '/runs.jsonl')):
        if rename: r['kind'] = rename
        out.append(BenchRun(**{k: r[k] for k in KEYS}))
    return out
sets = {"79-80": runs('docs/bench_kernel_epyc28d', 'gnn-decisions') + runs('docs/bench_kernel_epyc28e'),
        "76-80": runs('docs/bench_kernel_epyc28d', 'gnn-decisions') + runs('docs/bench_kernel_epyc28e')
                 + [r for r in runs('docs/bench_kernel_epyc28_merged') if r.kind in ('gnn', 'gnn-decisions')]}
strict = lambda v: None if isinstance(v, float) and not math.isfinite(v) else {k: strict(x) for k, x in v.items()} if isinstance(v, dict) else [strict(x) for x in v] if isinstance(v, (list, tuple)) else v
for name, rs in sets.items():
    s = summarize(rs, [16, 32, 64, 128], reference=("gnn",))
    print(name, len(rs), {k: {b: round(x, 3) for b, x in v.items()} for k, v in s['best_vs_reference_geomean'].items()}, s['to_reference'], s['median_wall_s'])
    open(f'docs/bench_kernel_epyc28e/decisions_vs_std_seeds{name}.json', 'w').write(json.dumps(strict(s), indent=1, allow_nan=False) + '\n')
