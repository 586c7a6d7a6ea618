"""Tests of the NeuSight loaders: real files when present, tiny synthetic files for the error paths."""

from __future__ import annotations

import gzip
import json
import logging
from pathlib import Path

import pytest

from tvm_cost.data.external.neusight import (
    GpuSpec,
    gpu_key,
    load_collected_ops,
    load_gpu_specs,
    load_labels,
    load_op_table,
    load_test_ops,
    load_trace,
)
from tvm_cost.errors import TvmCostError

H100 = "NVIDIA H100 80GB HBM3"


# --- real data -----------------------------------------------------------------------------------------------


def test_real_gpu_specs(neusight_dir: Path) -> None:
    specs = load_gpu_specs(neusight_dir)
    assert len(specs) == 9
    assert specs[H100] == GpuSpec(H100, 80.0, 3430.0, 132, 128, 1980.0, 66908.0, 50.0)
    assert set(load_gpu_specs(neusight_dir, split="train")) < set(specs)


def test_real_collected_conv_one_gpu(neusight_dir: Path) -> None:
    recs = load_collected_ops(neusight_dir, "conv", gpu="Tesla_T4")  # folder form of the name works too
    assert len(recs) > 4000
    assert {r.gpu for r in recs} == {"Tesla T4"} and {r.op for r in recs} == {"conv"}
    assert list(recs[0].dims) == ["B", "Input_Channel", "Output_Channel", "Kernel_Size", "Input_Size", "Stride",
                                  "Padding"]  # fmt: skip
    assert all(r.latency_ms > 0 and r.kernel_name and r.versions == ("p2.1.0", "8902", "cu121") for r in recs)


def test_real_test_table_has_h100(neusight_dir: Path) -> None:
    recs = load_test_ops(neusight_dir, "linear", gpu=H100)
    assert len(recs) == 1040
    assert set(recs[0].dims) == {"B", "M", "N", "K"} and recs[0].kernels


def test_real_labels_and_trace(neusight_dir: Path) -> None:
    labels = load_labels(neusight_dir)
    assert len(labels) == 149
    assert {lab.mode for lab in labels} == {"inf", "train"}
    bert = load_labels(neusight_dir, gpu="NVIDIA_H100_80GB_HBM3", model="bert_large", mode="inf", variants=False)
    assert [(lab.seq_len, lab.batch, lab.num_layer) for lab in bert] == [(512, 8, 24), (512, 16, 24)]
    nodes = load_trace(bert[0])
    assert len(nodes) == 79
    by_name = {n.name: n for n in nodes}
    ln = by_name["bert_embeddings_layer_norm"]
    assert (ln.op, ln.input_shapes, ln.output_shape, ln.dtype) == (
        "call_module", ((8, 512, 1024),), (8, 512, 1024), "torch.float32"
    )
    assert all(n.latency_ms >= 0 for n in nodes)
    assert all(lab.trace_path is None for lab in labels if lab.variant in ("dp4", "tp4", "pp4_1"))


def test_unknown_op_and_table_list_choices(neusight_dir: Path) -> None:
    with pytest.raises(ValueError, match="choices: add, addu, bmm, conv"):
        load_collected_ops(neusight_dir, "matmul")
    with pytest.raises(ValueError, match="choices: bmm, elem"):
        load_test_ops(neusight_dir, "conv")


# --- synthetic files -----------------------------------------------------------------------------------------

_SPEC = {"Device": "Fake GPU", "Dev_Mem": 8, "Mem_Bw": 100, "Num_Sm": 4, "Core_Per_SM": 64, "Freq": 1000,
         "SingleFLOPs": 512, "L2Cache": 1}  # fmt: skip
_HEADER = ("OPName,Latency,Device,Torch Version,CUDNN Version,Kernel Name,Warps per SM,Blocks per SM,"
           "Grid x,Grid y,Grid z,Block x,Block y,Block z,CUDA Version,Kernels,B,H,large")  # fmt: skip


def _write_spec(root: Path, split: str, spec: dict[str, object]) -> None:
    folder = root / "data" / "dataset" / split / "device_configs"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "Fake_GPU.json").write_text(json.dumps(spec))


def test_synthetic_gpu_spec_errors(tmp_path: Path) -> None:
    with pytest.raises(TvmCostError, match="device_configs folder not found"):
        load_gpu_specs(tmp_path, split="train")
    _write_spec(tmp_path, "train", {**_SPEC, "Num_Sm": "many"})
    with pytest.raises(TvmCostError, match="key 'Num_Sm' is 'many'"):
        load_gpu_specs(tmp_path, split="train")
    _write_spec(tmp_path, "train", _SPEC)
    _write_spec(tmp_path, "test", {**_SPEC, "Mem_Bw": 200})
    assert load_gpu_specs(tmp_path, split="train")["Fake GPU"].bandwidth_gbs == 100.0
    with pytest.raises(TvmCostError, match="differs from another split"):
        load_gpu_specs(tmp_path)
    with pytest.raises(ValueError, match="choices: train, test"):
        load_gpu_specs(tmp_path, split="val")  # type: ignore[arg-type]


