"""The kernel dataset replays measured records into program graphs, labels them in ms, caches by schema hash."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import tvm
from tvm import te
from tvm.s_tir import Schedule
from tvm.s_tir import meta_schedule as ms

from tvm_cost.data import kernel_dataset
from tvm_cost.data.kernel_dataset import KernelDataset, pack_graphs, unpack_graphs, with_globals
from tvm_cost.errors import TvmCostError
from tvm_cost.features.program_schema import CANDIDATE_SCHEMA, PROGRAM_SCHEMA
from tvm_cost.features.trace_decisions import candidate_globals, trace_json

LLVM = tvm.target.Target({"kind": "llvm", "num-cores": 2})


def matmul_relu(n: int) -> tvm.IRModule:
    a, b = te.placeholder((n, n), name="A"), te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), "k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    d = te.compute((n, n), lambda i, j: te.max(c[i, j], 0.0), name="D")
    return tvm.IRModule({"main": te.create_prim_func([a, b, d]).with_attr("global_symbol", "main")})


def sampled(mod: tvm.IRModule, seed: int) -> Schedule:
    """A real schedule with sampled tile sizes (its trace carries the decisions)."""
    sch = Schedule(mod, seed=seed)
    i, j, k = sch.get_loops(sch.get_sblock("C"))
    i0, i1 = sch.split(i, sch.sample_perfect_tile(i, n=2))
    j0, j1 = sch.split(j, sch.sample_perfect_tile(j, n=2))
    sch.reorder(i0, j0, k, i1, j1)
    sch.parallel(i0)
    return sch


def synthetic_secs(seed: int) -> list[float]:
    """SYNTHETIC run_secs (not measured): distinct per record so labels can be checked."""
    return [1e-4 * seed, 3e-4 * seed]


def write_db(root, mods_and_seeds, *, failures: bool = True) -> None:
    db = ms.database.JSONDatabase(path_workload=str(root / "database_workload.json"),
                                  path_tuning_record=str(root / "database_tuning_record.json"))
    for mod, seeds in mods_and_seeds:
        wl = db.commit_workload(mod)
        for seed in seeds:
            sch = sampled(mod, seed)
            args = ms.arg_info.ArgInfo.from_prim_func(sch.mod["main"])
            db.commit_tuning_record(ms.database.TuningRecord(sch.trace, wl, synthetic_secs(seed), LLVM, args))
        if failures:  # a failed run (1e10 marker) and a failed build (no run_secs): never labels
            for secs in ([1e10], None):
                sch = sampled(mod, 99)
                args = ms.arg_info.ArgInfo.from_prim_func(sch.mod["main"])
                db.commit_tuning_record(ms.database.TuningRecord(sch.trace, wl, secs, LLVM, args))


@pytest.fixture()
def db_root(tmp_path):
    write_db(tmp_path, [(matmul_relu(32), range(1, 6)), (matmul_relu(16), range(1, 4))])
    return tmp_path


def test_records_become_labelled_graphs(db_root):
    ds = KernelDataset(db_root)
    assert len(ds) == 8 and len(ds.tasks) == 2  # 5 + 3 measured; the 4 failures are not items
    sizes = {t: ds.groups.count(t) for t in ds.tasks}
    assert sorted(sizes.values()) == [3, 5]
    for d in ds:
        assert d.x.shape[1] == len(PROGRAM_SCHEMA.node) and d.x.shape[0] == 2  # stores C and D
        assert d.edge_attr.shape[1] == len(PROGRAM_SCHEMA.edge) and d.u.shape == (1, len(CANDIDATE_SCHEMA.globals))
        assert d.y.shape == (1, 1) and d.group.dtype == torch.int64
        assert ds.tasks[int(d.group)] == d.task
    # labels: mean run_secs in ms, log kept beside
    labels = sorted(ds.latency_ms)
    expected = sorted([np.mean(synthetic_secs(s)) * 1e3 for s in (*range(1, 6), *range(1, 4))])
    np.testing.assert_allclose(labels, expected)
    np.testing.assert_allclose([d.log_latency_ms for d in ds], np.log([d.latency_ms for d in ds]))
    # each item names its record: the seed-th measured record of its task has the seed's label
    assert all(d.latency_ms == pytest.approx(np.mean(synthetic_secs(d.record + 1)) * 1e3) for d in ds)


def test_replayed_graph_matches_the_original_schedule(db_root):
    from relay_passes.schedule import feature_context
    from tvm_cost.features.program_graph import program_graphs

    ds = KernelDataset(db_root, target_spec="llvm")
    mod = matmul_relu(32)
    sch = sampled(mod, 2)
    cand = ms.MeasureCandidate(sch, ms.arg_info.ArgInfo.from_prim_func(sch.mod["main"]))
    want = program_graphs(feature_context(mod, LLVM), [cand], target_spec="llvm")[0]
    label = np.mean(synthetic_secs(2)) * 1e3
    workload = torch.from_numpy(want["u"])
    match = [d for d in ds if abs(d.latency_ms - label) < 1e-9 and torch.equal(d.u[:, :workload.shape[1]], workload)]
    assert len(match) == 1
    # its globals: the task's, then the decisions of the stored trace, as a live candidate's trace gives them
    u = candidate_globals(want["u"], trace_json(sch.trace))
    assert u.shape == (1, len(CANDIDATE_SCHEMA.globals)) and u[0, len(PROGRAM_SCHEMA.globals):].any()
    torch.testing.assert_close(match[0].u, torch.from_numpy(u))
    torch.testing.assert_close(match[0].x, torch.from_numpy(want["x"]))
    torch.testing.assert_close(match[0].edge_index, torch.from_numpy(want["edge_index"]))


def test_cache_is_keyed_by_schema_hash_and_reused(db_root, monkeypatch):
    first = KernelDataset(db_root)
    cached = sorted((db_root / "processed" / PROGRAM_SCHEMA.hash).glob("*.npz"))
    assert len(cached) == 2
    with np.load(cached[0], allow_pickle=False) as data:  # plain arrays, no pickle
        assert str(data["schema_hash"]) == PROGRAM_SCHEMA.hash

    def no_processing(*args, **kwargs):
        raise AssertionError("the cache should have been used")

    monkeypatch.setattr(kernel_dataset, "process_task", no_processing)
    second = KernelDataset(db_root)
    assert len(second) == len(first)
    for a, b in zip(first, second):
        torch.testing.assert_close(a.x, b.x)
        assert a.latency_ms == b.latency_ms and a.task == b.task


def test_new_records_rebuild_only_their_task(db_root, monkeypatch):
    KernelDataset(db_root)
    write_db(db_root, [(matmul_relu(16), [7])], failures=False)  # appended to the same JSON database
    calls = []
    real = kernel_dataset.process_task

    def counting(task, **kwargs):
        calls.append(task.shash)
        return real(task, **kwargs)

    monkeypatch.setattr(kernel_dataset, "process_task", counting)
    ds = KernelDataset(db_root)
    assert len(calls) == 1 and len(ds) == 9


def test_split_holds_out_whole_tasks(db_root):
    ds = KernelDataset(db_root)
    split = ds.split(test=0.5, val=0.0, seed=0)
    train_tasks = {ds.groups[i] for i in split.train}
    test_tasks = {ds.groups[i] for i in split.test}
    assert train_tasks and test_tasks and not train_tasks & test_tasks
    assert len(split.train) + len(split.test) == len(ds)
    held = ds.split(test_tasks=[ds.tasks[0]], val=0.0)
    assert {ds.groups[i] for i in held.test} == {ds.tasks[0]}
    assert all(d.task != ds.tasks[0] for d in ds.subset(held.train))


def test_pack_roundtrip_and_empty_folder(tmp_path):
    rng = np.random.default_rng(0)
    graphs = [{"x": rng.random((n, len(PROGRAM_SCHEMA.node)), dtype=np.float32),
               "edge_index": np.array([np.arange(n - 1), np.arange(1, n)], np.int64).reshape(2, -1),
               "edge_attr": rng.random((n - 1, len(PROGRAM_SCHEMA.edge)), dtype=np.float32),
               "u": rng.random((1, len(PROGRAM_SCHEMA.globals)), dtype=np.float32)} for n in (1, 3, 2)]
    back = unpack_graphs(pack_graphs(graphs))
    for a, b in zip(graphs, back, strict=True):
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])
    assert unpack_graphs(pack_graphs([])) == []
    with pytest.raises(TvmCostError, match="tuning-record"):
        KernelDataset(tmp_path)


def test_with_globals_appends_to_a_copy_and_leaves_the_item_alone(db_root):
    item = KernelDataset(db_root)[0]
    before = item.u.clone()
    out = with_globals(item, np.array([1.5, -2.0]))
    assert out.u.shape == (1, before.shape[1] + 2) and out.u.dtype == before.dtype
    assert torch.equal(out.u[:, :-2], before) and out.u[0, -2:].tolist() == [1.5, -2.0]
    assert torch.equal(item.u, before) and out.x is item.x  # the rest shared, not copied
    assert torch.equal(with_globals(item, item.raw_decisions[0, 1:]).u[0, before.shape[1]:],
                       item.raw_decisions[0, 1:].to(before.dtype))
