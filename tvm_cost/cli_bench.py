"""`tvm-cost bench kernel`: the online comparison of cost models on held-out tasks; `tvm-cost bench summarize`: its
summary again from stored runs; `tvm-cost bench remeasure`: its runs' best schedules timed again side by side;
`tvm-cost bench pool`: trials to XGBModel's best over several seed sets (parsing and printing only; the work is in
`tvm_cost.tuning.bench` and `tvm_cost.tuning.remeasure`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from tvm_cost.cli_console import make_console

DEFAULT_MODELS = ("zoo:mobilenet_v2", "zoo:densenet", "zoo:resnet50", "zoo:mlp")


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``bench kernel`` to the `tvm-cost` sub-parsers `sub`."""
    bench = sub.add_parser("bench", help="benchmarks").add_subparsers(dest="bench", required=True)
    p = bench.add_parser("kernel", help="tune held-out tasks with each cost model at the same budgets, side by side "
                                        "(resumable; writes runs.jsonl, summary.json and curves.png)")
    p.add_argument("--model", action="append", dest="models", metavar="MODEL",
                   help="zoo spec or ONNX file to take tasks from (repeatable; default: "
                        f"{' '.join(DEFAULT_MODELS)}, families the shipped checkpoint has no records of)")
    p.add_argument("--exclude", action="append", metavar="FOLDER",
                   help="tuning-log folder whose workloads are not benchmarked (the training data; repeatable; "
                        "default: every measured folder under tuning_logs/, what shipped checkpoints train on)")
    p.add_argument("--checkpoint", help="the GNN's weights for gnn and ensemble (default: the one shipped for the "
                                        "target); e.g. one trained without some families, to bench on those "
                                        "(use a fresh --out: stored runs are keyed without the checkpoint)")
    p.add_argument("--ranker", help="the ranker's booster OUT for the ranker kinds (default: the one shipped for "
                                    "the target), as --checkpoint; their trace booster is OUT-trace")
    p.add_argument("--tasks", type=int, default=6, help="number of held-out tasks")
    p.add_argument("--min-flop", type=float, default=1e6, help="smallest task (FLOPs per call) to pick")
    p.add_argument("--max-flop", type=float, default=2e8, help="largest task (FLOPs per call) to pick")
    p.add_argument("--cost-models", default="xgb,xgb-warm16,gnn,ensemble,random")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--budgets", default="16,32,64,128", help="trial budgets reported (one run to the largest)")
    p.add_argument("--trials-per-iter", type=int, default=16, help="candidates measured per search round")
    p.add_argument("--population", type=int, default=128, help="evolutionary-search population")
    p.add_argument("--target", default='{"kind": "llvm", "num-cores": 1}', help="target JSON or preset")
    p.add_argument("--keep-records", action="store_true",
                   help="keep each run's MetaSchedule database (every measured schedule) under OUT/records/, "
                        "for `tvm-cost bench remeasure`")
    p.add_argument("--out", required=True, help="output folder")
    p.set_defaults(func=_bench_kernel)
    p = bench.add_parser("remeasure", help="time the best schedule of each run of a `bench kernel --keep-records` "
                                           "folder again, the kinds of a task and seed round-robin (resumable; "
                                           "writes remeasure.jsonl and remeasure.json)")
    p.add_argument("--out", required=True, help="the bench's output folder")
    p.add_argument("--times", type=int, default=9, help="timings of each best schedule")
    p.set_defaults(func=_bench_remeasure)
    p = bench.add_parser("summarize", help="summarize a `bench kernel` folder's runs.jsonl again (e.g. after "
                                           "concatenating the runs of processes on other cores into it), without "
                                           "tuning; writes summary.json and curves.png")
    p.add_argument("--out", required=True, help="the folder holding runs.jsonl")
    p.add_argument("--budgets", default="16,32,64,128", help="trial budgets reported (runs to the largest count)")
    p.set_defaults(func=_bench_summarize)
    p = bench.add_parser("pool", help="pool the trials each run of a kind needed to reach XGBModel's best over the "
                                      "summaries of several `bench kernel` seed sets")
    p.add_argument("summaries", nargs="+", metavar="SUMMARY[:KIND]",
                   help="a summary JSON of `bench kernel`, optionally with the kind to read in it")
    p.add_argument("--kind", default="gnn", help="the kind to read where SUMMARY names none")
    p.add_argument("--vs", metavar="KIND", help="also pool KIND (e.g. xgb-warm16) from the same summaries and give "
                                                "how many times the trials it needs, paired by seed set")
    p.add_argument("--vs-from", nargs="+", metavar="SUMMARY", help="read --vs from these summaries instead, one for "
                   "each SUMMARY in order: the same seed sets tuned with other weights (the same XGBModel runs "
                   "merged into both, so each pair shares its references)")
    p.add_argument("--json", help="also write the pooled numbers here")
    p.set_defaults(func=_bench_pool)


