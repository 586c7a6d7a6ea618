"""One call from a model to its operator graph: import -> lower -> features."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from relay_passes.graph import OperatorGraph
from tvm_cost.errors import TvmCostError


def load_database(path: str | Path) -> Any:
    """Open a MetaSchedule JSON database folder (``database_workload.json`` + ``database_tuning_record.json``)."""
    from tvm.s_tir import meta_schedule as ms

    folder = Path(path)
    workload, records = folder / "database_workload.json", folder / "database_tuning_record.json"
    if not workload.exists() or not records.exists():
        raise TvmCostError("not a MetaSchedule database folder (needs database_workload.json and "
                           "database_tuning_record.json)", path=folder)
    try:
        return ms.database.JSONDatabase(path_workload=str(workload), path_tuning_record=str(records),
                                        allow_missing=False)
    except Exception as err:
        raise TvmCostError(f"cannot read the database: {str(err).strip().splitlines()[0][:200]}",
                           path=folder) from None


def operator_graph(
    model: Any,
    *,
    target: Any = "llvm",
    example_inputs: tuple | None = None,
    input_shapes: list[str] | dict[str, list[int]] | None = None,
    op_level: bool = False,
    database: Any = None,
) -> OperatorGraph:
    """Build the operator graph of `model` for `target`.

    Args:
        model: ONNX path, ``zoo:NAME[,k=v]`` spec, torch module (with `example_inputs`), ExportedProgram or
            Relax IRModule.
        target: Preset name, TVM target JSON or `ResolvedTarget`.
        example_inputs: Inputs for a torch module.
        input_shapes: ONNX shape overrides, as ``["NAME:1x3x224x224"]`` or ``{"NAME": [1, 3, 224, 224]}``.
        op_level: One node per op instead of one per fused kernel.
        database: A MetaSchedule database or the path of a database folder; its records give the schedules.
    """
    from relay_passes.build import build_operator_graph
    from tvm_cost.importer import import_model, parse_input_shapes

    shapes = parse_input_shapes(input_shapes) if isinstance(input_shapes, list) else input_shapes
    imported = import_model(model, example_inputs=example_inputs, input_shapes=shapes)
    if isinstance(database, (str, Path)):
        database = load_database(database)
    return build_operator_graph(imported.mod, target, fusion="none" if op_level else "default",
                                database=database, source=imported.source, batch_size=imported.batch_size)
