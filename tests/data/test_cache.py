from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from tvm_cost.data.cache import save_npz_atomic


def test_writers_of_one_entry_at_once_each_leave_a_whole_file(tmp_path):
    path = tmp_path / "sub" / "entry.npz"
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda i: save_npz_atomic(path, {"x": np.full(100_000, i)}), range(16)))
    with np.load(path) as data:
        assert len(set(data["x"].tolist())) == 1  # one writer's array, whole
    assert [p.name for p in path.parent.iterdir()] == ["entry.npz"]  # no temporary file left
    assert path.stat().st_mode & 0o777 == 0o644  # readable by others


def test_a_failed_write_leaves_neither_entry_nor_temporary_file(tmp_path):
    class Broken:
        def __array__(self, *args, **kwargs):
            raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        save_npz_atomic(tmp_path / "entry.npz", {"x": Broken()})
    assert list(tmp_path.iterdir()) == []
