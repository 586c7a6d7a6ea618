"""Target presets and a small hardware table: what a model needs to know about the machine a kernel runs on.

A target is resolved once from a preset name (``llvm``, ``cuda-sm90`` ...) or a TVM target JSON; its
`HardwareSpec` gives the global target descriptors of the feature schema (cores or SMs, peak FLOP/s, memory
bandwidth, cache sizes). Figures are vendor datasheet numbers (FP32, boost clock); the host CPU's come from
`lscpu`, with the per-core FLOPs/cycle read from its vector flags.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass
from typing import Any

from tvm_cost.errors import TvmCostError


@dataclass(frozen=True)
class HardwareSpec:
    """Descriptors of one device, used as global features.

    Attributes:
        name: Human-readable device name.
        kind: "cpu" or "gpu".
        cores: CPU cores or GPU streaming multiprocessors.
        peak_gflops: Peak FP32 GFLOP/s.
        mem_bandwidth_gbs: DRAM bandwidth in GB/s.
        l1_kb: L1 data cache (CPU, per core) or shared memory + L1 (GPU, per SM) in KiB.
        l2_kb: L2 cache in KiB (per core on CPUs, total on GPUs).
        l3_kb: L3 cache in KiB (0 on GPUs).
        clock_mhz: Clock in MHz (boost on GPUs).
    """

    name: str
    kind: str
    cores: int
    peak_gflops: float
    mem_bandwidth_gbs: float
    l1_kb: float
    l2_kb: float
    l3_kb: float
    clock_mhz: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# name -> (spec, TVM target JSON). GPU numbers: NVIDIA datasheets (SXM parts where both exist).
_GPUS: dict[str, tuple[HardwareSpec, dict[str, Any]]] = {}


def _gpu(key: str, name: str, sms: int, gflops: float, bw: float, l1_kb: float, l2_mb: float, mhz: float,
         arch: str) -> None:
    spec = HardwareSpec(name, "gpu", sms, gflops, bw, l1_kb, l2_mb * 1024, 0.0, mhz)
    target = {"kind": "cuda", "arch": arch, "max_num_threads": 1024, "max_threads_per_block": 1024,
              "thread_warp_size": 32, "max_shared_memory_per_block": 49152, "registers_per_block": 65536,
              "l2_cache_size_bytes": int(l2_mb * 1024 * 1024)}
    _GPUS[key] = (spec, target)


_gpu("a100", "NVIDIA A100 SXM4", 108, 19500, 2039, 192, 40, 1410, "sm_80")
_gpu("h100", "NVIDIA H100 SXM5", 132, 66900, 3350, 256, 50, 1980, "sm_90")
_gpu("h200", "NVIDIA H200 SXM", 132, 66900, 4800, 256, 50, 1980, "sm_90")
_gpu("rtx3090", "NVIDIA GeForce RTX 3090", 82, 35580, 936, 128, 6, 1695, "sm_86")
_gpu("t4", "NVIDIA T4", 40, 8141, 320, 64, 4, 1590, "sm_75")
_gpu("v100", "NVIDIA V100 SXM2", 80, 15700, 900, 128, 6, 1530, "sm_70")
# The GPUs of the HELP latency data set, so that their labels carry descriptors too.
_gpu("1080ti", "NVIDIA GeForce GTX 1080 Ti", 28, 11340, 484, 48, 2.75, 1582, "sm_61")
_gpu("2080ti", "NVIDIA GeForce RTX 2080 Ti", 68, 13450, 616, 64, 5.5, 1545, "sm_75")
_gpu("titan_rtx", "NVIDIA TITAN RTX", 72, 16310, 672, 64, 6, 1770, "sm_75")
_gpu("titanx", "NVIDIA TITAN X (Pascal)", 28, 10970, 480, 48, 3, 1531, "sm_61")
_gpu("titanxp", "NVIDIA TITAN Xp", 30, 12150, 548, 48, 3, 1582, "sm_61")

# Preset name -> GPU key; "cuda-sm80"/"cuda-sm90" name the architecture TVM generates code for.
_CUDA_PRESETS = {"cuda-sm80": "a100", "cuda-sm90": "h100", **{f"cuda-{k}": k for k in _GPUS}}
PRESETS: tuple[str, ...] = ("llvm", *sorted(_CUDA_PRESETS))


def _lscpu() -> dict[str, str]:
    if shutil.which("lscpu") is None:
        return {}
    out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in out.splitlines()) if v}


def _size_kb(text: str) -> float:
    """'96 KiB (2 instances)' -> 96.0; '2 MiB' -> 2048.0."""
    m = re.match(r"([\d.]+)\s*([KMG])i?B", text or "")
    if not m:
        return 0.0
    return float(m.group(1)) * {"K": 1, "M": 1024, "G": 1024 * 1024}[m.group(2)]


@functools.lru_cache(maxsize=1)
def host_cpu_spec() -> HardwareSpec:
    """Descriptors of this machine's CPU, read from lscpu (cached).

    Peak FLOP/s = cores x clock x FP32 FLOPs/cycle (64 with AVX-512, 32 with AVX2+FMA, 8 otherwise). DRAM bandwidth
    is not observable from lscpu; 12 GB/s per core is a conservative server figure, stated here and in the docs.
    """
    info = _lscpu()
    cores = int(info.get("CPU(s)", os.cpu_count() or 1))
    # Rounded: the reported clock drifts by a few MHz between reads, and features must not.
    mhz = round(float(info.get("CPU max MHz") or info.get("CPU MHz") or 0.0) or _cpuinfo_mhz(), -2)
    flags = set(info.get("Flags", "").split())
    per_cycle = 64 if "avx512f" in flags else 32 if {"avx2", "fma"} <= flags else 8
    instances = re.search(r"\((\d+) instances?\)", info.get("L1d cache", ""))
    n_l1 = int(instances.group(1)) if instances else 1
    l2_inst = re.search(r"\((\d+) instances?\)", info.get("L2 cache", ""))
    n_l2 = int(l2_inst.group(1)) if l2_inst else 1
    return HardwareSpec(
        name=info.get("Model name", "unknown CPU"),
        kind="cpu",
        cores=cores,
        peak_gflops=cores * mhz * per_cycle / 1000.0,
        mem_bandwidth_gbs=12.0 * cores,
        l1_kb=_size_kb(info.get("L1d cache", "")) / n_l1,
        l2_kb=_size_kb(info.get("L2 cache", "")) / n_l2,
        l3_kb=_size_kb(info.get("L3 cache", "")),
        clock_mhz=mhz,
    )


def _cpuinfo_mhz() -> float:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            m = re.search(r"cpu MHz\s*:\s*([\d.]+)", f.read())
        return float(m.group(1)) if m else 2000.0
    except OSError:
        return 2000.0


@dataclass(frozen=True)
class ResolvedTarget:
    """A TVM target with its hardware descriptors and a short name for folders and checkpoints."""

    name: str
    target_json: dict[str, Any]
    hardware: HardwareSpec

    def tvm_target(self) -> Any:
        import tvm  # lazy: importing tvm costs seconds

        return tvm.target.Target(self.target_json)


def resolve_target(target: str | dict[str, Any] | ResolvedTarget) -> ResolvedTarget:
    """Resolve a preset name, a TVM target JSON (string or dict) or a `ResolvedTarget`.

    Raises:
        TvmCostError: unknown preset or unreadable JSON; the message lists the presets.
    """
    if isinstance(target, ResolvedTarget):
        return target
    if isinstance(target, str):
        text = target.strip()
        if text == "llvm":
            cpu = host_cpu_spec()
            return ResolvedTarget(f"llvm-{cpu.cores}core", {"kind": "llvm", "num-cores": cpu.cores}, cpu)
        if text in _CUDA_PRESETS:
            spec, tjson = _GPUS[_CUDA_PRESETS[text]]
            return ResolvedTarget(text, dict(tjson), spec)
        if not text.startswith("{"):
            raise TvmCostError(f"unknown target {text!r}; use a TVM target JSON or one of: {', '.join(PRESETS)}")
        try:
            target = json.loads(text)
        except json.JSONDecodeError as err:
            raise TvmCostError(f"target is not valid JSON ({err.msg} at column {err.colno}): {text}") from None
    if not isinstance(target, dict) or "kind" not in target:
        raise TvmCostError(f"a target JSON needs a 'kind' key, got {target!r}")
    return _from_json(target)


def _from_json(tjson: dict[str, Any]) -> ResolvedTarget:
    kind = tjson["kind"]
    if kind == "llvm":
        cpu = host_cpu_spec()
        cores = int(tjson.get("num-cores", cpu.cores))
        spec = HardwareSpec(**{**cpu.as_dict(), "cores": cores,
                               "peak_gflops": cpu.peak_gflops * cores / cpu.cores,
                               "mem_bandwidth_gbs": cpu.mem_bandwidth_gbs * cores / cpu.cores})
        return ResolvedTarget(f"llvm-{cores}core", {"num-cores": cores, **tjson}, spec)
    if kind == "cuda":
        arch = str(tjson.get("arch", ""))
        matches = [k for k, (_, t) in _GPUS.items() if t["arch"] == arch.rstrip("a")]
        if not matches:
            known = sorted({t["arch"] for _, t in _GPUS.values()})
            raise TvmCostError(f"no hardware entry for CUDA arch {arch!r}; known: {', '.join(known)}")
        key = "h100" if "h100" in matches else matches[0]
        spec, base = _GPUS[key]
        return ResolvedTarget(f"cuda-{arch.replace('_', '')}", {**base, **tjson}, spec)
    raise TvmCostError(f"unsupported target kind {kind!r}; tvm-cost supports 'llvm' and 'cuda'")