def _measured_folders(root: Path) -> list[Path]:
    """The target folders under `root` that hold a workload database."""
    return sorted(d for d in root.glob("*") if any(d.glob("database_workload.json*")))


def _bench_kernel(args: argparse.Namespace) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, \
        TimeRemainingColumn

    from tvm_cost.collect.fast import make_builder, make_runner, preload_tensor_intrinsics
    from tvm_cost.errors import TvmCostError
    from tvm_cost.tuning.bench import BENCH_KINDS, BenchRun, RunStore, held_out_tasks, run_bench, workload_hashes
    from tvm_cost.tuning.tune import _tvm_target

    console = make_console()
    kinds = args.cost_models.split(",")
    unknown = [k for k in kinds if k not in BENCH_KINDS]
    if unknown:
        raise TvmCostError(f"unknown cost model(s) {', '.join(unknown)}; choose from {', '.join(BENCH_KINDS)}")
    seeds = [int(s) for s in args.seeds.split(",")]
    budgets = sorted(int(b) for b in args.budgets.split(","))
    target = _tvm_target(json.loads(args.target) if args.target.lstrip().startswith("{") else args.target)
    exclude: set[str] = set()
    for folder in args.exclude or _measured_folders(Path("tuning_logs")):
        exclude |= workload_hashes(folder)
    tasks = held_out_tasks(args.models or list(DEFAULT_MODELS), target, exclude=exclude, n=args.tasks,
                           min_flop=args.min_flop, max_flop=args.max_flop)
    console.print(f"{len(tasks)} held-out tasks ({len(exclude)} training workloads excluded): "
                  + ", ".join(f"{t.name} ({t.flop / 1e6:.1f} MFLOP)" for t in tasks))
    preload_tensor_intrinsics(target)  # the tunes' space generators import only this target's intrinsics
    out = Path(args.out)
    store = RunStore(out / "runs.jsonl")
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TimeRemainingColumn())
    builder = make_builder("fast", target=target)
    runner = make_runner()
    try:
        with Progress(*columns, console=console) as bar:
            job = bar.add_task("bench", total=len(tasks) * len(seeds) * len(kinds))

            def on_run(run: BenchRun | None, label: str) -> None:
                note = "stored" if run is None else f"best {run.best_curve()[-1]:.4f} ms in {run.wall_s:.0f} s"
                bar.update(job, advance=1, description=f"{label}: {note}")

            runs = run_bench(tasks, kinds, seeds, store=store, target=target, max_trials=budgets[-1], on_run=on_run,
                             builder=builder, runner=runner, trials_per_iter=args.trials_per_iter,
                             population_size=args.population, checkpoint=args.checkpoint or "auto",
                             ranker=args.ranker or "auto",
                             records_dir=out / "records" if args.keep_records else None)
    finally:
        builder.close()
    _summarize_runs(runs, budgets, out, console)


