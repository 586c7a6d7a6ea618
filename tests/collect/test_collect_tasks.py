"""Task extraction: one task per distinct kernel across models, with each model's weight; target resolution."""

from __future__ import annotations

import json

import pytest
from collect_helpers import CUDA, LLVM, conv_dense_module, dense_module

from tvm_cost.collect import import_models, resolve_target
from tvm_cost.collect.tasks import CollectTask, extract_tasks, interleave_families, write_tasks_json
from tvm_cost.errors import TvmCostError


def test_shared_kernel_is_one_task(llvm_target):
    tasks = extract_tasks([("a", dense_module(32)), ("b", conv_dense_module()), ("c", dense_module(16))],
                          llvm_target)
    by_name = {t.name: t for t in tasks}
    shared = [t for t in tasks if set(t.weights) == {"a", "b"}]
    assert len(shared) == 1 and shared[0].weights == {"a": 1, "b": 1}
    assert any("conv2d" in name for name in by_name)
    assert len({t.shash for t in tasks}) == len(tasks)
    assert all(t.workload[0] == t.shash and t.flop >= 0 for t in tasks)
    assert shared[0].describe()["models"] == {"a": 1, "b": 1}


def test_tasks_json_merges_model_weights(tmp_path, llvm_target):
    first = extract_tasks([("a", dense_module(32))], llvm_target)
    write_tasks_json(tmp_path, first)
    write_tasks_json(tmp_path, extract_tasks([("b", conv_dense_module())], llvm_target))
    tasks = json.loads((tmp_path / "tasks.json").read_text())
    assert tasks[first[0].shash]["models"] == {"a": 1, "b": 1}
    assert len(tasks) >= 3 and all("task_name" in t and "flop" in t for t in tasks.values())


def test_resolve_target_forms():
    name, tjson, target = resolve_target(LLVM)
    assert name == "llvm-2core" and tjson["num-cores"] == 2 and target.kind.name == "llvm"
    name, _, target = resolve_target(CUDA)
    assert name == "cuda-sm90" and target.kind.name == "cuda"
    name, _, target = resolve_target("nvidia/nvidia-h100")
    assert name == "nvidia-h100" and str(target.attrs["arch"]).startswith("sm_90")
    with pytest.raises(TvmCostError):
        resolve_target("no-such-target")


def test_import_models_accepts_ir_modules():
    models = import_models([("d", dense_module(32))])
    assert models[0][0] == "d" and "main" in [gv.name_hint for gv in models[0][1].get_global_vars()]


def test_interleave_families_round_robin():
    def task(shash, model):
        return CollectTask(shash, shash, None, [shash, ""], weights={model: 1})

    tasks = [task("r1", "zoo:resnet18,batch=1"), task("r2", "zoo:resnet18,batch=2"), task("r3", "zoo:resnet18"),
             task("b1", "zoo:bert,layers=2"), task("o1", "model.onnx"), task("b2", "zoo:bert")]
    assert [t.shash for t in interleave_families(tasks)] == ["r1", "b1", "o1", "r2", "b2", "r3"]
    assert interleave_families([]) == []
