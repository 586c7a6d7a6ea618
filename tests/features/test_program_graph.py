"""Program graphs of scheduled PrimFuncs: nodes match PerStoreFeature rows, edges derived by hand."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
import tvm
from tvm import te
from tvm.s_tir import Schedule
from tvm.s_tir import meta_schedule as ms

from relay_passes.schedule import feature_context
from tvm_cost.features.program_graph import candidate_stores, extract_beside, extract_pipelined, joined_graph, \
    program_graph, program_graphs, store_feature_rows, to_pyg_batch, walk_candidates, workload_globals
from tvm_cost.features.program_schema import EDGE_TYPES, NODE_OWN, PROGRAM_SCHEMA, PSF_COLUMNS
from tvm_cost.features.program_walk import lower_for_features, store_nodes
from tvm_cost.features.trace_decisions import DECISION_COLUMNS, RAW_COLUMNS, RAW_DECISIONS, decision_features, \
    raw_decisions, trace_json

LLVM = tvm.target.Target({"kind": "llvm", "num-cores": 2})
CUDA = tvm.target.Target("nvidia/nvidia-h100")
COL = {name: i for i, name in enumerate(PROGRAM_SCHEMA.node)}
EDGE_COL = {name: i for i, name in enumerate(PROGRAM_SCHEMA.edge)}


# --- tiny workloads ------------------------------------------------------------------------------------------
def elementwise_chain() -> tvm.tirx.PrimFunc:
    """B = 2A; C = exp(B); D = C + B."""
    a = te.placeholder((16, 32), name="A")
    b = te.compute(a.shape, lambda i, j: a[i, j] * 2.0, name="B")
    c = te.compute(a.shape, lambda i, j: te.exp(b[i, j]), name="C")
    d = te.compute(a.shape, lambda i, j: c[i, j] + b[i, j], name="D")
    return te.create_prim_func([a, d])


def matmul(n: int = 64) -> tvm.tirx.PrimFunc:
    a, b = te.placeholder((n, n), name="A"), te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), "k")
    return te.create_prim_func([a, b, te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k),
                                                  name="C")])


def conv2d_relu() -> tvm.tirx.PrimFunc:
    """pad -> 3x3 conv (8 -> 8 channels, 8x8) -> relu."""
    a, w = te.placeholder((1, 8, 8, 8), name="A"), te.placeholder((8, 8, 3, 3), name="W")
    pad = te.compute((1, 8, 10, 10), lambda n, c, y, x: tvm.tirx.if_then_else(
        tvm.tirx.all(y >= 1, y <= 8, x >= 1, x <= 8), a[n, c, y - 1, x - 1], 0.0), name="pad")
    rc, ry, rx = te.reduce_axis((0, 8), "rc"), te.reduce_axis((0, 3), "ry"), te.reduce_axis((0, 3), "rx")
    conv = te.compute((1, 8, 8, 8), lambda n, k, y, x: te.sum(
        pad[n, rc, y + ry, x + rx] * w[k, rc, ry, rx], axis=[rc, ry, rx]), name="conv")
    relu = te.compute(conv.shape, lambda *i: te.max(conv(*i), 0.0), name="relu")
    return te.create_prim_func([a, w, relu])


def row_softmax(rows: int = 4, cols: int = 512) -> tvm.tirx.PrimFunc:
    a = te.placeholder((rows, cols), name="A")
    k, k2 = te.reduce_axis((0, cols), "k"), te.reduce_axis((0, cols), "k2")
    m = te.compute((rows,), lambda i: te.max(a[i, k], axis=k), name="M")
    e = te.compute(a.shape, lambda i, j: te.exp(a[i, j] - m[i]), name="E")
    s = te.compute((rows,), lambda i: te.sum(e[i, k2], axis=k2), name="S")
    return te.create_prim_func([a, te.compute(a.shape, lambda i, j: e[i, j] / s[i], name="O")])


def row_sum(cols: int) -> tvm.tirx.PrimFunc:
    a = te.placeholder((4, cols), name="A")
    k = te.reduce_axis((0, cols), "k")
    return te.create_prim_func([a, te.compute((4,), lambda i: te.sum(a[i, k], axis=k), name="B")])


# --- helpers -------------------------------------------------------------------------------------------------
def graphs_of(schs: list[Schedule], target: tvm.target.Target) -> tuple[list[dict], list[np.ndarray], list]:
    """Program graphs, PerStoreFeature rows and walked stores of hand-made schedules."""
    context = feature_context(schs[0].mod, target)
    cands = [ms.MeasureCandidate(s, ms.arg_info.ArgInfo.from_prim_func(s.mod["main"])) for s in schs]
    rows = [t.numpy() for t in ms.feature_extractor.PerStoreFeature(extract_workload=False)
            .extract_from(context, cands)]
    spec = "llvm" if target.kind.name == "llvm" else "cuda-h100"
    graphs = program_graphs(context, cands, target_spec=spec, store_features=rows)
    nodes = [store_nodes(s.mod, is_gpu=target.kind.name == "cuda") for s in schs]
    return graphs, rows, nodes


def sampled(func: tvm.tirx.PrimFunc, target: tvm.target.Target, n: int) -> tuple[ms.TuneContext, list]:
    """`n` random candidates of the MetaSchedule design space (postprocessors applied), as a search round."""
    from tvm.s_tir.meta_schedule import _ffi_api
    from tvm.s_tir.meta_schedule.logging import get_logger, get_logging_func

    rules = "llvm" if target.kind.name == "llvm" else "cuda"  # "cuda-tensorcore" needs the slow intrin import
    space = ms.space_generator.PostOrderApply(sch_rules=rules, postprocs=rules, mutator_probs=rules)
    context = ms.TuneContext.__new__(ms.TuneContext)
    context.__init_handle_by_constructor__(
        _ffi_api.TuneContext, tvm.IRModule({"main": func}), target, space, ms.search_strategy.ReplayTrace(),
        "test", 1, 7, get_logging_func(get_logger(__name__)))
    _ffi_api.TuneContextInitialize(context)
    context.pre_tuning(max_trials=n, num_trials_per_iter=n, design_spaces=context.generate_design_space())
    return context, list(context.generate_measure_candidates())


def edge_set(graph: dict, kind: str) -> set[tuple[int, int]]:
    mask = graph["edge_attr"][:, EDGE_COL[f"type_{kind}"]] == 1
    return {(int(i), int(j)) for i, j in graph["edge_index"][:, mask].T}


def check_shapes(graph: dict) -> None:
    n, e = graph["x"].shape[0], graph["edge_index"].shape[1]
    assert graph["x"].shape == (n, len(PROGRAM_SCHEMA.node)) and graph["x"].dtype == np.float32
    assert graph["edge_index"].shape == (2, e) and graph["edge_index"].dtype == np.int64
    assert graph["edge_attr"].shape == (e, len(PROGRAM_SCHEMA.edge)) and graph["edge_attr"].dtype == np.float32
    assert graph["u"].shape == (1, len(PROGRAM_SCHEMA.globals)) and graph["u"].dtype == np.float32
    assert e == 0 or (graph["edge_index"].min() >= 0 and graph["edge_index"].max() < n)
    np.testing.assert_array_equal(graph["edge_attr"][:, :len(EDGE_TYPES)].sum(axis=1), 1.0)
    assert np.isfinite(graph["x"]).all() and np.isfinite(graph["edge_attr"]).all()


def check_loops_match_rows(nodes: list, rows: np.ndarray) -> None:
    """Node i's loops are those of row i: PerStoreFeature's group 5 holds log2(1 + #loops), log2(1 + trip)."""
    for node, row in zip(nodes, rows, strict=True):
        trip = math.prod(loop.extent for loop in node.loops)
        assert row[PSF_COLUMNS.index("psf_num_loops")] == pytest.approx(math.log2(1 + len(node.loops))), node.name
        assert row[PSF_COLUMNS.index("psf_outer_prod")] == pytest.approx(math.log2(1 + trip), rel=1e-6), node.name


# --- schema --------------------------------------------------------------------------------------------------
def test_schema_names_and_layout():
    assert PROGRAM_SCHEMA.name == "tvm-cost-program" and PROGRAM_SCHEMA.version == "1"
    assert PROGRAM_SCHEMA.node[:164] == PSF_COLUMNS and PROGRAM_SCHEMA.node[164:] == NODE_OWN
    for cols in (PROGRAM_SCHEMA.node, PROGRAM_SCHEMA.edge, PROGRAM_SCHEMA.globals):
        assert len(set(cols)) == len(cols)
    assert PROGRAM_SCHEMA.edge[:3] == ("type_dataflow", "type_nest", "type_seq")
    assert len(PROGRAM_SCHEMA.hash) == 16


# --- hand-derived graphs -------------------------------------------------------------------------------------
def test_elementwise_chain_edges():
    func = elementwise_chain()
    plain = Schedule(func)
    fused = Schedule(func)  # C computed inside D's loops; they share both loops
    fused.compute_at(fused.get_sblock("C"), fused.get_loops(fused.get_sblock("D"))[1])
    inlined = Schedule(func)  # C inlined into D: D reads B twice, one edge
    inlined.compute_inline(inlined.get_sblock("C"))
    graphs, rows, nodes = graphs_of([plain, fused, inlined], LLVM)
    for g, r in zip(graphs, rows):
        check_shapes(g)
        assert g["x"].shape[0] == r.shape[0]
    assert [n.name for n in nodes[0]] == ["B", "C", "D"]
    g = graphs[0]
    assert edge_set(g, "dataflow") == {(0, 1), (0, 2), (1, 2)}
    assert edge_set(g, "seq") == {(0, 1), (1, 2)} and edge_set(g, "nest") == set()
    np.testing.assert_array_equal(g["x"][:, COL["loop_depth"]], 2)
    np.testing.assert_allclose(g["x"][:, COL["log_trip_count"]], math.log1p(16 * 32), rtol=1e-6)
    np.testing.assert_array_equal(g["x"][:, COL["is_output"]], [0, 0, 1])
    np.testing.assert_array_equal(g["x"][:, COL["num_reads"]], [1, 1, 2])
    dataflow = g["edge_attr"][g["edge_attr"][:, 0] == 1]
    np.testing.assert_allclose(dataflow[:, EDGE_COL["log_bytes"]], math.log1p(16 * 32 * 4), rtol=1e-6)

    g = graphs[1]
    assert edge_set(g, "nest") == {(1, 2)} and edge_set(g, "dataflow") == {(0, 1), (0, 2), (1, 2)}
    nest = g["edge_attr"][g["edge_attr"][:, EDGE_COL["type_nest"]] == 1][0]
    assert nest[EDGE_COL["shared_loops"]] == 2
    assert nest[EDGE_COL["log_shared_trip"]] == pytest.approx(math.log1p(16 * 32))

    assert [n.name for n in nodes[2]] == ["B", "D"]
    assert edge_set(graphs[2], "dataflow") == {(0, 1)}


def test_matmul_reduction_and_cache_write():
    plain = Schedule(matmul())
    tiled = Schedule(matmul())
    block = tiled.get_sblock("C")
    write = tiled.cache_write(block, 0, "global")
    i, j, k = tiled.get_loops(block)
    i0, i1 = tiled.split(i, [None, 8])
    j0, j1 = tiled.split(j, [None, 16])
    tiled.reorder(i0, j0, k, i1, j1)
    tiled.parallel(i0)
    tiled.vectorize(j1)
    tiled.reverse_compute_at(write, j0)
    tiled.decompose_reduction(block, k)
    graphs, rows, nodes = graphs_of([plain, tiled], LLVM)
    for g, r, n in zip(graphs, rows, nodes):
        check_shapes(g)
        check_loops_match_rows(n, r)
    x = graphs[0]["x"]
    assert x.shape[0] == 1  # the init store is a constant: no row, no node
    assert x[0, COL["is_reduction"]] == 1 and x[0, COL["has_init"]] == 1 and x[0, COL["is_output"]] == 1
    assert [n.name for n in nodes[1]] == ["C_global", "C"]
    g = graphs[1]
    assert edge_set(g, "dataflow") == {(0, 1)} and edge_set(g, "nest") == {(0, 1)}
    nest = g["edge_attr"][g["edge_attr"][:, EDGE_COL["type_nest"]] == 1][0]
    assert nest[EDGE_COL["shared_loops"]] == 2  # i0 (parallel) and j0
    x = g["x"]
    np.testing.assert_array_equal(x[:, COL["parallel_loops"]], [1, 1])
    np.testing.assert_array_equal(x[:, COL["vectorized_loops"]], [1, 0])
    np.testing.assert_array_equal(x[:, COL["is_copy"]], [0, 1])
    np.testing.assert_array_equal(x[:, COL["has_init"]], [1, 0])


def test_conv2d_pad_feeds_conv_feeds_relu():
    sch = Schedule(conv2d_relu())
    sch.compute_at(sch.get_sblock("pad"), sch.get_loops(sch.get_sblock("conv"))[1])
    graphs, rows, nodes = graphs_of([Schedule(conv2d_relu()), sch], LLVM)
    for g, r, n in zip(graphs, rows, nodes):
        check_shapes(g)
        check_loops_match_rows(n, r)
        assert [node.name for node in n] == ["pad", "conv", "relu"]
        assert edge_set(g, "dataflow") == {(0, 1), (1, 2)}
    assert edge_set(graphs[0], "nest") == set() and edge_set(graphs[1], "nest") == {(0, 1)}


def test_cuda_cross_thread_reduction_matches_rows():
    """A reduction bound to threadIdx is lowered to an in-thread store plus a write-back (when a loop stays)."""
    partial = Schedule(row_sum(1024))
    i, k = partial.get_loops(partial.get_sblock("B"))
    _, k1 = partial.split(k, [None, 32])
    partial.bind(i, "blockIdx.x")
    partial.bind(k1, "threadIdx.x")
    full = Schedule(row_sum(32))
    i, k = full.get_loops(full.get_sblock("B"))
    full.bind(i, "blockIdx.x")
    full.bind(k, "threadIdx.x")
    graphs, rows, nodes = graphs_of([partial, full], CUDA)
    assert [n.name for n in nodes[0]] == ["in_thread_B", "B"] and rows[0].shape[0] == 2
    assert edge_set(graphs[0], "dataflow") == {(0, 1)}
    assert [n.name for n in nodes[1]] == ["B"] and rows[1].shape[0] == 1
    for g, r, n in zip(graphs, rows, nodes):
        check_shapes(g)
        check_loops_match_rows(n, r)
    assert graphs[0]["u"][0, PROGRAM_SCHEMA.globals.index("is_gpu")] == 1


# --- sampled schedules ---------------------------------------------------------------------------------------
WORKLOADS = {"matmul": lambda: matmul(64), "conv2d": conv2d_relu, "softmax": row_softmax,
             "elementwise": elementwise_chain,
             "matmul_layout_free": lambda: matmul(64).with_attr("layout_free_buffers", [1])}


@pytest.mark.parametrize("target", [LLVM, CUDA], ids=["llvm", "cuda"])
@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_sampled_candidates_match_per_store_feature(workload, target):
    if workload == "matmul_layout_free" and target.kind.name == "cuda":
        pytest.skip("layout rewriting is a CPU postprocessor")
    context, cands = sampled(WORKLOADS[workload](), target, 12 if target.kind.name == "llvm" else 5)  # CUDA
    # sampling runs VerifyGPUCode per candidate: ~0.4 s each on a conv2d
    rows = [t.numpy() for t in ms.feature_extractor.PerStoreFeature(extract_workload=False)
            .extract_from(context, cands)]
    graphs = program_graphs(context, cands, store_features=rows)
    for cand, r, g in zip(cands, rows, graphs):
        nodes = store_nodes(cand.sch.mod, is_gpu=target.kind.name == "cuda")
        assert len(nodes) == r.shape[0] == g["x"].shape[0]  # the fast walk itself, no fallback
        check_loops_match_rows(nodes, r)
        check_shapes(g)
        np.testing.assert_array_equal(g["x"][:, :164], r.astype(np.float32))


def test_fast_walk_agrees_with_lowered_walk():
    for func, target in [(row_softmax(), CUDA), (matmul(64), CUDA), (conv2d_relu(), LLVM)]:
        _, cands = sampled(func, target, 4)
        for cand in cands:
            gpu = target.kind.name == "cuda"
            fast = store_nodes(cand.sch.mod, is_gpu=gpu)
            lowered = store_nodes(lower_for_features(cand.sch.mod), is_gpu=gpu, emulate_cross_thread=False)
            assert [(n.name, len(n.loops), n.is_reduction) for n in fast] == \
                   [(n.name, len(n.loops), n.is_reduction) for n in lowered]


# --- API -----------------------------------------------------------------------------------------------------
def test_program_graphs_extracts_rows_and_globals_itself():
    context, cands = sampled(matmul(32), LLVM, 3)
    spec = {"kind": "llvm", "num-cores": 2}  # = LLVM, the context's target
    graphs = program_graphs(context, cands, target_spec=spec)
    u = workload_globals(context.mod, target_spec=spec)
    rows = [t.numpy() for t in ms.feature_extractor.PerStoreFeature(extract_workload=False)
            .extract_from(context, cands)]
    for g, r in zip(graphs, rows):
        np.testing.assert_array_equal(g["u"], u)
        np.testing.assert_allclose(g["x"][:, :164], r, rtol=1e-6)
    assert u[0, PROGRAM_SCHEMA.globals.index("log_flops")] == pytest.approx(math.log1p(2 * 32 ** 3))
    # target taken from the context when no spec is given
    np.testing.assert_array_equal(program_graphs(context, cands[:1])[0]["u"], u)


def test_extraction_runs_beside_the_python_side(monkeypatch):
    """The extractor runs on a worker thread while the caller's work runs; both results come back, in order."""
    import threading

    from tvm_cost.features import program_graph as pg

    context, cands = sampled(matmul(32), LLVM, 3)
    threads: dict[str, int] = {}
    real = pg.store_feature_rows

    def spy(ctx, cs):
        threads["extract"] = threading.get_ident()
        return real(ctx, cs)

    monkeypatch.setattr(pg, "store_feature_rows", spy)
    rows, walked = extract_beside(context, cands, lambda: walk_candidates(context, cands))
    assert threads["extract"] != threading.get_ident()
    for got, want, cand, (nodes, _) in zip(rows, real(context, cands), cands, walked, strict=True):
        np.testing.assert_array_equal(got, want)
        assert [n.name for n in nodes] == [n.name for n in store_nodes(cand.sch.mod, is_gpu=False)]
    # the caller's walk is what program_graphs would have walked itself
    for a, b in zip(program_graphs(context, cands, store_features=rows, walked=walked),
                    program_graphs(context, cands, store_features=rows), strict=True):
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])


