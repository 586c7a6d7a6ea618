"""End-to-end collection (slow: each collector process pays the 20-40 s tensor-intrinsics import once).

- a small collection: records in TVM's format, summary, manifest, re-measurement;
- kill -9 mid-run, rerun: no record lost, none duplicated, no worker process left;
- measurement through an RPC tracker and two RPC servers on 127.0.0.1;
- CUDA without a GPU: candidates compiled by nvcc, nothing run.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from collect_helpers import CUDA, LLVM, count_records, dense_module, kill_tree, read_lines

from tvm_cost.collect import run_collect, run_remeasure

HERE = Path(__file__).parent
pytestmark = pytest.mark.slow


def test_small_collection(tmp_path):
    from tvm.s_tir import meta_schedule as ms

    summary = run_collect(models=[("d", dense_module(32))], target=LLVM, out_root=tmp_path, trials_per_task=8,
                          batch_size=4, builder_workers=2, command="pytest")
    root = tmp_path / "llvm-2core"
    assert summary["records"] == 8 and summary["measured"] + summary["failed"] == 8 and summary["tasks"] == 1
    assert summary["records_per_s"] > 0 and summary["out_dir"] == str(root)
    db = ms.database.JSONDatabase(work_dir=str(root))
    assert len(db) == summary["measured"]
    manifest = json.loads((root / "MANIFEST.json").read_text())
    assert manifest["runs"][-1]["command"] == "pytest" and manifest["settings"]["evaluator"]["number"] == 1
    again = run_collect(models=[("d", dense_module(32))], target=LLVM, out_root=tmp_path, trials_per_task=8,
                        batch_size=4, builder_workers=2)
    assert again["records"] == 0  # finished work is skipped
    summary = run_remeasure(target=LLVM, out_root=tmp_path, k=3, seed=0, times=3, command="pytest noise")
    assert summary["remeasured"] == 3 and summary["median_rel_std"] >= 0
    noise = json.loads((root / "noise.json").read_text())
    assert all(r["rel_std"] >= 0 and r["median"] > 0 for r in noise["records"])
    manifest = json.loads((root / "MANIFEST.json").read_text())
    assert manifest["runs"][-1]["command"] == "pytest noise" and manifest["runs"][-1]["summary"]["remeasured"] == 3
    assert "noise.json" in manifest["files"]


_COLLECT_SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, {here!r})
    from collect_helpers import LLVM, conv_dense_module, dense_module
    from tvm_cost.collect import run_collect
    print(run_collect(models=[("a", dense_module(16)), ("b", conv_dense_module())], target=LLVM,
                      out_root={out!r}, trials_per_task=12, batch_size=4, builder_workers=2, seed=3))
""")


def _lines(root: Path) -> dict[str, list[bytes]]:
    """Complete lines of each database file (a cut-short last line is left out)."""
    out = {}
    for name in ("database_tuning_record.json", "failures_tuning_record.json", "database_workload.json",
                 "failures_workload.json"):
        data = (root / name).read_bytes() if (root / name).exists() else b""
        out[name] = data.split(b"\n")[:-1]
    return out


