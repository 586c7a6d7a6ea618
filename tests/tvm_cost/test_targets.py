"""Target presets, target JSON and the hardware table."""

from __future__ import annotations

import pytest

from tvm_cost.errors import TvmCostError
from tvm_cost.targets import PRESETS, host_cpu_spec, resolve_target


def test_every_preset_resolves_to_a_tvm_target():
    for name in PRESETS:
        resolved = resolve_target(name)
        assert resolved.hardware.peak_gflops > 0 and resolved.hardware.mem_bandwidth_gbs > 0
        assert resolved.tvm_target().kind.name == resolved.target_json["kind"]


@pytest.mark.parametrize("gpu", ["a100", "h100", "h200", "rtx3090", "t4", "v100"])
def test_common_gpus_are_in_the_table(gpu):
    assert resolve_target(f"cuda-{gpu}").hardware.kind == "gpu"


def test_json_targets():
    cpu = resolve_target('{"kind": "llvm", "num-cores": 1}')
    assert cpu.name == "llvm-1core" and cpu.hardware.cores == 1
    assert cpu.hardware.peak_gflops == pytest.approx(host_cpu_spec().peak_gflops / host_cpu_spec().cores)
    gpu = resolve_target({"kind": "cuda", "arch": "sm_90a"})
    assert gpu.hardware.name.startswith("NVIDIA H100") and gpu.name == "cuda-sm90a"


def test_bad_targets_list_the_choices():
    with pytest.raises(TvmCostError, match="cuda-sm90"):
        resolve_target("tpu")
    with pytest.raises(TvmCostError, match="not valid JSON"):
        resolve_target("{kind: llvm")
    with pytest.raises(TvmCostError, match="no hardware entry"):
        resolve_target({"kind": "cuda", "arch": "sm_20"})
    with pytest.raises(TvmCostError, match="unsupported target kind"):
        resolve_target({"kind": "vulkan"})