def _summarize_runs(runs: list[Any], budgets: list[int], out: Path, console: Any) -> None:
    """summary.json and curves.png of `runs` in `out`, and the table and reach lines on `console`."""
    from rich.table import Table

    from tvm_cost.tuning.bench import plot_curves, summarize, write_json

    summary = summarize(runs, budgets)
    summary["command"] = " ".join(sys.argv)
    write_json(out / "summary.json", summary)
    table = Table(title=f"best latency / XGBModel's best after {budgets[-1]} trials (geometric mean over "
                        f"{summary['tasks']} tasks, median over seeds {summary['seeds']}; lower is better)")
    table.add_column("cost model")
    for b in budgets:
        table.add_column(f"{b} trials", justify="right")
    table.add_column("median s / run", justify="right")
    for kind, row in summary["best_vs_reference_geomean"].items():
        table.add_row(kind, *(f"{row[b]:.3f}" if row[b] is not None else "-" for b in budgets),
                      f"{summary['median_wall_s'][kind]:.0f}")
    console.print(table)
    for kind, reach in summary["to_reference"].items():
        console.print(f"{kind}: XGBModel's {budgets[-1]}-trial best {_reach_text(reach)}")
    console.print(f"wrote {out / 'summary.json'}, {plot_curves(runs, out / 'curves.png')}")


def _bench_summarize(args: argparse.Namespace) -> None:
    from tvm_cost.errors import TvmCostError
    from tvm_cost.tuning.bench import RunStore

    out = Path(args.out)
    budgets = sorted(int(b) for b in args.budgets.split(","))
    store = RunStore(out / "runs.jsonl")
    runs = [r for r in store.runs if r.max_trials == budgets[-1]]
    if not runs:
        raise TvmCostError(f"no runs of {budgets[-1]} trials to summarize", path=store.path)
    _summarize_runs(runs, budgets, out, make_console())


def _reach_text(reach: dict) -> str:
    """How many runs reached the reference, and the median trials and seconds to it where at least half did."""
    trials, seconds = reach["median_trials"], reach["median_seconds"]
    if trials is None:
        return "no runs stored"
    if trials == float("inf"):
        return f"reached in {reach['reached']} runs, too few for a median"
    return f"reached in {reach['reached']} runs, after a median of {trials:g} trials, {seconds:.1f} s"


def _bench_remeasure(args: argparse.Namespace) -> None:
    from rich.progress import Progress
    from rich.table import Table

    from tvm_cost.collect.fast import make_builder, make_runner
    from tvm_cost.errors import TvmCostError
    from tvm_cost.tuning.bench import RunStore, write_json
    from tvm_cost.tuning.remeasure import remeasure_runs, summarize_remeasured

    console = make_console()
    out = Path(args.out)
    runs = RunStore(out / "runs.jsonl").runs
    if not runs or not (out / "records").is_dir():
        raise TvmCostError(f"{out}: no runs.jsonl with a records/ folder (run `bench kernel --keep-records`)")
    made: list[Any] = []  # the build pool, once a group needs timing

    def measurers() -> tuple[Any, Any]:
        made.extend((make_builder("fast"), make_runner()))
        return made[0], made[1]

    try:
        with Progress(console=console) as bar:
            job = bar.add_task("re-measure", total=len({(r.task, r.seed) for r in runs}))
            rows = remeasure_runs(runs, out / "records", times=args.times, measurers=measurers,
                                  store=out / "remeasure.jsonl",
                                  on_group=lambda label: bar.update(job, advance=1, description=label))
    finally:
        if made:
            made[0].close()
    summary = summarize_remeasured(rows)
    summary["command"] = " ".join(sys.argv) if made else _stored_command(out / "remeasure.json")
    write_json(out / "remeasure.json", summary)
    table = Table(title=f"best schedule / XGBModel's (geometric mean over {summary['tasks']} tasks, median over "
                        f"seeds {summary['seeds']}; lower is better)")
    for col in ("cost model", "as tuned", "re-measured", "tuned / re-measured"):
        table.add_column(col, justify="left" if col == "cost model" else "right")
    for kind, geo in summary["best_vs_reference_geomean"].items():
        optimism = summary["tuned_over_remeasured_median"][kind]
        table.add_row(kind, *(f"{v:.3f}" if v is not None else "-"
                              for v in (geo["tuned"], geo["remeasured"], optimism)))
    console.print(table)
    for kind, pair in summary["paired"].items():
        console.print(f"{kind}, run by run: re-measured best / XGBModel's {pair['remeasured_geomean']:.3f} "
                      f"(geometric mean), faster in {pair['faster']} runs")
    console.print(f"wrote {out / 'remeasure.json'}")


