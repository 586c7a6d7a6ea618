"""The collection loop with MetaSchedule's DummyBuilder/DummyRunner: real search, nothing compiled or timed.

It runs in a subprocess because `run`-style collection imports only the target's tensor intrinsics
(`fast.preload_tensor_intrinsics`), a process-wide change other tests must not see.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from collect_helpers import count_records

HERE = Path(__file__).parent

_SCRIPT = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, {here!r})
    import tvm
    from tvm.s_tir.meta_schedule.testing.dummy_object import DummyBuilder, DummyRunner
    from collect_helpers import LLVM, dense_module
    from tvm_cost.collect import fast
    from tvm_cost.collect.engine import CollectConfig, collect
    from tvm_cost.collect.store import RecordStore
    from tvm_cost.collect.tasks import extract_tasks

    target = tvm.target.Target(LLVM)
    fast.preload_tensor_intrinsics(target)
    tasks = extract_tasks([("d", dense_module(32))], target)
    config = CollectConfig(trials_per_task=12, batch_size=4, random_fraction=0.5, population_size=32,
                           xgb_warmup_samples=4, search_threads=2)
    events = []
    summaries = []
    for _ in range(2):  # the second run finds the work done
        with RecordStore({out!r}) as store:
            summaries.append(collect(tasks, target=target, store=store, builder=DummyBuilder(),
                                     runner=DummyRunner(), config=config, progress=events.append))
    print(json.dumps({{"summaries": summaries, "events": len(events), "shash": tasks[0].shash}}))
""")


def test_dummy_collection_and_rerun(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(_SCRIPT.format(here=str(HERE), out=str(tmp_path / "db")))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    first, second = result["summaries"]
    assert first["records"] == 12 and first["measured"] == 12 and first["tasks"] == 1
    assert second["records"] == 0
    assert result["events"] >= 3
    assert count_records(tmp_path / "db") == {result["shash"]: 12}
    progress = json.loads((tmp_path / "db" / "progress.json").read_text())["tasks"][result["shash"]]
    assert progress["random"] == 6 and progress["evolutionary"] == 6
    traces = [json.dumps(json.loads(line)[1][0]) for line in
              (tmp_path / "db" / "database_tuning_record.json").read_text().splitlines()]
    assert len(set(traces)) == 12  # no candidate measured twice
