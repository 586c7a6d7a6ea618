"""Export a zoo model the two ways TVM's Relax importers read it (pure torch; no tvm import here).

- `export_program` -> `tvm.relax.frontend.torch.from_exported_program(ep)`
- `export_onnx` -> `tvm.relax.frontend.onnx.from_onnx(onnx.load(path), shape_dict=model.input_shapes)`
"""

from __future__ import annotations

from pathlib import Path

import torch

from tvm_cost.zoo.registry import ZooModel

#: Opset 17 is the first with LayerNormalization as one op (older opsets spell it out in ReduceMean etc.).
ONNX_OPSET = 17


def export_program(model: ZooModel) -> torch.export.ExportedProgram:
    """`torch.export.export` of the model's module on its example inputs."""
    return torch.export.export(model.module, model.example_inputs)


def export_onnx(model: ZooModel, path: str | Path, *, opset: int = ONNX_OPSET) -> Path:
    """Writes the model as ONNX with the TorchScript exporter (`dynamo=False`; onnxscript is not installed).

    Inputs keep `model.input_names`; the single output is named "output". In eval mode the exporter folds each
    BatchNorm that follows a conv into that conv's weights.

    Returns:
        The path written.
    """
    path = Path(path)
    torch.onnx.export(
        model.module,
        model.example_inputs,
        str(path),
        input_names=list(model.input_names),
        output_names=["output"],
        opset_version=opset,
        do_constant_folding=True,
        dynamo=False,
    )
    return path