def test_pipelined_extraction_draws_the_next_chunk_while_one_is_extracted(monkeypatch):
    """Chunk i's rows are extracted on the worker while chunk i's work and the drawing of chunk i + 1 run here;
    each chunk's join of its rows and its work's result comes back in order, the rows equal to one extraction."""
    import threading

    from tvm_cost.features import program_graph as pg

    context, cands = sampled(matmul(32), LLVM, 5)
    events: list[str] = []
    real = pg.store_feature_rows
    extracting = threading.Event()

    def spy(ctx, cs):
        events.append(f"extract {len(cs)}")
        extracting.set()
        return real(ctx, cs)

    def chunks():
        for i, part in enumerate((cands[:2], cands[2:4], cands[4:])):
            if i:  # the previous chunk is on the worker by now
                assert extracting.wait(timeout=60)
                extracting.clear()
            events.append(f"draw {len(part)}")
            yield part

    def join(rows, work):
        return rows, work, threading.get_ident()

    monkeypatch.setattr(pg, "store_feature_rows", spy)
    done = extract_pipelined(context, chunks(), lambda part: [threading.get_ident()] * len(part), join)
    assert [len(rows) for rows, _, _ in done] == [2, 2, 1]
    assert [e for e in events if e.startswith("extract")] == ["extract 2", "extract 2", "extract 1"]
    for got, want in zip([r for rows, _, _ in done for r in rows], real(context, cands), strict=True):
        np.testing.assert_array_equal(got, want)
    # the work and the joins ran on this thread
    assert {t for _, work, joined in done for t in [*work, joined]} == {threading.get_ident()}


