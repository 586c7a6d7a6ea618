"""Tests for tvm_cost.zoo: building, seeding, specs, the sampler, and import into TVM Relax by both frontends."""

from __future__ import annotations

import random
from typing import Any

import onnx
import pytest
import torch
import tvm
from torch.utils.flop_counter import FlopCounterMode
from tvm import relax
from tvm.relax.frontend.onnx import from_onnx
from tvm.relax.frontend.torch import from_exported_program

from tvm_cost.zoo import (
    FAMILIES,
    ZooModel,
    build,
    export_onnx,
    export_program,
    knobs,
    parse_config,
    parse_spec,
    sample_configs,
    to_spec,
)
from tvm_cost.zoo.densenet import DenseNet
from tvm_cost.zoo.mobilenet import MobileNetV2
from tvm_cost.zoo.resnet import ResNet

pytestmark = pytest.mark.filterwarnings("ignore:.*LeafSpec.*:FutureWarning")  # from torch.export's pytree

# Smallest configs that still have every kind of layer (one block per stage where the depth is free).
TINY: dict[str, dict[str, Any]] = {
    "resnet18": {"width": 0.125, "resolution": 32, "num_classes": 10},
    "resnet34": {"width": 0.125, "resolution": 32, "num_classes": 10},
    "resnet50": {"width": 0.125, "resolution": 32, "num_classes": 10},
    "mobilenet_v2": {"width": 0.35, "depth": 0.3, "resolution": 32, "num_classes": 10},
    "vgg": {"width": 0.125, "resolution": 32, "fc_width": 16, "batch_norm": 1, "num_classes": 10},
    "densenet": {"width": 0.25, "depth": 13, "resolution": 32, "num_classes": 10},
    "bert": {"width": 32, "depth": 1, "heads": 2, "seq_len": 8, "vocab_size": 50},
    "gpt": {"width": 32, "depth": 1, "heads": 2, "seq_len": 8, "vocab_size": 50},
    "vit": {"width": 32, "depth": 1, "heads": 2, "patch": 8, "resolution": 16, "num_classes": 10},
    "mlp_mixer": {"width": 32, "depth": 1, "patch": 8, "resolution": 16, "num_classes": 10},
    "mlp": {"width": 16, "depth": 2, "in_features": 8},
}


def tiny(name: str, **extra: Any) -> ZooModel:
    return build(name, **{**TINY[name], "batch": 2, **extra})


def expected_output_shape(model: ZooModel) -> tuple[int, ...]:
    keys = {"bert": ("batch", "seq_len", "width"), "gpt": ("batch", "seq_len", "vocab_size")}
    return tuple(int(model.config[k]) for k in keys.get(model.name, ("batch", "num_classes")))


# --- building and running ---------------------------------------------------------------------------------------


def test_families() -> None:
    assert FAMILIES == (
        "resnet18",
        "resnet34",
        "resnet50",
        "mobilenet_v2",
        "vgg",
        "densenet",
        "bert",
        "gpt",
        "vit",
        "mlp_mixer",
        "mlp",
    )
    assert set(TINY) == set(FAMILIES)


@pytest.mark.parametrize("name", FAMILIES)
def test_build_and_forward(name: str) -> None:
    model = tiny(name)
    assert not model.module.training
    assert all(not p.requires_grad for p in model.module.parameters())
    assert set(model.config) == set(knobs(name))
    assert model.input_names == tuple(model.input_shapes)
    out = model.module(*model.example_inputs)
    assert tuple(out.shape) == expected_output_shape(model)
    assert torch.isfinite(out).all()
    if name in ("bert", "gpt"):
        (ids,) = model.example_inputs
        assert model.input_dtypes == {"input_ids": "int64"}
        assert 0 <= int(ids.min()) and int(ids.max()) < model.config["vocab_size"]
    else:
        assert set(model.input_dtypes.values()) == {"float32"}


def test_gpt_is_causal() -> None:
    model = tiny("gpt")
    (ids,) = model.example_inputs
    changed = ids.clone()
    changed[:, -1] = (changed[:, -1] + 1) % model.config["vocab_size"]
    a, b = model.module(ids), model.module(changed)
    assert torch.equal(a[:, :-1], b[:, :-1])  # earlier positions never see the last token
    assert not torch.equal(a[:, -1], b[:, -1])


