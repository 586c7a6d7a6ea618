"""RecordStore: append-only commits, checkpoints, crash recovery (torn lines, roll-forward), locking, TVM format."""

from __future__ import annotations

import gzip
import json
import logging

import pytest
from collect_helpers import count_records, fake_record, fake_workload, prim_func_record, read_lines

from tvm_cost.collect.store import RecordStore, trace_key
from tvm_cost.errors import TvmCostError


def _commit(store, shash, phase, start, n, failed=()):
    recs = [("failed" if i in failed else "ok", fake_record(i, None if i in failed else [1e-3]))
            for i in range(start, start + n)]
    store.commit(shash, phase, fake_workload(shash), recs)


def test_commit_and_reopen(tmp_path):
    with RecordStore(tmp_path) as store:
        _commit(store, "1", "random", 0, 4, failed={2})
        _commit(store, "1", "evolutionary", 4, 2)
        _commit(store, "2", "random", 10, 3)
    assert count_records(tmp_path) == {"1": 6, "2": 3}
    assert len(read_lines(tmp_path / "failures_tuning_record.json")) == 1
    assert json.loads(read_lines(tmp_path / "failures_tuning_record.json")[0])[1][1] is None
    with RecordStore(tmp_path) as store:
        prog = store.progress("1")
        assert (prog.random, prog.evolutionary, prog.failed) == (4, 2, 1)
        assert store.seen("1", trace_key(fake_record(2)[0]))
        assert not store.seen("2", trace_key(fake_record(2)[0]))
        assert [line[1][0] for line in store.ok_records("2")] == [fake_record(i)[0] for i in (10, 11, 12)]


def test_torn_last_line_is_truncated(tmp_path, caplog):
    with RecordStore(tmp_path) as store:
        _commit(store, "1", "random", 0, 3)
    path = tmp_path / "database_tuning_record.json"
    good = path.read_bytes()
    with open(path, "ab") as f:
        f.write(b'[0, [[["Fake", [], [99]')  # killed mid-write
    with caplog.at_level(logging.WARNING), RecordStore(tmp_path) as store:
        assert store.progress("1").random == 3
    assert path.read_bytes() == good
    assert any("broken line" in r.getMessage() for r in caplog.records)


def test_complete_lines_after_checkpoint_roll_forward(tmp_path):
    with RecordStore(tmp_path) as store:
        _commit(store, "1", "random", 0, 2)
        store.begin("1", "evolutionary")
    # A crash after appending a batch but before the checkpoint: the lines are complete, progress is stale.
    with open(tmp_path / "database_tuning_record.json", "a") as f:
        for i in (5, 6, 7):
            f.write(json.dumps([0, fake_record(i, [2e-3])]) + "\n")
    with RecordStore(tmp_path) as store:
        prog = store.progress("1")
        assert (prog.random, prog.evolutionary) == (2, 3)
    with RecordStore(tmp_path) as store:  # counted once, not again on the next open
        assert store.progress("1").evolutionary == 3
    assert count_records(tmp_path) == {"1": 5}


def test_second_writer_is_refused(tmp_path):
    with RecordStore(tmp_path):
        with pytest.raises(TvmCostError, match="another collection"):
            RecordStore(tmp_path).open()


def test_shrunken_file_is_an_error(tmp_path):
    with RecordStore(tmp_path) as store:
        _commit(store, "1", "random", 0, 3)
    path = tmp_path / "database_tuning_record.json"
    path.write_bytes(path.read_bytes()[:10])
    with pytest.raises(TvmCostError, match="shorter"):
        RecordStore(tmp_path).open()


def test_gzipped_database_is_decompressed_to_resume(tmp_path):
    with RecordStore(tmp_path) as store:
        _commit(store, "1", "random", 0, 3)
    for name in ("database_tuning_record.json", "database_workload.json"):
        data = (tmp_path / name).read_bytes()
        (tmp_path / name).unlink()
        with gzip.open(tmp_path / (name + ".gz"), "wb") as f:
            f.write(data)
    with RecordStore(tmp_path) as store:
        _commit(store, "1", "random", 3, 1)
    assert count_records(tmp_path) == {"1": 4}


def test_tvm_json_database_loads_the_store(tmp_path):
    from tvm.s_tir import meta_schedule as ms

    workload, ok = prim_func_record([1e-6, 2e-6])
    _, failed = prim_func_record(None)
    with RecordStore(tmp_path) as store:
        store.commit(workload[0], "random", workload, [("ok", ok), ("failed", failed)])
    db = ms.database.JSONDatabase(work_dir=str(tmp_path))
    recs = db.get_all_tuning_records()
    assert len(recs) == 1 and [float(s) for s in recs[0].run_secs] == [1e-6, 2e-6]
    fdb = ms.database.JSONDatabase(str(tmp_path / "failures_workload.json"),
                                   str(tmp_path / "failures_tuning_record.json"))
    assert len(fdb) == 1 and fdb.get_all_tuning_records()[0].run_secs is None
