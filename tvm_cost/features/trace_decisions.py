"""The sampling decisions of a MetaSchedule trace as fixed-size features of its candidate.

PerStoreFeature describes the loops a schedule produced; the trace says how they were chosen: the factors of
every tiled loop per level, the sampled unroll depth, where producers were computed. A tree ranker gains about 4
points of pairwise accuracy on held-out families from these 26 numbers (`scripts/trace_decision_study.py`,
docs/kernel_model.md), so `tvm_cost.tuning.ranker` uses them beside the PerStoreFeature rows.

Read from the trace as a tuning database stores it (``[[[kind, inputs, attrs, outputs], ...], [[index,
decision], ...]]``), or from a candidate's in-memory trace through `trace_json`; only instructions before
``EnterPostproc`` count, postprocessing follows from them.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import numpy as np

LEVELS = 4  # tile levels kept, innermost first; outer levels beyond add to the last
DECISION_COLUMNS = (
    *(f"log_spatial_tile_l{i}" for i in range(LEVELS)),  # log2 product of the spatial factors at level i
    *(f"log_reduce_tile_l{i}" for i in range(LEVELS)),
    *(f"spatial_share_l{i}" for i in range(LEVELS)),  # level i's share of all spatial log-factors
    *(f"reduce_share_l{i}" for i in range(LEVELS)),
    "log_unroll",             # log2(1 + the sampled unroll depth)
    "log_other_categorical",  # log2(1 + value) over other categorical samples (thread extents, vector lanes)
    "compute_at_loop", "compute_inline", "compute_root",  # SampleComputeLocation outcomes
    "tiles_sampled",          # SamplePerfectTile decisions
    "log_last_spatial_inner",  # log2 innermost factor of the last spatial tiled loop (the vectorizable extent)
    "log_last_reduce_inner",
    "cache_stages",           # CacheRead / CacheWrite / ReverseComputeAt instructions
    "tiled_blocks",           # blocks with a multi-level tiling structure
)
_STRUCTURE = "meta_schedule.tiling_structure"


def trace_json(trace: Any) -> list[Any]:
    """What `decision_features` reads of an in-memory `Trace` (a candidate's ``sch.trace``), in the database's
    JSON shape. ``Trace.as_json`` converts every instruction's inputs and attributes through the FFI (1.8 ms per
    candidate, as long as its whole program graph); this takes only the kinds, the decisions, the sampled
    categories and the annotations (0.1 ms), so a round of 2,048 candidates pays 0.2 s, not 3.6 s."""
    decisions = trace.decisions
    insts: list[Any] = []
    chosen: list[Any] = []
    for i, inst in enumerate(trace.insts[:]):  # a slice: one list, not an FFI call per element
        kind = inst.kind.name
        if kind == "EnterPostproc":
            break
        inputs: list[Any] = []
        attrs: list[Any] = []
        if kind == "Annotate":
            inputs, attrs = [None, str(inst.inputs[1])], [str(inst.attrs[0])]
        elif kind == "SampleCategorical":
            attrs = [[int(v) for v in inst.attrs[0][:]]]
            chosen.append([i, int(decisions[inst])])
        elif kind == "SamplePerfectTile":
            chosen.append([i, [int(v) for v in decisions[inst][:]]])
        elif kind == "SampleComputeLocation":
            chosen.append([i, int(decisions[inst])])
        insts.append([kind, inputs, attrs, []])
    return [insts, chosen]


def _log_chosen(attrs: Any, decision: Any) -> float:
    """log2(1 + the value a SampleCategorical chose): its attrs list the candidates, its decision the index."""
    return math.log2(1 + max(int(attrs[0][int(decision)]), 0))


def decision_features(trace: Any) -> np.ndarray:
    """`DECISION_COLUMNS` of one trace (database JSON, or `trace_json` of an in-memory one).

    A tile is spatial when its factor count is the number of S levels of its block's tiling structure
    (``SSRSRS`` on CPUs, ``SSSRRSRS`` on GPUs), reduction otherwise; a categorical sample is the unroll depth when
    an unroll annotation follows it.

    Shapes:
        returns: [len(DECISION_COLUMNS)] float32.
    """
    insts, decision_list = trace
    decisions = {int(i): d for i, d in decision_list}
    spatial, reduce = np.zeros(LEVELS), np.zeros(LEVELS)
    unroll = other = last_spatial = last_reduce = 0.0
    at = inline = root = tiles = caches = tiled = 0
    structure = ""
    for i, (kind, inputs, attrs, _outputs) in enumerate(insts):
        if kind == "EnterPostproc":
            break
        if kind == "Annotate" and attrs[0] == _STRUCTURE:
            structure, tiled = str(inputs[1]).strip('"'), tiled + 1
        elif kind == "SamplePerfectTile":
            factors = [max(int(f), 1) for f in decisions[i]]
            is_spatial = len(factors) == (structure.count("S") or 4)
            levels = spatial if is_spatial else reduce
            for level, factor in enumerate(reversed(factors)):
                levels[min(level, LEVELS - 1)] += math.log2(factor)
            if is_spatial:
                last_spatial = math.log2(factors[-1])
            else:
                last_reduce = math.log2(factors[-1])
            tiles += 1
        elif kind == "SampleCategorical":
            value = _log_chosen(attrs, decisions[i])
            follower = insts[i + 1] if i + 1 < len(insts) else None
            if follower is not None and follower[0] == "Annotate" and "unroll" in str(follower[2][0]):
                unroll += value
            else:
                other += value
        elif kind == "SampleComputeLocation":
            loc = int(decisions[i])
            at, inline, root = at + (loc >= 0), inline + (loc == -2), root + (loc == -1)
        elif kind in ("CacheRead", "CacheWrite", "ReverseComputeAt"):
            caches += 1
    return np.asarray([*spatial, *reduce, *(spatial / max(spatial.sum(), 1.0)), *(reduce / max(reduce.sum(), 1.0)),
                       unroll, other, at, inline, root, tiles, last_spatial, last_reduce, caches, tiled], np.float32)


def candidate_globals(u: np.ndarray, trace: Any) -> np.ndarray:
    """The globals of a candidate (`CANDIDATE_SCHEMA`): its task's program-graph globals `u`, then
    `decision_features` of its `trace` (database JSON, or `trace_json` of an in-memory one).

    Shapes:
        u: [1, G] -> [1, G + len(DECISION_COLUMNS)] float32.
    """
    return np.concatenate([np.asarray(u, np.float32).reshape(1, -1), decision_features(trace)[None]], axis=1)


RAW_DECISIONS = 40
"""Decision values `raw_decisions` keeps per trace, in trace order (a MetaSchedule CPU sketch of a fused conv or
matmul samples 10-30: 4 factors per spatial tile, 2 per reduction tile, the unroll depth, compute locations)."""
RAW_COLUMNS = ("sketch", *(f"raw_decision_{i}" for i in range(RAW_DECISIONS)))


def raw_decisions(trace: Any) -> np.ndarray:
    """A trace's own decisions in order: its sketch (a number naming the sequence of instruction kinds, so that a
    tree can tell a task's sketches apart) and the first `RAW_DECISIONS` sampled values (log2 of each tile
    factor and of each categorical value chosen, compute locations as they are), zero-padded.

    `decision_features` summarizes a trace in columns that mean the same in every task; these mean something
    only within a task's sketch, where they pin the schedule down: a tree ranker fitted on half of each held-out
    task's candidates ranks the other half 2.6-3.1 points of pairwise accuracy better with them than with the
    summary alone (docs/kernel_model.md).

    Shapes:
        returns: [1 + RAW_DECISIONS] float32.
    """
    insts, decision_list = trace
    decisions = {int(i): d for i, d in decision_list}
    kinds: list[str] = []
    values: list[float] = []
    for i, (kind, _inputs, attrs, _outputs) in enumerate(insts):
        if kind == "EnterPostproc":
            break
        kinds.append(kind)
        if i not in decisions:
            continue
        if kind == "SamplePerfectTile":
            values.extend(math.log2(max(int(f), 1)) for f in decisions[i])
        elif kind == "SampleCategorical":
            values.append(_log_chosen(attrs, decisions[i]))
        else:
            values.append(float(decisions[i]))
    out = np.zeros(1 + RAW_DECISIONS, np.float32)
    out[0] = int.from_bytes(hashlib.blake2b("|".join(kinds).encode(), digest_size=2).digest(), "little")
    out[1:1 + min(len(values), RAW_DECISIONS)] = values[:RAW_DECISIONS]
    return out
