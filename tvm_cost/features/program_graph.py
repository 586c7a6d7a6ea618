"""MetaSchedule candidates -> program graphs, the input of the GNN kernel cost model.

One graph per `MeasureCandidate` (its scheduled TIR is `candidate.sch.mod["main"]`):

- **Nodes** are the buffer stores, in the order and number of the rows
  `ms.feature_extractor.PerStoreFeature(extract_workload=False)` gives (one row per written buffer; see
  `program_walk`). Each node carries that row (164 numbers) and the `NODE_OWN` features of `program_schema`.
- **Edges** (directed, one row of `edge_attr` each, one-hot type first):
  `dataflow` i -> j when store j loads the buffer store i writes; `nest` i -> j (i < j) when the two stores sit
  under at least one common loop (computed at / fused into the same loop nest); `seq` i -> i + 1 between
  consecutive stores. `log_bytes` is ln(1 + bytes) of the buffer the source store writes; `shared_loops` and
  `log_shared_trip` count the loops around both stores and their iterations. Models that want undirected
  message passing add the reverse edges themselves.
- **Globals** `u`: the workload's FLOPs and bytes (`relay_passes.tir_stats` of the unscheduled PrimFunc,
  counted once per call, or passed in) and the target's hardware descriptors (`tvm_cost.targets`).

The walk is cheap (well under a millisecond a candidate) next to `PerStoreFeature` itself (~15 ms a conv2d
candidate on two cores); `scripts/bench_program_graph.py` measures both.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from tvm_cost.features.program_schema import NODE_OWN, PROGRAM_SCHEMA
from tvm_cost.features.program_walk import PARALLEL, THREAD_BINDING, UNROLLED, VECTORIZED, StoreNode, \
    lower_for_features, store_nodes
from tvm_cost.features.schema import NUM_STORE_FEATURES
from tvm_cost.targets import ResolvedTarget, resolve_target

if TYPE_CHECKING:
    import tvm
    from torch_geometric.data import Batch
    from tvm.s_tir import meta_schedule as ms

logger = logging.getLogger(__name__)

NUM_NODE_FEATURES = len(PROGRAM_SCHEMA.node)
NUM_EDGE_FEATURES = len(PROGRAM_SCHEMA.edge)
NUM_GLOBAL_FEATURES = len(PROGRAM_SCHEMA.globals)
_DATAFLOW, _NEST, _SEQ = range(3)
T = TypeVar("T")
R = TypeVar("R")


def _log(x: float) -> float:
    return math.log1p(max(x, 0.0))


def workload_globals(workload: tvm.IRModule | Any, *, target_spec: str | dict | ResolvedTarget) -> np.ndarray:
    """The global features `u` of a task: workload counts and target descriptors.

    Args:
        workload: The task's unscheduled module (`context.mod`) or PrimFunc.
        target_spec: Anything `tvm_cost.targets.resolve_target` accepts.

    Shapes:
        returns: [1, len(PROGRAM_SCHEMA.globals)] float32.
    """
    import tvm

    from relay_passes.tir_stats import tir_stats

    func = workload
    if isinstance(workload, tvm.IRModule):
        funcs = [f for f in workload.functions.values() if isinstance(f, tvm.tirx.PrimFunc)]
        func = workload["main"] if any(gv.name_hint == "main" for gv in workload.functions) else funcs[0]
    s = tir_stats(func)
    hw = resolve_target(target_spec).hardware
    u = [_log(s.flops), _log(s.anchor_flops), _log(s.bytes), _log(s.flops / max(s.bytes, 1.0)),
         _log(s.reduction_extent), float(s.blocks), float(hw.kind == "gpu"), float(hw.cores), _log(hw.peak_gflops),
         _log(hw.mem_bandwidth_gbs), _log(hw.l1_kb), _log(hw.l2_kb), _log(hw.l3_kb), hw.clock_mhz / 1000.0]
    return np.asarray([u], np.float32)


def _node_features(nodes: list[StoreNode]) -> np.ndarray:
    n = len(nodes)
    own = np.zeros((n, len(NODE_OWN)), np.float32)
    for i, node in enumerate(nodes):
        kinds = [loop.kind for loop in node.loops]
        scope = node.scope
        own[i] = (
            len(node.loops), _log(math.prod(loop.extent for loop in node.loops)),
            kinds.count(PARALLEL), kinds.count(VECTORIZED), kinds.count(UNROLLED), kinds.count(THREAD_BINDING),
            node.is_reduction, node.has_init, node.is_copy, node.is_output,
            scope == "global", scope.startswith("shared"), not scope.startswith(("global", "shared")),
            _log(node.nbytes), len(node.reads) - (node.key in node.reads), i / max(n - 1, 1),
        )
    return own


def _edges(nodes: list[StoreNode]) -> tuple[np.ndarray, np.ndarray]:
    index = {node.key: i for i, node in enumerate(nodes)}
    uids = [{loop.uid for loop in node.loops} for node in nodes]
    extent = {loop.uid: loop.extent for node in nodes for loop in node.loops}
    pairs: list[tuple[int, int, int]] = []
    for j, node in enumerate(nodes):
        for i in sorted({index[r] for r in node.reads if r in index} - {j}):
            pairs.append((i, j, _DATAFLOW))
    for i in range(len(nodes)):
        for j in range(i + 1, len(nodes)):
            if uids[i] & uids[j]:
                pairs.append((i, j, _NEST))
    pairs.extend((i, i + 1, _SEQ) for i in range(len(nodes) - 1))
    edge_index = np.array([[p[0] for p in pairs], [p[1] for p in pairs]], np.int64).reshape(2, -1)
    edge_attr = np.zeros((len(pairs), NUM_EDGE_FEATURES), np.float32)
    for e, (i, j, kind) in enumerate(pairs):
        shared = uids[i] & uids[j]
        edge_attr[e, kind] = 1.0
        edge_attr[e, 3:] = (_log(nodes[i].nbytes), len(shared), _log(math.prod(extent[u] for u in shared)))
    return edge_index, edge_attr


GraphStructure = tuple[np.ndarray, np.ndarray, np.ndarray]
"""What a program graph takes from the walk alone: (`NODE_OWN` features [N, len(NODE_OWN)], edge_index [2, E],
edge_attr [E, D]); `graph_structure` makes it, `program_graph` joins it to the PerStoreFeature rows."""


def graph_structure(nodes: list[StoreNode] | None, num_rows: int | None = None) -> GraphStructure:
    """The node features and edges of the stores `nodes`; None (unknown structure): a chain of `num_rows` nodes
    with only their position and sequence edges. Needs no feature rows, so it can run beside the extraction."""
    if nodes is not None:
        return (_node_features(nodes), *_edges(nodes))
    n = num_rows or 0
    own = np.zeros((n, len(NODE_OWN)), np.float32)
    own[:, -1] = np.arange(n) / max(n - 1, 1)
    edge_attr = np.zeros((max(n - 1, 0), NUM_EDGE_FEATURES), np.float32)
    edge_attr[:, _SEQ] = 1.0
    return own, np.array([np.arange(n - 1), np.arange(1, n)], np.int64).reshape(2, -1), edge_attr


def program_graph(nodes: list[StoreNode] | None, rows: np.ndarray, u: np.ndarray, *,
                  structure: GraphStructure | None = None) -> dict[str, np.ndarray]:
    """Arrays of one graph from its stores (None: unknown structure, a chain of rows) and feature rows.

    Args:
        structure: `graph_structure(nodes)` when the caller has it (computed here otherwise).

    Shapes:
        rows: [N, 164]; u: [1, G].
        returns x: [N, len(PROGRAM_SCHEMA.node)] float32, edge_index: [2, E] int64,
        edge_attr: [E, len(PROGRAM_SCHEMA.edge)] float32, u: [1, len(PROGRAM_SCHEMA.globals)] float32.
    """
    n = rows.shape[0]
    assert nodes is None or len(nodes) == n, "stores and PerStoreFeature rows disagree"
    own, edge_index, edge_attr = graph_structure(nodes, n) if structure is None else structure
    x = np.concatenate([np.asarray(rows, np.float32).reshape(n, NUM_STORE_FEATURES), own], axis=1)
    return {"x": x, "edge_index": edge_index, "edge_attr": edge_attr, "u": u}


def candidate_stores(mod: tvm.IRModule, num_rows: int, *, is_gpu: bool,
                     walked: list[StoreNode] | None = None) -> list[StoreNode] | None:
    """The stores of a scheduled module matched to its `num_rows` feature rows, or None when no walk agrees.

    Tried in order until the count of stores equals the extractor's: the walk of the scheduled TIR as it is
    (emulating the lowering; ~0.1 ms; `walked` when the caller has it, see `walk_candidates`), the walk after
    the simplifier and `LowerCrossThreadReduction` (on GPUs, whether a reduction bound to threads gets lowered
    depends on an affine-binding check the walk does not repeat; a few ms), the walk after the extractor's whole
    pass list (as slow as the extractor).
    """
    nodes = store_nodes(mod, is_gpu=is_gpu) if walked is None else walked
    if len(nodes) == num_rows:
        return nodes
    for full in (False, True):
        nodes = store_nodes(lower_for_features(mod, full=full), is_gpu=is_gpu, emulate_cross_thread=False)
        if len(nodes) == num_rows:
            logger.debug("program graph: matched %d stores after lowering (full=%s)", num_rows, full)
            return nodes
    logger.warning("program graph: %d stores found, %d PerStoreFeature rows; using a chain", len(nodes), num_rows)
    return None


def is_gpu_context(context: ms.TuneContext) -> bool:
    """Whether the context's target is a GPU (its stores are walked as the GPU lowering leaves them)."""
    return "gpu" in [str(k) for k in context.target.keys]


