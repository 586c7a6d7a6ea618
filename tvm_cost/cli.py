"""The `tvm-cost` command line. It only parses arguments and calls the library; imports are lazy so that
`tvm-cost --help` answers at once (importing tvm costs seconds)."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Callable, Sequence

from tvm_cost.cli_bench import register as register_bench_command
from tvm_cost.cli_console import make_console
from tvm_cost.cli_estimate import register as register_estimate_command
from tvm_cost.cli_kernel import register as register_kernel_commands
from tvm_cost.errors import Interrupt, TvmCostError


def _graph(args: argparse.Namespace) -> None:
    from rich.table import Table

    from tvm_cost.graph_api import operator_graph

    console = make_console()
    t0 = time.perf_counter()
    graph = operator_graph(args.model, target=args.target, input_shapes=args.input_shape,
                           op_level=args.op_level, database=args.database)
    elapsed = time.perf_counter() - t0
    table = Table(title=f"{graph.source} on {graph.globals['target_name']} "
                        f"({'op-level' if args.op_level else 'fused'}, schedules: "
                        f"{', '.join(sorted({n.schedule_source for n in graph.nodes}))})")
    for col, justify in (("#", "right"), ("name", "left"), ("task", "left"), ("ops", "left"),
                         ("output", "left"), ("GFLOPs", "right"), ("MB moved", "right"), ("FLOP/B", "right")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for i, node in enumerate(graph.nodes):
        table.add_row(str(i), node.name, node.task_name, "+".join(node.op_kinds),
                      "x".join(map(str, node.output_shape)) + f" {node.output_dtype}",
                      f"{node.flops / 1e9:.4f}", f"{node.bytes / 1e6:.3f}", f"{node.intensity:.2f}")
    console.print(table)
    g = graph.globals
    console.print(f"{g['num_nodes']} nodes ({g['num_tasks']} distinct tasks), {g['num_edges']} edges, "
                  f"{g['total_flops'] / 1e9:.3f} GFLOPs, {g['total_bytes'] / 1e6:.1f} MB moved, "
                  f"batch {g['batch_size']}; built in {elapsed:.1f} s")
    if args.json:
        graph.save_json(args.json, store_features=not args.no_store_features)
        console.print(f"wrote {args.json}")


def _measure_e2e(args: argparse.Namespace) -> None:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, \
        TimeRemainingColumn

    from tvm_cost.e2e.run import run_e2e, sample_specs
    from tvm_cost.targets import resolve_target

    specs = list(args.models)
    if args.sample:
        specs += sample_specs(args.sample, seed=args.seed, family=args.family, max_gflops=args.max_gflops)
    if not specs:
        raise SystemExit("tvm-cost measure-e2e: give MODEL arguments or --sample N")
    out = args.out or f"tuning_logs/{resolve_target(args.target).name}/e2e/e2e_records.jsonl"
    console = Console()
    columns = (TextColumn("[bold]e2e"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("eta"),
               TimeRemainingColumn(), TextColumn("{task.description}"))
    with Progress(*columns, console=console) as progress:
        task = progress.add_task("", total=len(specs))

        def on_progress(done: int, total: int, record: dict) -> None:
            status = f"{record['latency_ms']:.2f} ms" if record.get("status") == "ok" else "failed"
            progress.update(task, completed=done, description=f"{record['spec']}: {status}")

        summary = run_e2e(specs, target=args.target, out=out, database=args.database, repeat=args.repeat,
                          min_repeat_ms=args.min_repeat_ms, kernel_runs=args.per_kernel, on_progress=on_progress)
    console.print(f"measured {summary['measured']}, failed {summary['failed']}, skipped (already measured) "
                  f"{summary['skipped']} in {summary['seconds']} s; {summary['records_in_file']} measured "
                  f"configurations in {out}")


def _collect(args: argparse.Namespace) -> None:
    from rich.console import Console

    from tvm_cost.collect import run_collect, run_remeasure
    from tvm_cost.zoo import sample_configs, to_spec

    models = list(args.models)
    if args.sample:
        models += [to_spec(cfg.pop("name"), cfg) for cfg in sample_configs(args.family, args.sample, args.seed)]
    if not models and not args.remeasure:
        raise SystemExit("tvm-cost collect: give MODEL arguments, --sample N or --remeasure K")
    if models:
        _run_collect(args, models)
    if args.remeasure:
        noise = run_remeasure(target=args.target, out_root=args.out_root, out_name=args.out_name, k=args.remeasure,
                              seed=args.seed, times=args.remeasure_times, command=" ".join(sys.argv))
        Console().print_json(data={"noise": noise})


def _run_collect(args: argparse.Namespace, models: list[str]) -> None:
    from rich.console import Console

    from tvm_cost.collect import run_collect

    summary = run_collect(
        models=models, target=args.target, out_root=args.out_root, out_name=args.out_name,
        trials_per_task=args.trials_per_task,
        random_fraction=args.random_fraction, batch_size=args.batch_size, seed=args.seed,
        measure=not args.build_only, builder=args.builder, rpc_tracker=args.rpc_tracker, rpc_key=args.rpc_key,
        time_budget_s=args.time_budget_s, max_tasks=args.max_tasks, max_flop=args.max_flop, progress=True,
        repeat=args.repeat,
        min_repeat_ms=args.min_repeat_ms, command=" ".join(sys.argv))
    Console().print_json(data=summary)


def _tune(args: argparse.Namespace) -> None:
    from rich.console import Console

    from tvm_cost.importer import import_model, parse_input_shapes
    from tvm_cost.targets import resolve_target
    from tvm_cost.tuning import auto_kind, tune_model

    console = Console()
    resolved = resolve_target(args.target)
    t0 = time.perf_counter()
    imported = import_model(args.model, input_shapes=parse_input_shapes(args.input_shape))
    kind = auto_kind(resolved.target_json) if args.cost_model == "auto" else args.cost_model
    database = tune_model(imported.mod, target=resolved.target_json, cost_model=kind,
                          max_trials=args.trials, max_trials_per_task=args.trials_per_task,
                          work_dir=args.work_dir, seed=args.seed)
    records = len(database)
    console.print(f"tuned {args.model} on {resolved.name} with cost model {kind!r}: {records} records "
                  f"in {time.perf_counter() - t0:.0f} s; database in {args.work_dir} "
                  f"(use it with: tvm-cost graph {args.model} --database {args.work_dir})")


def _add_model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="an .onnx file or zoo:NAME[,key=value...] (e.g. zoo:resnet18,batch=1)")
    p.add_argument("--target", default="llvm",
                   help="a preset (llvm, cuda-sm80, cuda-sm90, cuda-a100, cuda-h100, ...) or a TVM target JSON")
    p.add_argument("--input-shape", action="append", metavar="NAME:1x3x224x224",
                   help="static shape for an ONNX input (repeatable)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tvm-cost", description="A learned cost model for Apache TVM.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("graph", help="print (and save) the operator graph TVM will compile for a model")
    _add_model_args(p)
    p.add_argument("--op-level", action="store_true", help="one node per op (before fusion) instead of kernels")
    p.add_argument("--database", help="MetaSchedule database folder (database_workload.json + "
                                      "database_tuning_record.json): schedule features of the tuned kernels")
    p.add_argument("--json", metavar="OUT", help="write the graph as JSON")
    p.add_argument("--no-store-features", action="store_true",
                   help="leave the per-store feature matrices out of the JSON")
    p.set_defaults(func=_graph)

    p = sub.add_parser("measure-e2e", help="compile models with TVM and record their end-to-end latency")
    p.add_argument("models", nargs="*", help="zoo specs or .onnx files")
    p.add_argument("--sample", type=int, default=0, metavar="N", help="also measure N sampled zoo configurations")
    p.add_argument("--family", help="sample from this zoo family only")
    p.add_argument("--seed", type=int, default=0, help="seed of the configuration sampler")
    p.add_argument("--max-gflops", type=float, default=2.0,
                   help="skip sampled configurations above this many GFLOPs (default schedules are slow)")
    p.add_argument("--target", default="llvm", help="an llvm preset or target JSON (timed on this CPU)")
    p.add_argument("--database", help="MetaSchedule database folder: time its tuned schedules")
    p.add_argument("--out", help="JSON-lines output (default tuning_logs/<target>/e2e/e2e_records.jsonl)")
    p.add_argument("--repeat", type=int, default=5, help="time-evaluator repeats (median reported)")
    p.add_argument("--min-repeat-ms", type=int, default=100, help="minimum duration of one repeat")
    p.add_argument("--per-kernel", type=int, default=0, metavar="RUNS",
                   help="also time every kernel call over RUNS instrumented inferences (median per call)")
    p.set_defaults(func=_measure_e2e)

    p = sub.add_parser("collect", help="measure candidate schedules of every task of some models (MetaSchedule "
                                       "records under tuning_logs/<target>/; resumable)")
    p.add_argument("models", nargs="*", help="zoo specs or .onnx files")
    p.add_argument("--sample", type=int, default=0, metavar="N", help="also collect N sampled zoo configurations")
    p.add_argument("--family", help="sample from this zoo family only")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--target", default="llvm", help="a preset, a TVM target JSON or a TVM tag")
    p.add_argument("--out-root", default="tuning_logs")
    p.add_argument("--out-name", help="folder under --out-root (default: the target's name, e.g. llvm-1core); "
                                      "a folder measured on another CPU is refused")
    p.add_argument("--trials-per-task", type=int, default=64)
    p.add_argument("--random-fraction", type=float, default=0.5,
                   help="share of candidates sampled at random; the rest from XGBModel-guided evolutionary search")
    p.add_argument("--batch-size", type=int, default=32, help="candidates per build-and-measure batch")
    p.add_argument("--builder", default="fast", choices=("fast", "default"),
                   help="fast: persistent build pool without the tensor-intrinsics import; default: LocalBuilder")
    p.add_argument("--repeat", type=int, default=3, help="evaluator repeats per candidate")
    p.add_argument("--min-repeat-ms", type=int, default=10)
    p.add_argument("--rpc-tracker", metavar="HOST:PORT", help="measure through TVM's RPC tracker")
    p.add_argument("--rpc-key", help="device key registered with the tracker")
    p.add_argument("--build-only", action="store_true", help="build the candidates, do not run them (no GPU)")
    p.add_argument("--time-budget-s", type=float, help="stop cleanly before exceeding this many seconds")
    p.add_argument("--max-tasks", type=int, help="collect at most this many tasks")
    p.add_argument("--max-flop", type=float, help="skip tasks above this many FLOPs a call (more records/s)")
    p.add_argument("--remeasure", type=int, default=0, metavar="K",
                   help="then re-time K random records of the folder and write noise.json (alone: no collection)")
    p.add_argument("--remeasure-times", type=int, default=5, help="timings per re-measured record")
    p.set_defaults(func=_collect)

    p = sub.add_parser("tune", help="tune a model's kernels with MetaSchedule, guided by a cost model")
    _add_model_args(p)
    p.add_argument("--cost-model", default="auto",
                   choices=("auto", "gnn", "xgb", "ensemble", "ranker", "gnn+ranker", "ranker-trace",
                            "ranker-screened", "gnn-screened", "random"),
                   help="what guides the search (tvm_cost.tuning.make_cost_model; default auto: the tree ranker "
                        "on the trace where one ships for the target (llvm), else the GNN augmenting TVM's XGBModel)")
    p.add_argument("--trials", type=int, default=256, help="total measured trials")
    p.add_argument("--trials-per-task", type=int, help="cap per task")
    p.add_argument("--work-dir", default="tune_work", help="MetaSchedule work dir (database and logs)")
    p.add_argument("--seed", type=int)
    p.set_defaults(func=_tune)

    register_kernel_commands(sub)
    register_estimate_command(sub)
    register_bench_command(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    import signal

    args = build_parser().parse_args(argv)
    previous = signal.signal(signal.SIGINT, Interrupt.handler) if threading_is_main() else None
    try:
        return _run(args)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def _run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(message)s")
    logging.getLogger("tvm.s_tir.meta_schedule").setLevel(logging.WARNING)

    func: Callable[[argparse.Namespace], None] = args.func
    try:
        func(args)
    except TvmCostError as err:
        print(f"tvm-cost: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tvm-cost: interrupted; finished work is kept, run the same command again to resume", file=sys.stderr)
        return 130
    except RuntimeError:
        if not Interrupt.seen:
            raise
        print("tvm-cost: interrupted; finished work is kept, run the same command again to resume", file=sys.stderr)
        return 130
    return 0


def threading_is_main() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


if __name__ == "__main__":
    sys.exit(main())