def test_joined_graph_uses_a_matching_walk_and_walks_again_when_it_does_not_match():
    context, cands = sampled(matmul(32), LLVM, 1)
    rows = store_feature_rows(context, cands)[0]
    u = np.zeros((1, len(PROGRAM_SCHEMA.globals)), np.float32)
    walk = walk_candidates(context, cands)[0]
    fresh = program_graph(candidate_stores(cands[0].sch.mod, rows.shape[0], is_gpu=False), rows, u)
    wrong = (walk[0][:-1], walk[1])  # a walk with a store missing: not used
    for given in (walk, wrong, None):
        got = joined_graph(cands[0], rows, u, is_gpu=False, walk=given)
        for key in fresh:
            np.testing.assert_array_equal(got[key], fresh[key])


def test_errors_beside_the_extraction_propagate():
    context, cands = sampled(matmul(32), LLVM, 2)

    def fails() -> None:
        raise ValueError("python side broke")

    with pytest.raises(ValueError, match="python side broke"):
        extract_beside(context, cands, fails)
    with pytest.raises(TypeError, match="Mismatched type"):  # the worker's error, raised here
        extract_beside(context, [object()], lambda: None)


def test_mismatched_rows_fall_back_to_a_chain(caplog):
    sch = Schedule(elementwise_chain())
    assert candidate_stores(sch.mod, 5, is_gpu=False) is None
    assert "chain" in caplog.text
    rows = np.ones((5, 164), np.float32)
    g = program_graph(None, rows, np.zeros((1, len(PROGRAM_SCHEMA.globals)), np.float32))
    check_shapes(g)
    assert edge_set(g, "seq") == {(0, 1), (1, 2), (2, 3), (3, 4)} and g["edge_index"].shape[1] == 4


