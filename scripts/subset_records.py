"""Copy a tuning-log folder keeping only a range of its tuning records, e.g. the records of one collection run.

A collection appends records in order, and a MANIFEST run entry with ``records_before``/``records_after`` says
which lines it wrote. Offline tools (``tvm-cost eval``, scripts/kernel_label_ceiling.py) read a whole folder; this
writes a folder with records ``[start, end)`` only, so they can be run on part of the data, e.g. without the early
AMD EPYC records whose builds shared the measuring cores (docs/kernel_model.md). Nothing is changed: records are
copied as they are, with the workloads, ``tasks.json``, the manifest (plus a ``subset`` entry saying what was
kept) and the ``noise.json`` re-timings of the kept records.

    python scripts/subset_records.py --data tuning_logs/llvm-1core --start 6051 --out /tmp/kdata/epyc-clean
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import statistics
from pathlib import Path

from tvm_cost.collect.records import open_text, parse_record, resolve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="tuning-log folder")
    parser.add_argument("--start", type=int, default=0, help="first record line kept (0-based)")
    parser.add_argument("--end", type=int, help="first record line not kept (default: the last line)")
    parser.add_argument("--out", required=True, help="new folder (must not exist)")
    args = parser.parse_args()
    src, out = Path(args.data), Path(args.out)
    if not (src / "MANIFEST.json").is_file():
        parser.error(f"{src}: no MANIFEST.json, not a collected tuning-log folder")
    if out.exists():
        parser.error(f"{out}: already exists")
    out.mkdir(parents=True)
    with open_text(resolve(src / "database_tuning_record.json")) as f:
        lines = f.read().splitlines()
    kept = lines[args.start:args.end]
    with gzip.open(out / "database_tuning_record.json.gz", "wt", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in kept))
    with open_text(resolve(src / "database_workload.json")) as f, \
            gzip.open(out / "database_workload.json.gz", "wt", encoding="utf-8") as g:
        shutil.copyfileobj(f, g)
    shutil.copy(src / "tasks.json", out / "tasks.json")
    manifest = json.loads((src / "MANIFEST.json").read_text(encoding="utf-8"))
    manifest["subset"] = {"source": str(src), "start": args.start, "end": args.end, "records": len(kept),
                          "of": len(lines)}
    (out / "MANIFEST.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    noise_kept = 0
    if (src / "noise.json").is_file():
        noise = json.loads((src / "noise.json").read_text(encoding="utf-8"))
        stored = {statistics.fmean(secs) for secs in (parse_record(json.loads(line))[2] for line in kept) if secs}
        noise["records"] = [r for r in noise["records"] if r["stored_secs"] in stored]
        noise["summary"] = {"note": "the source folder's summary covers records not kept here; see its noise.json"}
        (out / "noise.json").write_text(json.dumps(noise, indent=1), encoding="utf-8")
        noise_kept = len(noise["records"])
    print(json.dumps({"records": len(kept), "of": len(lines), "noise_records": noise_kept}))


if __name__ == "__main__":
    main()
