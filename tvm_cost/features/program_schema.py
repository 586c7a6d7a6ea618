"""The named, versioned feature schema of program graphs (one scheduled PrimFunc, one graph).

Nodes are the buffer stores `PerStoreFeature` rows (its 164 numbers, named here after
src/s_tir/meta_schedule/feature_extractor/per_store_feature.cc, all log2(1 + x) or 0/1), followed by a few
structural features of our own; edges are typed (one-hot) with the bytes of the buffer they carry and the loops
their two stores share; globals describe the workload (counted once per task on the unscheduled PrimFunc) and the
target. Bump `version` whenever a feature changes meaning without changing name.

`CANDIDATE_SCHEMA` is what the kernel cost models read of a MetaSchedule candidate: its program graph, with the
sampling decisions of its trace appended to the globals (`tvm_cost.features.trace_decisions`). The graph says
which loops a schedule produced, the trace how they were chosen; the feature cache holds the graph part only
(`PROGRAM_SCHEMA`), the decisions are read from the trace when a candidate is loaded or featurized.
"""

from __future__ import annotations

from tvm_cost.features.schema import NUM_STORE_FEATURES, FeatureSchema
from tvm_cost.features.trace_decisions import DECISION_COLUMNS


def _psf_names() -> tuple[str, ...]:
    arith = ("float_mad", "float_add_sub", "float_mul", "float_div_mod", "float_cmp", "float_math_func",
             "float_other_func", "int_mad", "int_add_sub", "int_mul", "int_div_mod", "int_cmp", "int_math_func",
             "int_other_func", "bool_op", "select_op")
    positions = ("none", "inner_spatial", "middle_spatial", "outer_spatial", "inner_reduce", "middle_reduce",
                 "outer_reduce", "mixed")
    loop_kinds = [f"{kind}_{what}" for kind in ("vec", "unroll", "parallel")
                  for what in ("num", "prod", "len", *(f"pos_{p}" for p in positions))]
    gpu = ("is_gpu", "blockIdx_x_len", "blockIdx_y_len", "blockIdx_z_len", "threadIdx_x_len", "threadIdx_y_len",
           "threadIdx_z_len", "vthread_len")
    access = ("is_read", "is_write", "is_read_write", "bytes", "unique_bytes", "lines", "unique_lines",
              "reuse_loop_multiple_read", "reuse_serial_multiple_read_write", "reuse_none", "reuse_dis_iter",
              "reuse_dis_bytes", "reuse_ct", "bytes_d_reuse_ct", "unique_bytes_d_reuse_ct", "lines_d_reuse_ct",
              "unique_lines_d_reuse_ct", "stride")
    names = [*arith, *loop_kinds, *gpu,
             *(f"buf{b}_{a}" for b in range(5) for a in access),
             *(f"arith_intensity_{i}" for i in range(10)),
             "alloc_size", "alloc_prod", "alloc_outer_prod", "alloc_inner_prod",
             "outer_prod", "num_loops", "auto_unroll_max_step"]
    assert len(names) == NUM_STORE_FEATURES
    return tuple(f"psf_{n}" for n in names)


PSF_COLUMNS = _psf_names()
NODE_OWN = (
    "loop_depth",         # loops around the store (unit loops the feature passes drop are not counted)
    "log_trip_count",     # ln(1 + product of their extents)
    "parallel_loops", "vectorized_loops", "unrolled_loops", "thread_loops",  # loop kinds among them
    "is_reduction",       # the store reads the buffer it writes
    "has_init",           # the buffer also gets a constant (init) store
    "is_copy",            # the value is a single load (cache read/write, layout copy)
    "is_output",          # the buffer is a parameter of the function
    "scope_global", "scope_shared", "scope_local",
    "log_buffer_bytes",   # ln(1 + bytes of the written buffer, as declared)
    "num_reads",          # distinct buffers its stores load, itself excluded
    "position",           # index / (N - 1): where the store sits in program order
)
EDGE_TYPES = ("dataflow", "nest", "seq")
PROGRAM_SCHEMA = FeatureSchema(
    name="tvm-cost-program",
    version="1",
    node=(*PSF_COLUMNS, *NODE_OWN),
    edge=(*(f"type_{t}" for t in EDGE_TYPES), "log_bytes", "shared_loops", "log_shared_trip"),
    globals=("log_flops", "log_anchor_flops", "log_bytes", "log_intensity", "log_reduction_extent",
             "workload_blocks", "is_gpu", "hw_cores", "log_hw_peak_gflops", "log_hw_mem_bandwidth_gbs",
             "log_hw_l1_kb", "log_hw_l2_kb", "log_hw_l3_kb", "hw_clock_ghz"),
)
CANDIDATE_SCHEMA = FeatureSchema(
    name="tvm-cost-candidate",
    version="1",
    node=PROGRAM_SCHEMA.node,
    edge=PROGRAM_SCHEMA.edge,
    globals=(*PROGRAM_SCHEMA.globals, *(f"trace_{c}" for c in DECISION_COLUMNS)),
)
WORK_GLOBALS = tuple(CANDIDATE_SCHEMA.globals.index(name) for name in ("log_flops", "log_bytes"))
"""Columns of `u` with the task's work (ln(1 + FLOPs), ln(1 + bytes)): `ModelConfig.work_globals` of a kernel model
that predicts latency per unit of work."""