def test_to_pyg_batch_offsets_edges_and_stacks_globals():
    graphs, _, _ = graphs_of([Schedule(elementwise_chain()), Schedule(matmul(16)), Schedule(conv2d_relu())], LLVM)
    batch = to_pyg_batch(graphs)
    sizes = [g["x"].shape[0] for g in graphs]
    assert batch.num_graphs == 3 and batch.x.shape == (sum(sizes), len(PROGRAM_SCHEMA.node))
    assert batch.u.shape == (3, len(PROGRAM_SCHEMA.globals))
    assert batch.batch.tolist() == [i for i, n in enumerate(sizes) for _ in range(n)]
    offset = sizes[0] + sizes[1]
    last = graphs[2]["edge_index"].shape[1]
    np.testing.assert_array_equal(batch.edge_index[:, -last:].numpy(), graphs[2]["edge_index"] + offset)
    assert batch.edge_attr.shape == (sum(g["edge_index"].shape[1] for g in graphs), len(PROGRAM_SCHEMA.edge))


def test_to_pyg_batch_equals_pyg_collation():
    """The hand-built batch holds exactly the tensors PyG's own `Batch.from_data_list` gives."""
    import torch
    from torch_geometric.data import Batch, Data

    graphs, _, _ = graphs_of([Schedule(matmul(16)), Schedule(elementwise_chain()), Schedule(conv2d_relu())], LLVM)
    ours = to_pyg_batch(graphs)
    theirs = Batch.from_data_list([Data(**{k: torch.from_numpy(v) for k, v in g.items()}) for g in graphs])
    for key in ("x", "edge_index", "edge_attr", "u", "batch", "ptr"):
        assert ours[key].dtype == theirs[key].dtype, key
        assert torch.equal(ours[key], theirs[key]), key
    assert ours.num_graphs == theirs.num_graphs == 3


