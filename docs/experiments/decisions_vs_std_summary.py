"""Run twenty-eight: the GNN with trace decisions (docs/bench_kernel_epyc28d, kind renamed "gnn-decisions")
against the GNN without (..28e; both also in ..28_merged), `std` ("gnn") as the reference. Run from the repository
root; writes docs/bench_kernel_epyc28e/decisions_vs_std_seeds*.json."""

from dataclasses import replace

from tvm_cost.tuning.bench import RunStore, summarize, write_json


def runs(folder: str, kinds: tuple[str, ...] = ("gnn", "gnn-decisions"), rename: str | None = None) -> list:
    return [replace(r, kind=rename or r.kind) for r in RunStore(f"docs/{folder}/runs.jsonl").runs if r.kind in kinds]


seeds_79_80 = runs("bench_kernel_epyc28d", rename="gnn-decisions") + runs("bench_kernel_epyc28e")
for name, rs in {"79-80": seeds_79_80, "76-80": seeds_79_80 + runs("bench_kernel_epyc28_merged")}.items():
    s = summarize(rs, [16, 32, 64, 128], reference=("gnn",))
    print(name, len(rs), {k: {b: round(x, 3) for b, x in v.items()} for k, v in s["best_vs_reference_geomean"].items()},
          s["to_reference"], s["median_wall_s"])
    write_json(f"docs/bench_kernel_epyc28e/decisions_vs_std_seeds{name}.json", s)
