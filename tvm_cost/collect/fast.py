"""Fast measurement: a persistent build pool that skips the tensor-intrinsics import, and cheap evaluators.

MetaSchedule's `LocalBuilder` starts a fresh process pool for every batch and its `default_build` imports
`tvm.s_tir.tensor_intrin` (21-66 s here) inside each worker's build timeout; builds then time out in cascades.
`FastBuilder` keeps its workers across batches, builds with the same passes minus that import (tensorization
happened when the candidate was scheduled, in the collector; building it looks no intrinsic up), and recycles
each worker after `max_uses` builds to bound the memory leak that made MetaSchedule restart its pool. The local
runner's worker is recycled the same way (it keeps every module it timed loaded). Workers die with the collector
(Linux `PR_SET_PDEATHSIG`), so a killed collection leaves no `popen_worker` behind.
"""

from __future__ import annotations

import ctypes
import importlib
import importlib.util
import logging
import os
import shutil
import signal
import sys
import tempfile
from typing import Any

import tvm
from tvm.ir.utils import derived_object
from tvm.s_tir import meta_schedule as ms
from tvm.s_tir.meta_schedule.builder import BuilderInput, BuilderResult, PyBuilder
from tvm.s_tir.meta_schedule.runner import EvaluatorConfig
from tvm.support.popen_pool import PopenPoolExecutor

log = logging.getLogger(__name__)

#: TVM_NOTES: ranks candidates like a long evaluator (Spearman 0.977) at 86 instead of 210 ms per candidate.
FAST_EVALUATOR = EvaluatorConfig(number=1, repeat=3, min_repeat_ms=10, enable_cpu_cache_flush=False)
#: A slow, careful evaluator used as the reference when checking rankings and noise.
LONG_EVALUATOR = EvaluatorConfig(number=5, repeat=10, min_repeat_ms=50, enable_cpu_cache_flush=False)


#: Tensor-intrinsic modules that each target kind's default MetaSchedule rules can use. The whole
#: `tvm.s_tir.tensor_intrin` package takes 21-66 s to import here: CUDA's 40 s (needed by the tensor-core rules
#: of CUDA targets), ROCm's 8, Hexagon's 3, the CPU ones 5.
INTRINSICS_BY_KIND: dict[str, tuple[str, ...]] = {"llvm": ("x86", "arm_cpu", "riscv_cpu"), "cuda": ("cuda",)}


def preload_tensor_intrinsics(target: tvm.target.Target) -> bool:
    """Import only the tensor intrinsics `target`'s default rules need, standing in for the whole package.

    `TuneContext` imports `tvm.s_tir.tensor_intrin` on construction; once this has run, that import finds the
    package and costs nothing. The other submodules stay importable by name (``tvm.s_tir.tensor_intrin.cuda``).
    A process-wide change, meant for collector processes; calling it again for another target adds that target's
    intrinsics. Returns False (and does nothing) when the whole package is already imported or the target kind
    is not listed.
    """
    name = "tvm.s_tir.tensor_intrin"
    subs = INTRINSICS_BY_KIND.get(target.kind.name)
    package = sys.modules.get(name)
    if subs is None or (package is not None and not getattr(package, "_tvm_cost_partial", False)):
        return False
    if package is None:
        spec = importlib.util.find_spec(name)
        if spec is None:
            return False
        package = importlib.util.module_from_spec(spec)  # the package, without running its __init__
        package._tvm_cost_partial = True  # type: ignore[attr-defined]  # later targets add their own
        sys.modules[name] = package
    for sub in subs:
        importlib.import_module(f"{name}.{sub}")
    log.info("imported tensor intrinsics %s only", subs)
    return True


def cuda_compile_env() -> dict[str, str]:
    """Environment a CUDA build needs: nvcc instead of NVRTC where `cuda-bindings` is missing."""
    if "TVM_CUDA_COMPILE_MODE" in os.environ:
        return {}
    try:
        import cuda.bindings  # noqa: F401  # pylint: disable=import-outside-toplevel
    except ImportError:
        return {"TVM_CUDA_COMPILE_MODE": "nvcc"}
    return {}


def worker_init(env: dict[str, str] | None = None) -> None:
    """Initializer of pool workers: set `env` and die with the parent process (Linux)."""
    os.environ.update(env or {})
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass


def build_module(mod: tvm.IRModule, target: tvm.target.Target) -> Any:
    """MetaSchedule's `default_build` without the tensor-intrinsics import."""
    from tvm.driver import build as tvm_build  # pylint: disable=import-outside-toplevel
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock  # pylint: disable=import-outside-toplevel

    mod = RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod)
    rt_mod = tvm_build(mod, target=target)
    if target.kind.name == "cuda":
        compile_cuda_imports(rt_mod, target)
    return rt_mod


def _has_binary(imp: Any) -> bool:
    """Whether a CUDA import already holds device code (TVM compiles it itself where a CUDA runtime is linked)."""
    for fmt in ("cubin", "ptx", "fatbin"):
        try:
            if imp.inspect_source(fmt):
                return True
        except UnicodeDecodeError:  # a cubin/fatbin: bytes that are no text
            return True
    return False


def compile_cuda_imports(rt_mod: Any, target: tvm.target.Target) -> int:
    """Compile the CUDA source of `rt_mod`'s CUDA imports that carry no binary yet; returns how many.

    Without a GPU (no CUDA runtime linked) TVM's build only embeds CUDA source, to be compiled when the module is
    loaded; compiling it here with nvcc (or NVRTC, per ``TVM_CUDA_COMPILE_MODE``) makes kernels that the CUDA
    compiler rejects (too many registers, too much shared memory ...) fail at build time, as they would on a GPU.
    """
    from tvm.support import nvcc  # pylint: disable=import-outside-toplevel

    compiled = 0
    for imp in rt_mod.imports:
        if imp.kind != "cuda" or _has_binary(imp):
            continue
        with target:
            nvcc.compile_cuda(imp.inspect_source(), target_format="cubin",
                              compiler=os.environ.get("TVM_CUDA_COMPILE_MODE", "nvrtc").lower())
        compiled += 1
    return compiled


