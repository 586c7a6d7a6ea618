"""MANIFEST.json: checksums, counts, versions, runs; compression keeps records readable."""

from __future__ import annotations

import hashlib
import json
import os

from collect_helpers import LLVM, fake_record, fake_workload

from tvm_cost.collect.manifest import compress_databases, gpu_info, manifest_gpu, write_manifest
from tvm_cost.collect.records import load_records
from tvm_cost.collect.store import RecordStore


def _store(root, n=5):
    with RecordStore(root) as store:
        store.commit("1", "random", fake_workload("1"), [("ok", fake_record(i, [1e-3])) for i in range(n)])


def test_manifest_contents(tmp_path):
    _store(tmp_path)
    write_manifest(tmp_path, target=LLVM, settings={"evaluator": {"number": 1}},
                   run={"start": "s", "end": "e", "command": "tvm-cost collect"})
    write_manifest(tmp_path, target=LLVM, run={"start": "s2", "end": "e2", "command": "again"})
    man = json.loads((tmp_path / "MANIFEST.json").read_text())
    entry = man["files"]["database_tuning_record.json"]
    data = (tmp_path / "database_tuning_record.json").read_bytes()
    assert entry["sha256"] == hashlib.sha256(data).hexdigest() and entry["records"] == 5
    assert man["target"] == LLVM and man["cpu_model"]
    assert set(man["versions"]) >= {"tvm", "tvm_ffi"} and man["versions"]["tvm"].startswith("0.")
    assert [r["command"] for r in man["runs"]] == ["tvm-cost collect", "again"]
    assert man["settings"] == {"evaluator": {"number": 1}}  # kept when a run gives none


def test_cuda_manifest_names_the_gpu_and_keeps_it(tmp_path, monkeypatch):
    """A fake nvidia-smi on PATH: its GPU is recorded for a CUDA target, kept by a later write without one."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    smi = bindir / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'NVIDIA H200, 9.0, 580.159.04, 143771 MiB'\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    root = tmp_path / "cuda"
    _store(root)
    cuda = {"kind": "cuda", "arch": "sm_90"}
    write_manifest(root, target=cuda)
    expected = {"name": "NVIDIA H200", "compute_cap": "9.0", "driver": "580.159.04", "memory": "143771 MiB"}
    assert json.loads((root / "MANIFEST.json").read_text())["gpu"] == expected == manifest_gpu(root)
    smi.write_text("#!/bin/sh\nexit 9\n")  # nvidia-smi failing later (e.g. compressing on a CPU machine)
    assert gpu_info() is None
    write_manifest(root, target=cuda)
    assert json.loads((root / "MANIFEST.json").read_text())["gpu"] == expected
    smi.write_text("#!/bin/sh\necho 'NVIDIA H200, 9.0, 580.159.04, 143771 MiB'\n")
    _store(tmp_path / "cpu")
    write_manifest(tmp_path / "cpu", target=LLVM)  # the fake GPU is still on PATH: a CPU target never names it
    assert "gpu" not in json.loads((tmp_path / "cpu" / "MANIFEST.json").read_text())


def test_compress_then_load(tmp_path):
    _store(tmp_path)
    write_manifest(tmp_path, target=LLVM)
    done = compress_databases(tmp_path, min_bytes=0)
    assert {p.name for p in done} == {"database_tuning_record.json.gz", "database_workload.json.gz"}
    assert not (tmp_path / "database_tuning_record.json").exists()
    recs = list(load_records(tmp_path / "database_tuning_record.json.gz"))
    assert len(recs) == 5 and recs[0].workload_shash == "1"
    man = json.loads((tmp_path / "MANIFEST.json").read_text())
    assert man["files"]["database_tuning_record.json.gz"]["records"] == 5


def test_a_folder_measured_on_another_cpu_is_refused(tmp_path):
    import pytest

    from tvm_cost.collect import run_collect
    from tvm_cost.collect.manifest import check_same_machine, cpu_model, manifest_cpu
    from tvm_cost.errors import TvmCostError

    folder = tmp_path / "llvm-2core"
    _store(folder)
    write_manifest(folder, target=LLVM, run={"start": "s", "end": "e", "command": "c"})
    assert manifest_cpu(folder) == cpu_model()
    check_same_machine(folder, manifest_cpu(folder))  # same CPU: fine
    check_same_machine(folder, None)  # nothing measured yet: fine
    man = json.loads((folder / "MANIFEST.json").read_text())
    man["cpu_model"] = "Some Other CPU"
    (folder / "MANIFEST.json").write_text(json.dumps(man))
    before = (folder / "database_tuning_record.json").read_bytes()
    with pytest.raises(TvmCostError, match="llvm-2core: measured on 'Some Other CPU'.*--out-name"):
        run_collect(models=["zoo:mlp,width=8,depth=1,in_features=8"], target=LLVM, out_root=tmp_path)
    assert (folder / "database_tuning_record.json").read_bytes() == before
    # the same data under another name is a fresh folder
    with pytest.raises(TvmCostError, match="no tunable tasks|Some Other"):
        run_collect(models=[], target=LLVM, out_root=tmp_path, out_name="llvm-2core-here")


def test_max_flop_skips_large_tasks_and_names_the_option(tmp_path):
    """--max-flop below every task's FLOPs leaves nothing to collect: a one-line error, nothing written."""
    import pytest

    from tvm_cost.collect import run_collect
    from tvm_cost.errors import TvmCostError

    with pytest.raises(TvmCostError, match=r"at most 1 FLOPs \(--max-flop\)"):
        run_collect(models=["zoo:mlp,width=8,depth=1,in_features=8"], target=LLVM, out_root=tmp_path, max_flop=1)
    assert not any(tmp_path.rglob("database_tuning_record.json"))


def test_remeasure_refuses_a_folder_that_is_not_collected_or_is_being_written(tmp_path):
    import fcntl

    import pytest

    from tvm_cost.collect import run_remeasure
    from tvm_cost.collect.manifest import write_manifest
    from tvm_cost.errors import TvmCostError

    with pytest.raises(TvmCostError, match="not a collected tuning-log folder"):
        run_remeasure(target=LLVM, out_root=tmp_path, out_name="nothing", k=2)
    folder = tmp_path / "busy"
    folder.mkdir()
    write_manifest(folder, target={"kind": "llvm", "num-cores": 1})
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a running collection holds it
        with pytest.raises(TvmCostError, match="a collection is writing to this folder"):
            run_remeasure(target=LLVM, out_root=tmp_path, out_name="busy", k=2)
