"""`tvm-cost estimate`: the compile-time end-to-end latency estimate of a model, with its per-subgraph table."""

from __future__ import annotations

import argparse
import json
import time

from tvm_cost.cli_console import make_console


def _estimate(args: argparse.Namespace) -> None:
    from rich.table import Table

    from tvm_cost.estimation.api import estimate, plot_estimate
    from tvm_cost.importer import import_model, parse_input_shapes

    console = make_console()
    t0 = time.perf_counter()
    imported = import_model(args.model, input_shapes=parse_input_shapes(args.input_shape))
    t_import = time.perf_counter() - t0
    result = estimate(imported, target=args.target, database=args.database, checkpoint=args.checkpoint)
    table = Table(title=f"{imported.source} on {result.target['name']} ({result.schedules} schedules)")
    for col, justify in (("#", "right"), ("subgraph", "left"), ("task", "left"), ("ops", "left"),
                         ("predicted ms", "right"), ("share", "right")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    shown = result.subgraphs if args.top <= 0 else result.subgraphs[:args.top]
    for i, s in enumerate(shown):
        table.add_row(str(i + 1), s.name, s.task_name, "+".join(s.op_kinds), f"{s.predicted_ms:.4f}",
                      f"{100 * s.share:.1f}%")
    console.print(table)
    if len(shown) < len(result.subgraphs):
        console.print(f"({len(result.subgraphs) - len(shown)} smaller subgraphs not shown; --top 0 shows all)")
    sec = result.seconds
    console.print(f"[bold]end to end: {result.end_to_end_ms:.2f} ms[/bold] (ensemble range "
                  f"{result.low_ms:.2f}-{result.high_ms:.2f} ms) over {len(result.subgraphs)} kernels; "
                  f"import {t_import:.2f} s, then lower {sec['lower']:.2f} s + features {sec['features']:.2f} s "
                  f"+ predict {sec['predict']:.2f} s"
                  + (f"; latencies of {result.measured_on}" if result.measured_on else ""))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({**result.to_json(), "model": imported.source, "import_s": t_import}, f, indent=1)
        console.print(f"wrote {args.json}")
    if args.plot:
        console.print(f"wrote {plot_estimate(result, args.plot)}")


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `estimate` subcommand to the `tvm-cost` parser."""
    p = sub.add_parser("estimate", help="predict a model's end-to-end latency at compile time, per subgraph")
    p.add_argument("model", help="ONNX file or zoo:NAME[,k=v] spec")
    p.add_argument("--target", default="llvm", help="a preset name or TVM target JSON")
    p.add_argument("--database", help="MetaSchedule database folder: estimate its tuned schedules")
    p.add_argument("--checkpoint", help="estimator checkpoint (default: the one shipped for the target)")
    p.add_argument("--input-shape", action="append", metavar="NAME:1x3x224x224", help="ONNX input shape override")
    p.add_argument("--json", help="write the estimate as JSON here")
    p.add_argument("--plot", help="write a PNG of the largest subgraphs here")
    p.add_argument("--top", type=int, default=20, help="rows of the table (0: all)")
    p.set_defaults(func=_estimate)