def test_knobs_change_the_architecture() -> None:
    params = lambda m: sum(p.numel() for p in m.module.parameters())  # noqa: E731
    assert params(tiny("resnet18", width=0.25)) > params(tiny("resnet18"))
    assert params(tiny("bert", depth=2)) > params(tiny("bert"))
    assert params(tiny("densenet", depth=21)) > params(tiny("densenet"))
    assert params(tiny("vgg", depth=16)) > params(tiny("vgg"))
    assert tiny("vit", batch=3).example_inputs[0].shape == (3, 3, 16, 16)
    assert tiny("gpt", seq_len=16).example_inputs[0].shape == (2, 16)


# --- the standard architectures match torchvision (constructed on the meta device: no weights, no compute) --------


def _macs_and_params(module_fn: Any, resolution: int = 224) -> tuple[int, int]:
    with torch.device("meta"):
        module = module_fn().eval()
        with FlopCounterMode(display=False) as counter:
            module(torch.empty(1, 3, resolution, resolution))
    return counter.get_total_flops() // 2, sum(p.numel() for p in module.parameters())


def resnet_macs(depth: int, r: int = 224, classes: int = 1000) -> int:
    """Closed-form multiply-accumulates of conv + fc layers of torchvision's ResNet at width 1."""
    blocks = {18: (2, 2, 2, 2), 34: (3, 4, 6, 3), 50: (3, 4, 6, 3)}[depth]
    bottleneck = depth == 50
    macs = 64 * 3 * 49 * (r // 2) ** 2  # stem
    cin = 64
    for stage, (n, planes) in enumerate(zip(blocks, (64, 128, 256, 512))):
        s = r // 4 >> stage  # output side of the stage
        for i in range(n):
            s_in = 2 * s if (i == 0 and stage > 0) else s
            cout = planes * (4 if bottleneck else 1)
            if bottleneck:
                macs += cin * planes * s_in**2 + planes * planes * 9 * s**2 + planes * cout * s**2
            else:
                macs += cin * planes * 9 * s**2 + planes * planes * 9 * s**2
            if i == 0 and (cin != cout or stage > 0):
                macs += cin * cout * s**2  # 1x1 projection shortcut
            cin = cout
    return macs + cin * classes


@pytest.mark.parametrize(
    ("depth", "params", "gmacs"), [(18, 11_689_512, 1.81), (34, 21_797_672, 3.66), (50, 25_557_032, 4.09)]
)
def test_resnet_matches_torchvision(depth: int, params: int, gmacs: float) -> None:
    macs, n = _macs_and_params(lambda: ResNet(depth))
    assert n == params  # torchvision's resnet{depth} parameter count
    assert macs == resnet_macs(depth)
    assert round(macs / 1e9, 2) == gmacs  # torchvision's documented GFLOPS (multiply-adds)
    assert _macs_and_params(lambda: ResNet(depth), 128)[0] == resnet_macs(depth, 128)


def test_mobilenet_densenet_match_torchvision() -> None:
    macs, n = _macs_and_params(MobileNetV2)
    assert (n, round(macs / 1e9, 2)) == (3_504_872, 0.30)
    macs, n = _macs_and_params(DenseNet)
    assert (n, round(macs / 1e9, 2)) == (7_978_856, 2.83)


# --- seeding ------------------------------------------------------------------------------------------------------


def _same_weights(a: ZooModel, b: ZooModel) -> bool:
    sa, sb = a.module.state_dict(), b.module.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def test_seeded_and_no_global_rng_side_effects() -> None:
    state = torch.get_rng_state()
    a, b = tiny("vit", seed=3), tiny("vit", seed=3)
    assert torch.equal(torch.get_rng_state(), state)
    assert _same_weights(a, b)
    assert torch.equal(a.example_inputs[0], b.example_inputs[0])
    c = tiny("vit", seed=4)
    assert not _same_weights(a, c)
    assert not torch.equal(a.example_inputs[0], c.example_inputs[0])


# --- names, knobs and spec strings --------------------------------------------------------------------------------


def test_unknown_family_lists_choices() -> None:
    with pytest.raises(ValueError, match="unknown zoo family 'resnet19'.*resnet18.*mlp_mixer"):
        build("resnet19")


@pytest.mark.parametrize(
    ("name", "config", "match"),
    [
        ("resnet18", {"depth": 4}, "unknown knob.*'depth'"),
        ("bert", {"resolution": 224}, "unknown knob.*'resolution'"),
        ("bert", {"width": 0.5}, "'width'.*takes an int"),
        ("resnet18", {"width": "wide"}, "'width'.*takes a number"),
        ("resnet18", {"batch": True}, "'batch'.*takes a number"),
        ("resnet18", {"batch": 0}, "batch must be >= 1"),
        ("resnet18", {"width": -1.0}, "width must be > 0"),
        ("resnet18", {"resolution": 16}, "resolution must be >= 32"),
        ("bert", {"width": 100, "heads": 3}, "not divisible by heads"),
        ("vit", {"resolution": 100}, "not a multiple of patch"),
        ("vgg", {"depth": 12}, "vgg depth must be one of"),
        ("densenet", {"depth": 14}, "odd and >= 13"),
    ],
)
def test_bad_knobs(name: str, config: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        build(name, **config)


def test_parse_spec() -> None:
    model = parse_spec("zoo:resnet18,batch=4,width=0.5,resolution=64")
    assert model.name == "resnet18"
    assert (model.config["batch"], model.config["width"], model.config["resolution"]) == (4, 0.5, 64)
    assert model.example_inputs[0].shape == (4, 3, 64, 64)
    assert parse_config(" mlp , width = 32 ,depth=1") == {"name": "mlp", "width": 32, "depth": 1}
    assert parse_config("zoo:resnet50,width=1")["width"] == 1  # ints are fine for float knobs
    assert build(**parse_config("zoo:resnet50,width=1,resolution=32")).config["width"] == 1.0


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("onnx:model.onnx", "not a 'zoo:' spec"),
        ("zoo:", "no family name"),
        ("zoo:resnet18,batch", "'batch' is not knob=value"),
        ("zoo:resnet18,batch=", "not knob=value"),
        ("zoo:resnet18,batch=four", "value 'four' of knob 'batch' is not a number"),
        ("zoo:resnet18,batch=2,batch=4", "'batch' given twice"),
        ("zoo:resnet18,batch=2.5", "'batch'.*takes an int"),
        ("zoo:resnet18,colour=3", "unknown knob.*'colour'"),
        ("zoo:alexnet", "unknown zoo family 'alexnet'"),
    ],
)
def test_bad_specs(spec: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        parse_config(spec)


def test_spec_round_trip() -> None:
    model = tiny("bert", seed=7)
    assert model.spec.startswith("zoo:bert,")
    non_default = {k: v for k, v in model.config.items() if v != knobs("bert")[k]}
    assert parse_config(model.spec) == {"name": "bert", **non_default}
    assert to_spec("mlp", knobs("mlp")) == "zoo:mlp"


# --- the sampler --------------------------------------------------------------------------------------------------


def test_sampler_deterministic_and_prefix_stable() -> None:
    state = random.getstate()
    a = sample_configs(None, 40, seed=1)
    assert random.getstate() == state
    assert a == sample_configs(None, 40, seed=1)
    assert a[:10] == sample_configs(None, 10, seed=1)
    assert a != sample_configs(None, 40, seed=2)
    assert sample_configs("bert", 0, seed=0) == []


def _tokens(cfg: dict[str, Any]) -> int:
    if cfg["name"] in ("bert", "gpt"):
        return cfg["seq_len"]
    return (cfg["resolution"] // cfg["patch"]) ** 2


@pytest.mark.parametrize("family", [None, *FAMILIES])
def test_sampler_ranges(family: str | None) -> None:
    configs = sample_configs(family, 60 if family is None else 15, seed=0)
    names = {c["name"] for c in configs}
    assert names == {family} if family else len(names) >= 8
    for cfg in configs:
        knob_names = set(knobs(cfg["name"]))
        assert set(cfg) - {"name"} <= knob_names
        assert 1 <= cfg["batch"] <= 8
        if "resolution" in cfg:
            assert 32 <= cfg["resolution"] <= 224
        if "seq_len" in cfg:
            assert 16 <= cfg["seq_len"] <= 256
        if isinstance(cfg.get("width"), int):
            assert 64 <= cfg["width"] <= 512
        if cfg["name"] in ("bert", "gpt", "vit", "mlp_mixer"):
            assert cfg["batch"] * _tokens(cfg) <= 1024 or cfg["batch"] == 1
        elif "resolution" in cfg:
            assert cfg["batch"] * cfg["resolution"] ** 2 <= 2 * 224 * 224 or cfg["batch"] == 1
    assert len({tuple(sorted(c.items())) for c in configs}) == len(configs)  # no repeats here


def test_sampler_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="unknown zoo family"):
        sample_configs("lenet", 3, seed=0)
    with pytest.raises(ValueError, match="n must be >= 0"):
        sample_configs(None, -1, seed=0)


# --- import into TVM Relax ----------------------------------------------------------------------------------------

# ResNet-34 is ResNet-18's code with more blocks: its imports only cost time.
IMPORT_FAMILIES = [pytest.param(f, marks=pytest.mark.slow) if f == "resnet34" else f for f in FAMILIES]
_LOWER = tvm.ir.transform.Sequential([relax.transform.DecomposeOpsForInference(), relax.transform.LegalizeOps()])


def _relax_ops(mod: tvm.IRModule) -> set[str]:
    """Names of the Relax operators still called in `main`, other than `call_tir`."""
    ops: set[str] = set()

    def visit(expr: relax.Expr) -> None:
        if isinstance(expr, relax.Call) and isinstance(expr.op, tvm.ir.Op) and expr.op.name != "relax.call_tir":
            ops.add(expr.op.name)

    relax.analysis.post_order_visit(mod["main"], visit)
    return ops


def _check_relax(mod: tvm.IRModule, model: ZooModel) -> None:
    params = mod["main"].params
    assert [p.name for p in params] == list(model.input_names)
    # 0.27 names a Relax Var's struct info `ty`
    assert [[int(d) for d in p.ty.shape] for p in params] == list(model.input_shapes.values())
    assert [str(p.ty.dtype) for p in params] == list(model.input_dtypes.values())
    lowered = _LOWER(mod)
    # The ONNX importer's Gather queries the shape of its (static) data to wrap negative indices; after
    # legalization nothing reads that `shape_of` any more, and dead-code elimination drops it.
    assert _relax_ops(lowered) <= {"relax.shape_of"}
    assert _relax_ops(relax.transform.DeadCodeElimination()(lowered)) == set()


@pytest.mark.parametrize("name", IMPORT_FAMILIES)
def test_relax_import_via_torch_export(name: str) -> None:
    model = tiny(name)
    _check_relax(from_exported_program(export_program(model)), model)


@pytest.mark.parametrize("name", IMPORT_FAMILIES)
def test_relax_import_via_onnx(name: str, tmp_path: Any) -> None:
    model = tiny(name)
    graph = onnx.load(str(export_onnx(model, tmp_path / f"{name}.onnx")))
    assert [i.name for i in graph.graph.input] == list(model.input_names)
    _check_relax(from_onnx(graph, shape_dict=model.input_shapes), model)


def test_onnx_export_folds_batchnorm_after_conv(tmp_path: Any) -> None:
    # Eval-mode export folds conv -> BN into the conv; DenseNet's BN comes *before* its convs and stays.
    def op_types(name: str) -> set[str]:
        return {n.op_type for n in onnx.load(str(export_onnx(tiny(name), tmp_path / f"{name}.onnx"))).graph.node}

    assert "BatchNormalization" not in op_types("resnet18")
    assert "BatchNormalization" in op_types("densenet")


# --- slow: full-size defaults, sampled configs, and numerics through TVM ------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", FAMILIES)
def test_defaults_build_and_forward(name: str) -> None:
    model = build(name)
    assert tuple(model.module(*model.example_inputs).shape) == expected_output_shape(model)


@pytest.mark.slow
def test_sampled_configs_build_and_forward() -> None:
    for cfg in sample_configs(None, 12, seed=0):
        model = build(**cfg)
        assert tuple(model.module(*model.example_inputs).shape) == expected_output_shape(model)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "bert", "gpt", "vit", "mlp_mixer"])
def test_tvm_matches_torch(name: str, tmp_path: Any) -> None:
    model = tiny(name)
    expected = model.module(*model.example_inputs).numpy()
    args = [tvm.runtime.tensor(t.numpy()) for t in model.example_inputs]
    onnx_graph = onnx.load(str(export_onnx(model, tmp_path / "m.onnx")))
    for mod in (from_exported_program(export_program(model)), from_onnx(onnx_graph, shape_dict=model.input_shapes)):
        mod = relax.get_pipeline("zero")(mod)
        vm = relax.VirtualMachine(tvm.compile(mod, target=tvm.target.Target({"kind": "llvm"})), tvm.cpu())
        out = vm["main"](*args)
        out = out if hasattr(out, "numpy") else out[0]  # torch.export keeps torch's 1-tuple of outputs
        assert float(abs(out.numpy() - expected).max()) < 1e-3