def test_kill_and_resume_loses_and_duplicates_nothing(tmp_path):
    import psutil

    script = tmp_path / "collect.py"
    script.write_text(_COLLECT_SCRIPT.format(here=str(HERE), out=str(tmp_path)))
    root = tmp_path / "llvm-2core"
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    children: list[int] = []
    try:
        deadline = time.monotonic() + 300
        while sum(count_records(root).values()) < 8 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert proc.poll() is None, "the collection ended before it could be killed"
        children = [c.pid for c in psutil.Process(proc.pid).children(recursive=True)]
        os.kill(proc.pid, 9)  # only the collector: its workers must go by themselves
        proc.wait(timeout=10)
        before = _lines(root)
        time.sleep(3)
        alive = [p for p in children if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
        assert not alive, f"worker processes outlived the killed collector: {alive}"
    finally:
        for pid in [proc.pid, *children]:
            kill_tree(pid)
    rerun = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    after = _lines(root)
    assert sum(len(v) for v in before.values()) >= 8
    for name, lines in before.items():
        assert after[name][: len(lines)] == lines, f"{name}: records written before the kill changed"
    progress = json.loads((root / "progress.json").read_text())["tasks"]
    counts = count_records(root)
    assert set(counts) == set(progress)
    for shash, prog in progress.items():
        assert counts[shash] == prog["random"] + prog["evolutionary"] + prog["other"]
        assert prog["random"] <= 6 and prog["evolutionary"] <= 6
        assert counts[shash] == 12 or prog["exhausted"], (shash, prog)
    for name in ("database_tuning_record.json", "failures_tuning_record.json"):
        keys = [json.dumps(json.loads(line)) for line in after[name]]
        assert len(keys) == len(set(keys)), f"{name}: duplicated records"


@pytest.mark.parametrize("through_ffi", [False, True])
def test_an_interrupt_whose_pool_teardown_fails_still_records_the_run(tmp_path, monkeypatch, through_ffi):
    """Ctrl-C after the first batch, then a crash while the build pool shuts down: the MANIFEST run entry (the
    provenance of the records already written) is there all the same, and says "interrupted" also when TVM's FFI
    hands the KeyboardInterrupt back as a RuntimeError."""
    from tvm_cost.collect import fast
    from tvm_cost.errors import Interrupt

    make_builder = fast.make_builder

    def failing_builder(*args, **kwargs):
        builder = make_builder(*args, **kwargs)
        close = builder.close

        def close_then_fail():
            close()
            raise RuntimeError("teardown crashed")

        builder.close = close_then_fail
        return builder

    def interrupt(batch):
        if batch["done"]:  # once a batch is stored
            if through_ffi:
                monkeypatch.setattr(Interrupt, "seen", True)  # what the CLI's SIGINT handler records
                raise RuntimeError("KeyboardInterrupt raised in a packed function")
            raise KeyboardInterrupt

    monkeypatch.setattr(fast, "make_builder", failing_builder)
    with pytest.raises(RuntimeError, match="teardown crashed"):
        run_collect(models=[("d", dense_module(32))], target=LLVM, out_root=tmp_path, trials_per_task=8,
                    batch_size=4, builder_workers=1, command="pytest interrupted", progress=interrupt)
    manifest = json.loads((tmp_path / "llvm-2core" / "MANIFEST.json").read_text())
    run = manifest["runs"][-1]
    assert run["command"] == "pytest interrupted" and run["summary"] == {"stopped": "interrupted"}
    measured = len(read_lines(tmp_path / "llvm-2core" / "database_tuning_record.json"))
    assert 0 < measured == manifest["files"]["database_tuning_record.json"]["records"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_rpc_measurement(tmp_path):
    from tvm import rpc

    port = _free_port()
    procs = [subprocess.Popen([sys.executable, "-m", "tvm.exec.rpc_tracker", "--host", "127.0.0.1", "--port",
                               str(port), "--port-end", str(port + 1), "--silent"])]
    try:
        time.sleep(2)
        for _ in range(2):
            procs.append(subprocess.Popen([sys.executable, "-m", "tvm.exec.rpc_server", "--tracker",
                                           f"127.0.0.1:{port}", "--key", "testkey", "--host", "127.0.0.1",
                                           "--port", str(sport := _free_port()), "--port-end", str(sport + 1),
                                           "--silent"]))
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                queue = rpc.connect_tracker("127.0.0.1", port).summary()["queue_info"]
                if queue.get("testkey", {}).get("free", 0) >= 2:
                    break
            except (OSError, RuntimeError):
                pass
            time.sleep(1)
        else:
            pytest.fail("the RPC servers did not register with the tracker")
        summary = run_collect(models=[("d", dense_module(32))], target=LLVM, out_root=tmp_path,
                              trials_per_task=4, batch_size=4, rpc_tracker=f"127.0.0.1:{port}", rpc_key="testkey",
                              rpc_workers=2)
        assert summary["records"] == 4 and summary["measured"] >= 1, summary
        manifest = json.loads((tmp_path / "llvm-2core" / "MANIFEST.json").read_text())
        assert manifest["settings"]["runner"].startswith("rpc 127.0.0.1")
    finally:
        for p in procs:  # the tracker and the servers each run in a child process of their own
            kill_tree(p.pid)


def test_cuda_build_only_compiles_with_nvcc(tmp_path, monkeypatch):
    import shutil

    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not installed")
    wrapper_dir = tmp_path / "bin"
    wrapper_dir.mkdir()
    log = tmp_path / "nvcc.log"
    (wrapper_dir / "nvcc").write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec {nvcc} "$@"\n')
    (wrapper_dir / "nvcc").chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrapper_dir}:{os.environ['PATH']}")
    summary = run_collect(models=[("d", dense_module(32))], target=CUDA, out_root=tmp_path / "logs",
                          trials_per_task=4, batch_size=4, measure=False, builder_workers=2)
    assert summary["built"] >= 2 and summary["build_errors"] == 0, summary
    assert summary["records"] == 0 and summary["out_dir"] is None
    assert not (tmp_path / "logs").exists()  # build-only writes no database
    calls = read_lines(log)
    assert len(calls) >= summary["built"] and all("sm_90" in c for c in calls), calls[:2]
