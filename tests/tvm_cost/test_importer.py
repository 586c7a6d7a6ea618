"""Every bad input gives one `TvmCostError` line naming the model and the problem."""

from __future__ import annotations

import onnx
import pytest
import torch
from onnx import TensorProto, helper

from tvm_cost.cli import main
from tvm_cost.errors import TvmCostError
from tvm_cost.importer import import_model, parse_input_shapes


def _relu_onnx(path, dims=(1, 4), op="Relu", nodes=True):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(dims))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, list(dims))
    graph_nodes = [helper.make_node(op, ["x"], ["y"])] if nodes else []
    model = helper.make_model(helper.make_graph(graph_nodes, "g", [x], [y]),
                              opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(path))
    return path


def _one_line_error(model, **kwargs) -> str:
    with pytest.raises(TvmCostError) as info:
        import_model(model, **kwargs)
    message = str(info.value)
    assert "\n" not in message and "Traceback" not in message
    return message


def test_missing_file(tmp_path):
    path = tmp_path / "nope.onnx"
    assert _one_line_error(str(path)) == f"{path}: no such file"


def test_corrupt_file(tmp_path):
    path = tmp_path / "corrupt.onnx"
    path.write_bytes(b"\x08\x07this is not protobuf\xff\xff\xff")
    message = _one_line_error(str(path))
    assert message.startswith(str(path)) and "not a readable ONNX model" in message


def test_truncated_file(tmp_path):
    good = _relu_onnx(tmp_path / "good.onnx", dims=(1, 64))
    data = good.read_bytes()
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(data[: len(data) // 2])
    message = _one_line_error(str(cut))
    assert message.startswith(str(cut)) and "corrupt or truncated" in message


def test_unsupported_op_is_named(tmp_path):
    path = _relu_onnx(tmp_path / "custom.onnx", op="FancyCustomOp")
    message = _one_line_error(str(path))
    assert "unsupported op" in message and "FancyCustomOp" in message and str(path) in message


def test_dynamic_dimension_needs_an_override(tmp_path):
    path = _relu_onnx(tmp_path / "dyn.onnx", dims=("batch", 4))
    message = _one_line_error(str(path))
    assert "dynamic dimension 'batch'" in message and "--input-shape x:" in message
    imported = import_model(str(path), input_shapes={"x": [3, 4]})
    assert imported.batch_size == 3


def test_override_of_unknown_input(tmp_path):
    path = _relu_onnx(tmp_path / "ok.onnx")
    assert "unknown input(s) ['y']" in _one_line_error(str(path), input_shapes={"y": [1, 4]})


def test_empty_graph(tmp_path):
    path = _relu_onnx(tmp_path / "empty.onnx", nodes=False)
    assert "empty graph" in _one_line_error(str(path))


def test_torch_module_without_inputs_and_unknown_objects():
    assert "needs example_inputs" in _one_line_error(torch.nn.ReLU())
    assert "cannot import a int" in _one_line_error(42)


def test_bad_zoo_spec():
    message = _one_line_error("zoo:not_a_family")
    assert message.startswith("zoo:not_a_family") and "resnet18" in message


def test_input_shape_parsing():
    assert parse_input_shapes(["input:1x3x224x224", "ids:2x16"]) == {"input": [1, 3, 224, 224], "ids": [2, 16]}
    with pytest.raises(TvmCostError, match="bad --input-shape"):
        parse_input_shapes(["input=1x3"])


def test_cli_prints_one_line_and_exits_2(tmp_path, capsys):
    path = tmp_path / "missing.onnx"
    assert main(["graph", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"tvm-cost: error: {path}: no such file"