@pytest.mark.slow
def test_report_construction_time_against_per_store_feature(capsys):
    """Reported, not asserted (the machine is shared); scripts/bench_program_graph.py runs a full round."""
    context, cands = sampled(conv2d_relu(), LLVM, 256)
    extractor = ms.feature_extractor.PerStoreFeature(extract_workload=False)
    start = time.perf_counter()
    rows = [t.numpy() for t in extractor.extract_from(context, cands)]
    psf = time.perf_counter() - start
    start = time.perf_counter()
    program_graphs(context, cands, target_spec="llvm", store_features=rows)
    extra = time.perf_counter() - start
    with capsys.disabled():
        print(f"\n{len(cands)} candidates: PerStoreFeature {psf:.2f} s, graph construction on top {extra:.2f} s "
              f"({(psf + extra) / psf:.2f}x)")


# --- trace decisions (tvm_cost.features.trace_decisions) -------------------------------------------------------
DECISION_COL = {name: i for i, name in enumerate(DECISION_COLUMNS)}


def database_traces(tmp_path, context: ms.TuneContext, cands: list, target: tvm.target.Target) -> list:
    """The candidates' traces as a tuning database stores them (written, then read back)."""
    from tvm_cost.collect.records import load_records

    db = ms.database.JSONDatabase(path_workload=str(tmp_path / "database_workload.json"),
                                  path_tuning_record=str(tmp_path / "database_tuning_record.json"))
    workload = db.commit_workload(context.mod)
    for cand in cands:
        db.commit_tuning_record(ms.database.TuningRecord(cand.sch.trace, workload, [1e-3], target, cand.args_info))
    return [rec.trace for rec in load_records(tmp_path / "database_tuning_record.json")]


