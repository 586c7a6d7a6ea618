import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from tvm_cost.atomic import atomic_open, atomic_write_json


def test_json_writers_of_one_path_at_once_each_leave_a_whole_file(tmp_path):
    """The temporary file is per writer: with one fixed name, a writer renames another's half-written file."""
    path = tmp_path / "progress.json"
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda i: atomic_write_json(path, {"writer": i, "pad": [i] * 20_000}), range(16)))
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["pad"] == [data["writer"]] * 20_000
    assert [p.name for p in tmp_path.iterdir()] == ["progress.json"]


def test_a_failed_write_keeps_the_old_content_and_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "state.json"
    atomic_write_json(path, {"old": True}, durable=False)
    with pytest.raises(RuntimeError, match="interrupted"), atomic_open(path) as f:
        f.write('{"new": ')
        raise RuntimeError("interrupted")
    assert json.loads(path.read_text(encoding="utf-8")) == {"old": True}
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]


def test_only_whole_file_writes_are_accepted(tmp_path):
    with pytest.raises(ValueError, match="mode 'a'"), atomic_open(tmp_path / "log.txt", "a"):
        pass
    assert list(tmp_path.iterdir()) == []