Walk = tuple[list[StoreNode], GraphStructure]
"""A candidate's stores as its scheduled TIR has them and their `graph_structure` (`walk_candidates`)."""


def walk_candidates(context: ms.TuneContext, candidates: Sequence[ms.MeasureCandidate]) -> list[Walk]:
    """The walk of each candidate's scheduled TIR as it is (`candidate_stores`' first try) and the structure of its
    graph: everything a program graph needs but the feature rows, so it runs while the extractor does."""
    is_gpu = is_gpu_context(context)
    walks = []
    for cand in candidates:
        nodes = store_nodes(cand.sch.mod, is_gpu=is_gpu)
        walks.append((nodes, graph_structure(nodes)))
    return walks


def joined_graph(candidate: ms.MeasureCandidate, rows: np.ndarray, u: np.ndarray, *, is_gpu: bool,
                 walk: Walk | None = None) -> dict[str, np.ndarray]:
    """The program graph of a candidate from its feature rows and, when the caller has it, its `walk`: used as it
    is when its stores match the rows, else `candidate_stores`' slower tries decide the stores."""
    if walk is not None and len(walk[0]) == rows.shape[0]:
        return program_graph(walk[0], rows, u, structure=walk[1])
    nodes = candidate_stores(candidate.sch.mod, rows.shape[0], is_gpu=is_gpu, walked=None if walk is None else walk[0])
    return program_graph(nodes, rows, u)