# A CPU-style trace: SSRSRS tiles of two spatial loops and one reduction loop, unroll, two compute locations.
HAND_INSTS = [["Annotate", ["b1", '"SSRSRS"'], ["meta_schedule.tiling_structure"], []],
              ["SamplePerfectTile", ["l4"], [4, 64], ["v5", "v6", "v7", "v8"]],
              ["SamplePerfectTile", ["l9"], [4, 64], ["v10", "v11", "v12", "v13"]],
              ["SamplePerfectTile", ["l14"], [2, 64], ["v15", "v16"]],
              ["SampleCategorical", [], [[0, 16, 64, 512], [0.25] * 4], ["v17"]],
              ["Annotate", ["b2", "v17"], ["meta_schedule.unroll_explicit"], []],
              ["SampleCategorical", [], [[32, 128], [0.5, 0.5]], ["v18"]],
              ["SampleComputeLocation", ["b0"], [], ["l19"]], ["SampleComputeLocation", ["b3"], [], ["l20"]],
              ["CacheWrite", ["b1"], [0, "global"], ["b21"]], ["EnterPostproc", [], [], []],
              ["SamplePerfectTile", ["l22"], [2, 64], ["v23", "v24"]]]  # after EnterPostproc: ignored
HAND_DECISIONS = [[1, [1, 2, 4, 8]], [2, [2, 1, 1, 2]], [3, [4, 16]], [4, 2], [6, 1], [7, -2], [8, 3], [11, [2, 2]]]


