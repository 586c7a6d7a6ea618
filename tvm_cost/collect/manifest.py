"""Provenance of a tuning-log folder: ``MANIFEST.json`` and compression of finished databases.

The manifest lists every data file with its sha256 and record count, and what produced it: the target JSON, the
CPU model (and for CUDA targets the GPU's name and driver), the TVM and tvm-ffi versions, the measurement settings,
and one entry per collection run (start and end dates, command line, summary). Loaders read ``.json`` and
``.json.gz`` alike (`records.load_records`).
"""

from __future__ import annotations

import datetime as _dt
import fcntl
import gzip
import hashlib
import json
import logging
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tvm_cost.atomic import atomic_open, atomic_write_json
from tvm_cost.collect.store import ALL_DB_FILES
from tvm_cost.errors import TvmCostError

log = logging.getLogger(__name__)

MANIFEST_FILE = "MANIFEST.json"
_DATA_SUFFIXES = (".json", ".json.gz", ".jsonl", ".jsonl.gz")


def now_iso() -> str:
    """The current UTC time, ISO 8601, seconds precision."""
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def count_lines(path: str | Path) -> int:
    """Non-empty lines of a (possibly gzipped) text file."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        return sum(1 for line in f if line.strip())


def cpu_model() -> str:
    """The CPU model from `lscpu` ("Model name"), or the platform's processor string."""
    try:
        from tvm_cost.targets import host_cpu_spec  # pylint: disable=import-outside-toplevel

        return host_cpu_spec().name
    except Exception:  # pylint: disable=broad-except  # provenance must never fail a collection
        return platform.processor() or "unknown CPU"


def gpu_info() -> dict[str, str] | None:
    """GPU 0's name, compute capability and driver from `nvidia-smi`, or None where there is no usable one.

    CUDA records are facts about one GPU: the manifest names it as it names the CPU of CPU records.
    """
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,compute_cap,driver_version,memory.total",
                              "--format=csv,noheader"], capture_output=True, text=True, check=True, timeout=30)
        name, cap, driver, memory = (x.strip() for x in out.stdout.splitlines()[0].split(","))
    except (OSError, subprocess.SubprocessError, IndexError, ValueError):
        return None
    return {"name": name, "compute_cap": cap, "driver": driver, "memory": memory}


def check_same_machine(path: str | Path, recorded: str | None, *, current: str | None = None) -> None:
    """Refuse to add this machine's measurements to data measured on another CPU.

    A latency is a fact about one machine: records of two CPUs under one target folder would train a model on
    labels that disagree for the same schedule. `recorded` is the CPU the data at `path` were measured on (None:
    nothing measured yet).

    Raises:
        TvmCostError: the CPUs differ; the message names both and how to write elsewhere.
    """
    current = current or cpu_model()
    if recorded and recorded != current:
        raise TvmCostError(f"measured on {recorded!r}, this machine is {current!r}; measurements of two CPUs "
                           "must not share a folder: write to another one (collect --out-name NAME, "
                           "measure-e2e --out PATH)", path=path)


def other_cpu_warning(measured_on: str | None, what: str) -> str | None:
    """The warning to give when `what` learnt from CPU latencies measured on another CPU model than this one.

    Its predictions are that machine's latencies; None when the CPUs match or `measured_on` is unknown.
    """
    here = cpu_model()
    if measured_on is None or measured_on == here:
        return None
    return f"{what} was trained on latencies measured on {measured_on}; this machine is {here}: its numbers are " \
           "for that CPU"


def _manifest_field(root: str | Path, key: str) -> Any:
    path = Path(root) / MANIFEST_FILE
    try:
        return json.loads(path.read_text(encoding="utf-8")).get(key)
    except (OSError, json.JSONDecodeError):
        return None


def manifest_cpu(root: str | Path) -> str | None:
    """The CPU model named by ``root/MANIFEST.json``, or None when there is no (readable) manifest."""
    return _manifest_field(root, "cpu_model")