def test_synthetic_op_table(tmp_path: Path) -> None:
    path = tmp_path / "vec.csv.gz"
    rows = [
        "relu,0.5,Fake GPU,p2.1.0,8902,relu_kernel,1.5,0.5,4,1,1,128,1,1,cu121,;relu_kernel;other,8,64,True",
        "gelu,0.7,Other GPU,p2.1.0,8902,gelu_kernel,1.5,0.5,4,1,1,128,1,1,cu121,,8,64,False",
    ]
    with gzip.open(path, "wt") as f:
        f.write(_HEADER + "\n" + "\n".join(rows) + "\n")
    (rec,) = load_op_table(path, gpu="Fake_GPU")
    assert (rec.op, rec.latency_ms, rec.dims, rec.kernels, rec.grid, rec.large) == (
        "relu", 0.5, {"B": 8, "H": 64}, ("relu_kernel", "other"), (4, 1, 1), True
    )
    assert [r.op for r in load_op_table(path, op="gelu")] == ["gelu"]
    assert gpu_key("Tesla_P4") == gpu_key("Tesla P4")


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("relu,abc,Fake GPU,p,c,k,1,1,1,1,1,1,1,1,cu,,8,64,True", "line 2: column 'Latency' is 'abc'"),
        ("relu,0.5,Fake GPU,p,c,k,1,1,1,1,1,1,1,1,cu,,8,6.5,True", "line 2: column 'H' is '6.5', expected int"),
        ("relu,0,Fake GPU,p,c,k,1,1,1,1,1,1,1,1,cu,,8,64,True", "line 2: Latency 0.0 is not a positive"),
        ("relu,0.5,Fake GPU,p,c,k,1,1,1,1,1,1,1,1,cu,,8,64,maybe", "column 'large' is 'maybe'"),
        ("relu,0.5", "line 2: 2 fields, header has 19"),
    ],
)
def test_synthetic_op_table_malformed(tmp_path: Path, bad: str, message: str) -> None:
    path = tmp_path / "t.csv"
    path.write_text(_HEADER + "\n" + bad + "\n")
    with pytest.raises(TvmCostError, match=message) as err:
        load_op_table(path)
    assert err.value.path == str(path) and "\n" not in str(err.value)


def _write_label(root: Path, name: str, body: object, trace: str | None = None) -> Path:
    folder = root / "label" / "Fake_GPU"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(body))
    if trace is not None:
        with gzip.open(folder / f"{name}.csv.gz", "wt") as f:
            f.write(trace)
    return folder / f"{name}.json"


_TRACE_HEADER = "op,target,Name,input_shapes,output_shape,dtype,latency,fw_latency,bw_latency,acc_latency\n"
_LABEL = {"num_layer": 2, "e2e_latency": 5.0, "fw_latency": 5.0, "bwall_latency": 0}


def test_synthetic_labels(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    trace = _TRACE_HEADER + 'call_module,fc,fc,"[[2, 4]]","(2, 8)",torch.float32,0.1,0.1,0,0\n'
    _write_label(tmp_path, "tiny-inf-16-2", _LABEL, trace)
    _write_label(tmp_path, "tiny-train-16-2-dp4", {**_LABEL, "num_layer": None})
    _write_label(tmp_path, "notes", {})
    with caplog.at_level(logging.WARNING):
        labels = load_labels(tmp_path)
    assert "skipping" in caplog.text
    assert [(lab.gpu, lab.mode, lab.variant, lab.num_layer) for lab in labels] == [
        ("Fake GPU", "inf", None, 2), ("Fake GPU", "train", "dp4", 0)
    ]
    (node,) = load_trace(labels[0])
    assert (node.input_shapes, node.output_shape, node.latency_ms) == (((2, 4),), (2, 8), 0.1)
    with pytest.raises(TvmCostError, match="no per-node trace"):
        load_trace(labels[1])
    assert load_labels(tmp_path, variants=False) == labels[:1]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({**_LABEL, "e2e_latency": "slow"}, "key 'e2e_latency' is 'slow'"),
        ({"num_layer": 1}, "missing key"),
        ([1, 2], "must be a JSON object"),
    ],
)
def test_synthetic_bad_label(tmp_path: Path, body: object, message: str) -> None:
    path = _write_label(tmp_path, "tiny-inf-16-2", body)
    with pytest.raises(TvmCostError, match=message) as err:
        load_labels(tmp_path)
    assert err.value.path == str(path)


def test_synthetic_bad_trace_and_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(TvmCostError, match="label folder not found"):
        load_labels(tmp_path)
    trace = _TRACE_HEADER + 'call_module,fc,fc,"[[2, 4]]","(2, x)",torch.float32,0.1,0.1,0,0\n'
    path = _write_label(tmp_path, "tiny-inf-16-2", _LABEL, trace).with_suffix(".csv.gz")
    with pytest.raises(TvmCostError, match=r"line 2: output_shape '\(2, x\)' is not a shape"):
        load_trace(path)
    with pytest.raises(TvmCostError, match="trace file not found"):
        load_trace(tmp_path / "absent.csv.gz")