def build_and_export(mod: tvm.IRModule, target: tvm.target.Target) -> str:
    """Build `mod` and export it as a tar in a fresh temporary folder; returns the artifact path."""
    from tvm.support.tar import tar  # pylint: disable=import-outside-toplevel

    rt_mod = build_module(mod, target)
    path = os.path.join(tempfile.mkdtemp(prefix="tvm_cost_build_"), "tvm_tmp_mod." + tar.output_format)
    rt_mod.export_library(path, fcompile=tar)
    return path


def _first_line(err: BaseException | str) -> str:
    text = str(err).strip().splitlines()
    return text[-1] if text else type(err).__name__


@derived_object
class FastBuilder(PyBuilder):
    """A MetaSchedule builder with a persistent worker pool (usable in `ms.tune_tasks` too).

    Args:
        max_workers: Build processes; defaults to the CPU count.
        timeout_sec: Per-build timeout; it starts after the worker is up, so it can stay modest.
        max_uses: Builds per worker before it is replaced.
        env: Extra environment for the workers (e.g. ``TVM_CUDA_COMPILE_MODE``).
    """

    def __init__(
        self,
        *,
        max_workers: int | None = None,
        timeout_sec: float = 120.0,
        max_uses: int = 256,
        env: dict[str, str] | None = None,
    ) -> None:
        super().__init__()
        self.max_workers = max_workers or os.cpu_count() or 1
        self.timeout_sec = timeout_sec
        self.pool = PopenPoolExecutor(
            max_workers=self.max_workers,
            timeout=timeout_sec,
            initializer=worker_init,
            initargs=(dict(env or {}),),
            maximum_process_uses=max_uses,
        )

    def build(self, build_inputs: list[BuilderInput]) -> list[BuilderResult]:
        futures = [self.pool.submit(build_and_export, inp.mod, inp.target) for inp in build_inputs]
        results = []
        for fut in futures:
            try:
                results.append(BuilderResult(fut.result(), None))
            except TimeoutError:
                results.append(BuilderResult(None, f"FastBuilder: Timeout, killed after {self.timeout_sec} s"))
            except Exception as err:  # pylint: disable=broad-except  # any build error is data
                results.append(BuilderResult(None, f"FastBuilder: {type(err).__name__}\n{err}"))
        return results

    def close(self) -> None:
        """Stop the worker processes."""
        self.pool.shutdown(wait=True)


def make_builder(
    kind: str = "fast",
    *,
    max_workers: int | None = None,
    timeout_sec: float = 120.0,
    target: tvm.target.Target | None = None,
) -> Any:
    """A builder by kind: "fast" (`FastBuilder`) or "default" (MetaSchedule's `LocalBuilder`).

    Raises:
        ValueError: unknown kind.
    """
    env = cuda_compile_env() if target is not None and target.kind.name == "cuda" else {}
    if kind == "fast":
        return FastBuilder(max_workers=max_workers, timeout_sec=timeout_sec, env=env)
    if kind == "default":
        os.environ.update(env)  # LocalBuilder has no way to pass it to its workers
        return ms.builder.LocalBuilder(max_workers=max_workers, timeout_sec=timeout_sec)
    raise ValueError(f"unknown builder kind {kind!r}; choose one of 'fast', 'default'")


def make_runner(
    *,
    evaluator: EvaluatorConfig | None = FAST_EVALUATOR,
    timeout_sec: float = 30.0,
    rpc_tracker: str | None = None,
    rpc_key: str | None = None,
    rpc_workers: int = 1,
    session_timeout_sec: float = 60.0,
    max_uses: int = 256,
) -> Any:
    """A `LocalRunner`, or an `RPCRunner` when `rpc_tracker` ("HOST:PORT") and `rpc_key` are given.

    `evaluator=None` gives MetaSchedule's default `EvaluatorConfig`. The local runner's worker is replaced every
    `max_uses` candidates: it never unloads the modules it times (2.5 GB after 1,100 candidates here).
    """
    if rpc_tracker is None:
        runner = ms.runner.LocalRunner(timeout_sec=timeout_sec, evaluator_config=evaluator, initializer=worker_init)
        runner.pool.shutdown()
        runner.pool = PopenPoolExecutor(max_workers=1, timeout=timeout_sec, initializer=worker_init,
                                        maximum_process_uses=max_uses)
        return runner
    if not rpc_key:
        raise ValueError("rpc_tracker needs an rpc_key")
    host, _, port = rpc_tracker.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"rpc_tracker must be HOST:PORT, got {rpc_tracker!r}")
    config = ms.runner.RPCConfig(
        tracker_host=host,
        tracker_port=int(port),
        tracker_key=rpc_key,
        session_priority=1,
        session_timeout_sec=int(session_timeout_sec),
    )
    return ms.runner.RPCRunner(
        rpc_config=config, evaluator_config=evaluator, max_workers=rpc_workers, initializer=worker_init
    )


def device_type(target: tvm.target.Target) -> str:
    """The runner's device name for a target ("cpu" for llvm and c, else the kind: "cuda" ...)."""
    kind = target.kind.name
    return "cpu" if kind in ("llvm", "c") else kind


def remove_artifact(path: str | None) -> None:
    """Delete a built artifact and its temporary folder (ignores missing ones)."""
    if path:
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)
