"""Model import: ONNX files, torch modules, ExportedPrograms, Relax IRModules and zoo specs -> a static Relax module.

Every failure a user can cause (a missing or corrupt file, an unsupported op, a dynamic dimension with no override,
an empty graph) becomes one `TvmCostError` line naming the model and the problem, never a TVM traceback.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tvm_cost.errors import TvmCostError

if TYPE_CHECKING:
    import torch
    import tvm


@dataclass
class ImportedModel:
    """A Relax module with static shapes and where it came from.

    Attributes:
        mod: The Relax IRModule (`main` takes the model inputs; weights are bound as constants).
        source: The path, zoo spec or object kind it came from, for messages.
        batch_size: Leading dimension of the first input (1 when it has none).
        config: Zoo configuration, when the model came from the zoo.
    """

    mod: "tvm.IRModule"
    source: str
    batch_size: int = 1
    config: dict[str, Any] = field(default_factory=dict)


def parse_input_shapes(specs: list[str] | None) -> dict[str, list[int]]:
    """Parse ``NAME:1x3x224x224`` overrides into ``{"NAME": [1, 3, 224, 224]}``."""
    shapes: dict[str, list[int]] = {}
    for spec in specs or []:
        m = re.fullmatch(r"\s*([^:]+):(\d+(?:x\d+)*)\s*", spec)
        if not m:
            raise TvmCostError(f"bad --input-shape {spec!r}; expected NAME:DIMxDIM..., e.g. input:1x3x224x224")
        shapes[m.group(1)] = [int(d) for d in m.group(2).split("x")]
    return shapes


def import_model(
    model: Any,
    *,
    example_inputs: tuple["torch.Tensor", ...] | None = None,
    input_shapes: dict[str, list[int]] | None = None,
) -> ImportedModel:
    """Import `model` into Relax with static shapes.

    Args:
        model: A path to an ``.onnx`` file, a ``zoo:NAME[,key=value...]`` spec, a ``torch.nn.Module`` (with
            `example_inputs`), a ``torch.export.ExportedProgram`` or a Relax ``IRModule``.
        example_inputs: Inputs to trace a ``torch.nn.Module`` with.
        input_shapes: ONNX input shape overrides, by input name.

    Raises:
        TvmCostError: one line naming the model and the problem.
    """
    import tvm

    if isinstance(model, tvm.IRModule):
        result = ImportedModel(model, "IRModule")
    elif isinstance(model, (str, Path)) and str(model).startswith("zoo:"):
        result = _from_zoo(str(model))
    elif isinstance(model, (str, Path)):
        result = _from_onnx(Path(model), input_shapes or {})
    else:
        result = _from_torch(model, example_inputs)
    _check_static(result)
    return result


def _from_zoo(spec: str) -> ImportedModel:
    from tvm_cost import zoo

    try:
        zm = zoo.parse_spec(spec)
    except ValueError as err:
        raise TvmCostError(str(err), path=spec) from None
    imported = _from_torch(zm.module, zm.example_inputs, source=spec)
    imported.config = {"family": zm.name, **zm.config}
    return imported


def _from_torch(model: Any, example_inputs: tuple | None, source: str | None = None) -> ImportedModel:
    import torch
    from tvm.relax.frontend.torch import from_exported_program

    if isinstance(model, torch.export.ExportedProgram):
        program, source = model, source or "ExportedProgram"
    elif isinstance(model, torch.nn.Module):
        source = source or type(model).__name__
        if example_inputs is None:
            raise TvmCostError("a torch.nn.Module needs example_inputs to be exported", path=source)
        try:
            program = torch.export.export(model.eval(), tuple(example_inputs))
        except Exception as err:  # torch.export raises many types; all mean "cannot trace"
            raise TvmCostError(f"torch.export failed: {_first_line(err)}", path=source) from None
    else:
        raise TvmCostError(f"cannot import a {type(model).__name__}; expected an ONNX path, 'zoo:NAME', "
                           "a torch.nn.Module, an ExportedProgram or a Relax IRModule")
    try:
        mod = from_exported_program(program, keep_params_as_input=False)
    except AssertionError as err:
        m = re.search(r"Unsupported function types \[(.*)\]", str(err))
        if m:
            raise TvmCostError(f"unsupported op(s) for TVM's torch frontend: {m.group(1)}", path=source) from None
        raise TvmCostError(f"TVM's torch frontend failed: {_first_line(err)}", path=source) from None
    except Exception as err:
        raise TvmCostError(f"TVM's torch frontend failed: {_first_line(err)}", path=source) from None
    batch = _batch_of(mod)
    return ImportedModel(mod, source, batch)


def _from_onnx(path: Path, input_shapes: dict[str, list[int]]) -> ImportedModel:
    import onnx

    if not path.exists():
        raise TvmCostError("no such file", path=path)
    if path.is_dir():
        raise TvmCostError("is a folder, expected an .onnx file", path=path)
    try:
        proto = onnx.load(str(path))
    except Exception as err:
        raise TvmCostError(f"not a readable ONNX model (corrupt or truncated?): {_first_line(err)}",
                           path=path) from None
    graph = proto.graph
    if len(graph.node) == 0:
        raise TvmCostError("empty graph: the ONNX model has no nodes", path=path)
    _check_onnx_ops(proto, path)
    shape_dict = _onnx_input_shapes(graph, input_shapes, path)
    from tvm.relax.frontend.onnx import from_onnx

    try:
        mod = from_onnx(proto, shape_dict=shape_dict, keep_params_in_input=False)
    except Exception as err:
        raise TvmCostError(f"TVM's ONNX frontend failed: {_first_line(err)}", path=path) from None
    return ImportedModel(mod, str(path), _batch_of(mod))


def _check_onnx_ops(proto: Any, path: Path) -> None:
    from tvm.relax.frontend.onnx import onnx_frontend

    known = set(onnx_frontend._get_convert_map()) | {"If"}  # same set the frontend checks against
    missing = sorted({n.op_type for n in proto.graph.node if n.op_type not in known})
    if missing:
        raise TvmCostError(f"unsupported op(s) for TVM's ONNX frontend: {', '.join(missing)}", path=path)


def _onnx_input_shapes(graph: Any, overrides: dict[str, list[int]], path: Path) -> dict[str, list[int]]:
    initializers = {init.name for init in graph.initializer}
    inputs = [i for i in graph.input if i.name not in initializers]
    unknown = set(overrides) - {i.name for i in inputs}
    if unknown:
        names = ", ".join(i.name for i in inputs)
        raise TvmCostError(f"--input-shape names unknown input(s) {sorted(unknown)}; inputs are: {names}", path=path)
    shapes: dict[str, list[int]] = {}
    for inp in inputs:
        if inp.name in overrides:
            shapes[inp.name] = overrides[inp.name]
            continue
        dims = inp.type.tensor_type.shape.dim
        shape = []
        for axis, dim in enumerate(dims):
            if dim.HasField("dim_value") and dim.dim_value > 0:
                shape.append(dim.dim_value)
            else:
                label = dim.dim_param or "?"
                raise TvmCostError(
                    f"input {inp.name!r} has a dynamic dimension {label!r} at axis {axis}; "
                    f"give a static shape with --input-shape {inp.name}:" + "x".join(["N"] * len(dims)), path=path)
        shapes[inp.name] = shape
    return shapes


def _check_static(model: ImportedModel) -> None:
    import tvm
    from tvm import relax

    if not any(gv.name_hint == "main" for gv in model.mod.get_global_vars()):
        raise TvmCostError("the module has no 'main' function", path=model.source)
    main = model.mod["main"]
    for param in main.params:
        ty = param.ty
        if isinstance(ty, relax.TensorType):
            if ty.shape is None or any(not isinstance(d, tvm.tirx.IntImm) for d in ty.shape.values):
                raise TvmCostError(f"input {param.name!r} has a dynamic shape {ty.shape}; "
                                   "tvm-cost needs static shapes (use --input-shape)", path=model.source)


def _batch_of(mod: "tvm.IRModule") -> int:
    from tvm import relax

    params = mod["main"].params
    if params and isinstance(params[0].ty, relax.TensorType) and params[0].ty.shape is not None:
        dims = params[0].ty.shape.values
        if len(dims) >= 2 and hasattr(dims[0], "value"):
            return int(dims[0].value)
    return 1


def _first_line(err: BaseException) -> str:
    text = str(err).strip() or type(err).__name__
    return text.splitlines()[0][:300]