def structure_graph(walk: Walk, u: np.ndarray) -> dict[str, np.ndarray]:
    """The program graph of a candidate from its `walk_candidates` walk alone, its PerStoreFeature columns zero:
    all a model trained without them reads (`tvm-cost train --no-store-features`), with no extraction."""
    nodes, structure = walk
    return program_graph(nodes, np.zeros((len(nodes), NUM_STORE_FEATURES), np.float32), u, structure=structure)


def store_feature_rows(context: ms.TuneContext, candidates: list[ms.MeasureCandidate]) -> list[np.ndarray]:
    """`PerStoreFeature(extract_workload=False)` rows of each candidate, float32 [stores, 164]."""
    from tvm.s_tir import meta_schedule as ms

    extractor = ms.feature_extractor.PerStoreFeature(extract_workload=False)
    return [t.numpy().astype(np.float32, copy=False) for t in extractor.extract_from(context, candidates)]


def extract_pipelined(context: ms.TuneContext, chunks: Iterable[list[ms.MeasureCandidate]],
                      work: Callable[[list[ms.MeasureCandidate]], T],
                      join: Callable[[list[np.ndarray], T], R]) -> list[R]:
    """`join(rows, work(chunk))` of each chunk of candidates, in order: its `store_feature_rows` extracted on a
    worker thread while this one runs `work(chunk)`, draws the next chunk, and joins each chunk whose rows are in.

    The extractor is C++ that releases the GIL (on the context's `num_threads`); the Python side of a program graph
    (the walk, the trace's decisions, the graph's structure: ~0.25 ms a candidate) and the joining of rows to it
    run while it works instead of after it. `chunks` may be a generator that does work of its own
    (`CandidateFeaturizer` hashes the next chunk's modules there): that runs beside the extraction of the chunk
    before. Only the last chunk's join follows the extraction. Errors of either side propagate.
    """
    pending: deque[tuple[Future[list[np.ndarray]], T]] = deque()
    joined: list[R] = []
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tvm-cost-extract") as pool:
        for chunk in chunks:
            pending.append((pool.submit(store_feature_rows, context, chunk), work(chunk)))
            while pending and pending[0][0].done():
                rows, done = pending.popleft()
                joined.append(join(rows.result(), done))
        while pending:
            rows, done = pending.popleft()
            joined.append(join(rows.result(), done))
    return joined