def manifest_gpu(root: str | Path) -> dict[str, str] | None:
    """The GPU (`gpu_info`) named by ``root/MANIFEST.json`` of CUDA records, or None."""
    return _manifest_field(root, "gpu")


def versions() -> dict[str, str]:
    """TVM, tvm-ffi, tvm-cost and Python versions."""
    import tvm  # pylint: disable=import-outside-toplevel
    import tvm_ffi  # pylint: disable=import-outside-toplevel

    from tvm_cost import __version__  # pylint: disable=import-outside-toplevel

    return {"tvm": str(tvm.__version__), "tvm_ffi": str(tvm_ffi.__version__), "tvm_cost": __version__,
            "python": platform.python_version()}


def describe_files(root: str | Path) -> dict[str, dict[str, Any]]:
    """sha256, bytes and record count (lines) of each data file in `root` (not the manifest itself)."""
    root = Path(root)
    out = {}
    for path in sorted(root.iterdir()):
        if path.name == MANIFEST_FILE or not path.is_file() or not path.name.endswith(_DATA_SUFFIXES):
            continue
        entry: dict[str, Any] = {"sha256": sha256_file(path), "bytes": path.stat().st_size}
        if "tuning_record" in path.name or "workload" in path.name:
            entry["records"] = count_lines(path)
        out[path.name] = entry
    return out


def write_manifest(
    root: str | Path,
    *,
    target: dict[str, Any],
    settings: dict[str, Any] | None = None,
    run: dict[str, Any] | None = None,
) -> Path:
    """Write (or update) ``root/MANIFEST.json``.

    Args:
        root: The target folder.
        target: The target JSON.
        settings: Measurement settings (evaluator, builder, search); the latest run's replace earlier ones.
        run: This run's entry (start, end, command, summary); appended to the list of runs.

    Returns:
        The manifest's path.
    """
    root = Path(root)
    path = root / MANIFEST_FILE
    old: dict[str, Any] = {}
    if path.exists():
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            log.warning("%s: unreadable; writing a fresh manifest", path)
    runs = list(old.get("runs", [])) + ([run] if run else [])
    gpu = (gpu_info() if target.get("kind") == "cuda" else None) or old.get("gpu")
    manifest = {
        "format": "MetaSchedule JSONDatabase (database_*: measured; failures_*: failed, run_secs null)",
        "target": target,
        "cpu_model": cpu_model(),
        **({"gpu": gpu} if gpu else {}),
        "hostname": platform.node(),
        "versions": versions(),
        "settings": settings if settings is not None else old.get("settings", {}),
        "runs": runs,
        "updated": now_iso(),
        "files": describe_files(root),
    }
    atomic_write_json(path, manifest)
    return path


def command_line() -> str:
    """The current process's command line, for the manifest."""
    return " ".join([os.path.basename(sys.executable), *sys.argv])


def compress_databases(root: str | Path, *, min_bytes: int = 1 << 20) -> list[Path]:
    """Gzip finished database files of at least `min_bytes` (``X.json`` -> ``X.json.gz``) and refresh the manifest.

    A later collection into the folder decompresses them first.

    Returns:
        The compressed files.
    """
    root = Path(root)
    done = []
    with open(root / ".lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise TvmCostError("a collection is writing to this folder; compress it when done", path=root) from None
        done = _compress(root, min_bytes)
    if done and (root / MANIFEST_FILE).exists():
        old = json.loads((root / MANIFEST_FILE).read_text(encoding="utf-8"))
        write_manifest(root, target=old.get("target", {}))
    return done


def _compress(root: Path, min_bytes: int) -> list[Path]:
    done = []
    for name in ALL_DB_FILES:
        src = root / name
        if not src.exists() or src.stat().st_size < min_bytes:
            continue
        dst = root / (name + ".gz")
        with open(src, "rb") as fin, atomic_open(dst, "wb") as raw, \
                gzip.GzipFile(name, "wb", compresslevel=6, fileobj=raw) as fout:
            shutil.copyfileobj(fin, fout)
        src.unlink()
        done.append(dst)
    return done