def test_decision_features_by_hand():
    f = decision_features([HAND_INSTS, HAND_DECISIONS])
    assert f.shape == (len(DECISION_COLUMNS),) and f.dtype == np.float32
    assert [f[DECISION_COL[f"log_spatial_tile_l{i}"]] for i in range(4)] == [3 + 1, 2 + 0, 1 + 0, 0 + 1]
    assert [f[DECISION_COL[f"log_reduce_tile_l{i}"]] for i in range(4)] == [4, 2, 0, 0]
    assert sum(f[DECISION_COL[f"spatial_share_l{i}"]] for i in range(4)) == pytest.approx(1)
    assert f[DECISION_COL["log_unroll"]] == pytest.approx(math.log2(65))
    assert f[DECISION_COL["log_other_categorical"]] == pytest.approx(math.log2(129))
    assert [f[DECISION_COL[c]] for c in ("compute_inline", "compute_at_loop", "compute_root")] == [1, 1, 0]
    assert f[DECISION_COL["log_last_spatial_inner"]] == 1 and f[DECISION_COL["log_last_reduce_inner"]] == 4
    assert [f[DECISION_COL[c]] for c in ("tiles_sampled", "cache_stages", "tiled_blocks")] == [3, 1, 1]


def test_raw_decisions_by_hand():
    """Every decision value in trace order (log2 factors and categorical values), then zeros; the sketch number
    follows the instruction kinds only."""
    raw = raw_decisions([HAND_INSTS, HAND_DECISIONS])
    assert raw.shape == (1 + RAW_DECISIONS,) and raw.dtype == np.float32 and len(RAW_COLUMNS) == raw.size
    expected = [0, 1, 2, 3, 1, 0, 0, 1, 2, 4, math.log2(65), math.log2(129), -2, 3]
    np.testing.assert_allclose(raw[1:1 + len(expected)], expected, rtol=1e-6)
    assert not raw[1 + len(expected):].any()  # the tile after EnterPostproc is not read
    other = [HAND_INSTS[:4] + HAND_INSTS[5:], [[i - (i > 4), d] for i, d in HAND_DECISIONS if i != 4]]
    assert raw_decisions(other)[0] != raw[0]  # one instruction fewer: another sketch
    redecided = [[i, [8, 4, 2, 1] if i == 1 else d] for i, d in HAND_DECISIONS]
    assert raw_decisions([HAND_INSTS, redecided])[0] == raw[0]  # the same sketch, other decisions


