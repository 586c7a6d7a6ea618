"""FastBuilder: builds without the tensor-intrinsics import, reports errors as data, workers die with the parent."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest
from collect_helpers import CUDA, kill_tree

from tvm_cost.collect import fast


def _add_module():
    import tvm
    from tvm import te

    a = te.placeholder((64,), "float32", name="a")
    b = te.compute((64,), lambda i: a[i] + 1.0, name="add")
    return tvm.IRModule({"main": te.create_prim_func([a, b])})


def test_fast_builder_builds_and_reports_errors(llvm_target):
    import tvm
    from tvm import tirx
    from tvm.s_tir.meta_schedule.builder import BuilderInput

    builder = fast.FastBuilder(max_workers=1, timeout_sec=60)
    try:
        bad = tvm.IRModule({"main": tirx.PrimFunc([], tirx.Evaluate(0))})  # no global symbol: cannot build
        results = builder.build([BuilderInput(_add_module(), llvm_target), BuilderInput(bad, llvm_target)])
        assert results[0].error_msg is None and os.path.exists(results[0].artifact_path)
        assert results[1].artifact_path is None and "exposed externally" in results[1].error_msg
        fast.remove_artifact(results[0].artifact_path)
        assert not os.path.exists(os.path.dirname(results[0].artifact_path))
    finally:
        builder.close()


def test_fast_builder_timeout_is_a_failure(llvm_target):
    from tvm.s_tir.meta_schedule.builder import BuilderInput

    builder = fast.FastBuilder(max_workers=1, timeout_sec=0.001)
    try:
        (result,) = builder.build([BuilderInput(_add_module(), llvm_target)])
        assert result.artifact_path is None and "Timeout" in result.error_msg
    finally:
        builder.close()


def test_make_runner_checks_rpc_arguments():
    with pytest.raises(ValueError, match="HOST:PORT"):
        fast.make_runner(rpc_tracker="nohost", rpc_key="k")
    with pytest.raises(ValueError, match="rpc_key"):
        fast.make_runner(rpc_tracker="127.0.0.1:9190")
    with pytest.raises(ValueError, match="builder kind"):
        fast.make_builder("slow")


def test_device_type_and_cuda_env(llvm_target):
    import tvm

    assert fast.device_type(llvm_target) == "cpu"
    assert fast.device_type(tvm.target.Target(CUDA)) == "cuda"
    env = fast.cuda_compile_env()
    assert env in ({}, {"TVM_CUDA_COMPILE_MODE": "nvcc"})


class _FakeCudaImport:
    """A CUDA module import whose `inspect_source(fmt)` returns or raises what is given for `fmt`."""

    kind = "cuda"

    def __init__(self, sources):
        self.sources = sources

    def inspect_source(self, fmt=""):
        src = self.sources.get(fmt, "")
        if isinstance(src, Exception):
            raise src
        return src


def test_cuda_imports_holding_device_code_are_not_recompiled(llvm_target):
    """Where a CUDA runtime is linked TVM compiles kernels itself, and reading the cubin as text raises (seen on an
    H200: every build failed before this); such imports, and those with PTX, are left alone."""
    cubin = _FakeCudaImport({"cubin": UnicodeDecodeError("utf-8", b"\xed", 0, 1, "invalid continuation byte")})
    ptx = _FakeCudaImport({"ptx": ".version 8.0"})
    mod = type("RtMod", (), {"imports": [cubin, ptx]})()
    assert fast.compile_cuda_imports(mod, llvm_target) == 0
    source_only = _FakeCudaImport({"": "not CUDA"})
    mod = type("RtMod", (), {"imports": [source_only]})()
    with pytest.raises(RuntimeError):  # source without a binary goes to the CUDA compiler, which rejects it
        fast.compile_cuda_imports(mod, llvm_target)


def test_workers_die_with_a_killed_parent():
    import psutil

    script = textwrap.dedent("""
        import psutil, sys, time
        from tvm_cost.collect import fast
        b = fast.FastBuilder(max_workers=2)
        futs = [b.pool.submit(time.sleep, 0.5) for _ in range(2)]
        [f.result() for f in futs]
        print(" ".join(str(c.pid) for c in psutil.Process().children()), flush=True)
        time.sleep(600)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    workers: list[int] = []
    try:
        workers = [int(p) for p in proc.stdout.readline().split()]
        assert len(workers) == 2
        os.kill(proc.pid, 9)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(psutil.pid_exists(p) and
                                                  psutil.Process(p).status() != psutil.STATUS_ZOMBIE
                                                  for p in workers):
            time.sleep(0.1)
        alive = [p for p in workers if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
        assert not alive
    finally:
        for pid in [proc.pid, *workers]:
            kill_tree(pid)


def test_local_runner_worker_is_recycled():
    runner = fast.make_runner(max_uses=7)
    try:
        assert runner.pool._maximum_process_uses == 7
    finally:
        runner.pool.shutdown()


def test_preload_imports_only_the_targets_intrinsics():
    script = textwrap.dedent("""
        import sys, tvm
        from tvm_cost.collect import fast
        assert fast.preload_tensor_intrinsics(tvm.target.Target({"kind": "llvm"}))
        assert "tvm.s_tir.tensor_intrin.x86" in sys.modules and "tvm.s_tir.tensor_intrin.cuda" not in sys.modules
        import tvm.s_tir.tensor_intrin  # what TuneContext does: now a no-op
        assert "tvm.s_tir.tensor_intrin.rocm" not in sys.modules
        print("ok")
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
