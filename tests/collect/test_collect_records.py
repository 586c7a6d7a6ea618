"""load_records: .json and .json.gz, failures never as latencies, broken lines warned about by file and line."""

from __future__ import annotations

import gzip
import json
import logging

from collect_helpers import fake_record, fake_workload

from tvm_cost.collect.records import load_records, to_py


def _write_db(root, records, workloads=(fake_workload("7"),)):
    (root / "database_workload.json").write_text("".join(json.dumps(w) + "\n" for w in workloads))
    path = root / "database_tuning_record.json"
    path.write_text("".join(json.dumps([0, r]) + "\n" for r in records))
    return path


def test_reads_json_and_failures(tmp_path):
    path = _write_db(tmp_path, [fake_record(0, [1e-3, 2e-3]), fake_record(1, None), fake_record(2, [1e10])])
    recs = list(load_records(path))
    assert [r.run_secs for r in recs] == [[1e-3, 2e-3], None, None]
    assert [r.failed for r in recs] == [False, True, True]
    assert recs[0].workload_shash == "7" and recs[0].workload == "AAAA"
    assert recs[0].trace == fake_record(0)[0]


def test_reads_gzip(tmp_path):
    path = _write_db(tmp_path, [fake_record(i, [1e-3]) for i in range(3)])
    for p in (path, tmp_path / "database_workload.json"):
        with open(p, "rb") as fin, gzip.open(str(p) + ".gz", "wb") as fout:
            fout.write(fin.read())
        p.unlink()
    recs = list(load_records(tmp_path / "database_tuning_record.json.gz"))
    assert len(recs) == 3 and recs[2].workload_shash == "7"
    assert len(list(load_records(path))) == 3  # the .json name finds its .gz sibling
    assert [r.trace for r in load_records(tmp_path)] == [r.trace for r in recs]  # a folder reads its database


def test_broken_lines_warn_with_file_and_line(tmp_path, caplog):
    path = _write_db(tmp_path, [fake_record(0, [1e-3]), fake_record(1, [1e-3])])
    with open(path, "a") as f:
        f.write('[0, [[["Fake"], []], [0.1')  # a writer killed mid-line
    text = path.read_text().splitlines()
    path.write_text("\n".join([text[0], "{not json", *text[1:]]))
    with caplog.at_level(logging.WARNING, logger="tvm_cost.collect.records"):
        recs = list(load_records(path))
    assert len(recs) == 2
    messages = [r.getMessage() for r in caplog.records]
    assert any(f"{path}:2:" in m for m in messages), messages
    assert any(f"{path}:4:" in m for m in messages), messages


def test_to_py_converts_ffi_containers():
    import tvm_ffi

    value = tvm_ffi.convert({"a": [1, 2.5, "x"], "b": None})
    assert to_py(value) == {"a": [1, 2.5, "x"], "b": None}
    assert json.dumps(to_py(value))


def test_progress_helper_forms():
    from tvm_cost.collect.progress import rich_progress

    seen = []
    with rich_progress(seen.append) as cb:
        cb({"x": 1})
    assert seen == [{"x": 1}]
    with rich_progress(False) as cb:
        assert cb is None
    with rich_progress(True) as cb:
        cb({"task": "t", "task_index": 0, "num_tasks": 2, "phase": "random", "done": 3, "total": 8,
            "elapsed_s": 1.5, "failed": 0})