@pytest.mark.parametrize("target", [LLVM, CUDA], ids=["llvm", "cuda"])
def test_decisions_of_sampled_candidates_tile_the_loops_exactly(target, tmp_path):
    """Perfect tiles multiply back to the loop extents: a 32^3 matmul has 2 x 5 spatial and 5 reduction bits."""
    context, cands = sampled(matmul(32), target, 4)
    traces = database_traces(tmp_path, context, cands, target)
    assert len(traces) == len(cands)
    features = [decision_features(t) for t in traces]
    for f in features:
        assert sum(f[DECISION_COL[f"log_spatial_tile_l{i}"]] for i in range(4)) == pytest.approx(10)
        assert sum(f[DECISION_COL[f"log_reduce_tile_l{i}"]] for i in range(4)) == pytest.approx(5)
        assert f[DECISION_COL["tiled_blocks"]] == 1
        if target is LLVM:  # the CPU rules sample the unroll depth among 0, 16, 64, 512
            assert round(2 ** f[DECISION_COL["log_unroll"]]) - 1 in (0, 16, 64, 512)
    assert len({f.tobytes() for f in features}) > 1  # the candidates' decisions differ
    for cand, f, trace in zip(cands, features, traces, strict=True):  # a tune reads the in-memory trace: the same
        np.testing.assert_array_equal(decision_features(trace_json(cand.sch.trace)), f)
        np.testing.assert_array_equal(raw_decisions(trace_json(cand.sch.trace)), raw_decisions(trace))