def _stored_command(path: Path) -> str | None:
    """The command that timed a re-measure, kept when a later call only summarizes it."""
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("command")
    except (OSError, ValueError, AttributeError):
        return None


def _trials_text(trials: float | None) -> str:
    return "-" if trials is None else "never" if trials == float("inf") else f"{trials:g}"


def _times_text(ratio: float) -> str:
    """A ratio of pooled medians: infinite where only the second kind never got there, 0 where only the first."""
    if ratio == float("inf"):
        return "unbounded"
    return "0x (the kinds above never got there)" if ratio == 0 else f"{ratio:.2f}x"


def _bench_pool(args: argparse.Namespace) -> None:
    from rich.table import Table

    from tvm_cost.errors import TvmCostError
    from tvm_cost.tuning.bench import pool_trials, write_json

    def read(path: str) -> dict[str, Any]:
        try:
            return dict(json.loads(Path(path).read_text(encoding="utf-8")))
        except (OSError, ValueError) as err:
            raise TvmCostError(f"cannot read the bench summary ({type(err).__name__}: {err})", path=path) from None

    sets = []
    for spec in args.summaries:
        path, sep, kind = spec.rpartition(":")
        if not (sep and path.endswith(".json")):  # no KIND given
            path, kind = spec, args.kind
        sets.append((path, read(path), kind))
    versus_from = None if args.vs_from is None else [(path, read(path)) for path in args.vs_from]
    pooled = pool_trials(sets, versus=args.vs, versus_from=versus_from)
    table = Table(title="trials to XGBModel's best after the largest budget (median over runs; never: half of them or "
                        "fewer reached it)")
    for col in ("summary", "kind", "seeds", "runs", "reached", "median trials", "95 % interval (sets resampled)"):
        table.add_column(col, justify="left" if col in ("summary", "kind") else "right")
    rows = [*pooled["sets"], {"label": "pooled", "kind": "", "seeds": "", **pooled["pooled"]}]
    if args.vs:
        rows.append({"label": "pooled" + (" (--vs-from)" if args.vs_from else ""), "seeds": "", **pooled["versus"]})
    for row in rows:
        ci = row.get("median_ci95")
        table.add_row(row["label"], row["kind"], ",".join(map(str, row["seeds"] or [])), str(row["runs"]),
                      str(row["reached"]), _trials_text(row["median_trials"]),
                      "" if ci is None else f"{_trials_text(ci[0])} to {_trials_text(ci[1])}")
    console = make_console()
    console.print(table)
    if args.vs:
        vs = pooled["versus"]
        ci = vs.get("ratio_ci95")
        name = f"{args.vs} of --vs-from" if args.vs_from else args.vs
        console.print(f"pooled median trials, {name} / the kinds above: {_times_text(vs['ratio'])}"
                      + ("" if ci is None else f" (95 % interval {_times_text(ci[0])} to {_times_text(ci[1])}, "
                                               "each draw of sets serving both)"))
    if args.json:
        write_json(args.json, {**pooled, "command": " ".join(sys.argv)})