def extract_beside(context: ms.TuneContext, candidates: list[ms.MeasureCandidate],
                   work: Callable[[], T]) -> tuple[list[np.ndarray], T]:
    """`store_feature_rows` of `candidates` extracted while `work()` runs: `extract_pipelined` on one chunk."""
    return extract_pipelined(context, [candidates], lambda _: work(), lambda rows, done: (rows, done))[0]


def program_graphs(
    context: ms.TuneContext,
    candidates: list[ms.MeasureCandidate],
    *,
    target_spec: str | dict | ResolvedTarget | None = None,
    store_features: list[np.ndarray] | None = None,
    u: np.ndarray | None = None,
    walked: list[Walk] | None = None,
) -> list[dict[str, np.ndarray]]:
    """Build one program graph per candidate of a task.

    Args:
        context: The task's tune context (its `mod` is the workload, its `target` decides CPU/GPU lowering).
        candidates: Scheduled candidates of that task.
        target_spec: The target for the global descriptors (`resolve_target`); None: `context.target`.
        store_features: `PerStoreFeature(extract_workload=False)` rows per candidate when the caller has them;
            extracted here otherwise.
        u: The task's `workload_globals` when the caller caches them; computed here otherwise.
        walked: `walk_candidates` of the candidates when the caller has them; walked here otherwise (beside the
            extraction when `store_features` is None).

    Returns:
        Per candidate a dict of `x`, `edge_index`, `edge_attr`, `u` (see `program_graph` for shapes).
    """
    if store_features is None:
        store_features, walked = extract_beside(
            context, candidates, lambda: walk_candidates(context, candidates) if walked is None else walked)
    if u is None:
        spec = target_spec if target_spec is not None else dict(context.target.export())
        u = workload_globals(context.mod, target_spec=spec)
    is_gpu = is_gpu_context(context)
    return [joined_graph(cand, np.asarray(rows, np.float32), u, is_gpu=is_gpu,
                         walk=None if walked is None else walked[i])
            for i, (cand, rows) in enumerate(zip(candidates, store_features, strict=True))]


def to_pyg_batch(graphs: Sequence[dict[str, np.ndarray]]) -> Batch:
    """Concatenate graphs into one `torch_geometric.data.Batch` (`x`, `edge_index`, `edge_attr`, `u`, `batch`).

    The same tensors as ``Batch.from_data_list`` (tested equal), built by one concatenation per array: it runs on
    every fine-tuning step and every predict call, where PyG's general collation was a quarter of `update()`.

    Shapes:
        x: [sum N, F], edge_index: [2, sum E] (offset per graph), edge_attr: [sum E, D], u: [B, G],
        batch: [sum N] graph index of each node, ptr: [B + 1].
    """
    import torch
    from torch_geometric.data import Batch

    sizes = np.array([g["x"].shape[0] for g in graphs], dtype=np.int64)
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    edge_index = np.concatenate([g["edge_index"] + offset for g, offset in zip(graphs, ptr[:-1], strict=True)],
                                axis=1)
    return Batch(x=torch.from_numpy(np.concatenate([g["x"] for g in graphs])),
                 edge_index=torch.from_numpy(edge_index.astype(np.int64, copy=False)),
                 edge_attr=torch.from_numpy(np.concatenate([g["edge_attr"] for g in graphs])),
                 u=torch.from_numpy(np.concatenate([g["u"] for g in graphs])),
                 batch=torch.from_numpy(np.repeat(np.arange(len(graphs)), sizes)), ptr=torch.from_numpy(ptr))
