"""The named, versioned feature schema of operator graphs.

Every checkpoint and every processed dataset records `SCHEMA.version` and `SCHEMA.hash`; a change to any name
below changes the hash, so stale caches and checkpoints are refused instead of silently misread. Bump `version`
whenever the meaning of a feature changes without its name changing.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

# Legalized op name -> coarse kind. Unknown ops count as "other".
OP_GROUPS: dict[str, tuple[str, ...]] = {
    "conv": ("conv1d", "conv2d", "conv3d", "conv2d_transpose", "conv1d_transpose"),
    "matmul": ("matmul", "dense", "batch_matmul", "einsum"),
    "pool": ("max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "max_pool1d", "avg_pool1d", "max_pool3d"),
    "reduce": ("mean", "sum", "max", "min", "prod", "variance", "std", "argmax", "argmin"),
    "softmax": ("softmax", "log_softmax"),
    "norm": ("layer_norm", "group_norm", "rms_norm", "batch_norm", "instance_norm"),
    "elemwise": ("add", "subtract", "multiply", "divide", "power", "relu", "gelu", "gelu_tanh", "silu", "sigmoid",
                 "tanh", "exp", "sqrt", "rsqrt", "erf", "clip", "maximum", "minimum", "negative", "floor_divide",
                 "where", "astype", "log", "abs", "leakyrelu", "relu6", "hardswish", "hard_sigmoid", "less",
                 "greater", "equal", "not_equal", "less_equal", "greater_equal", "logical_and", "logical_not",
                 "square", "cos", "sin", "full_like", "zeros_like", "ones_like", "full"),
    "layout": ("reshape", "permute_dims", "transpose", "concatenate", "split", "strided_slice", "take", "pad",
               "broadcast_to", "squeeze", "expand_dims", "flatten", "collapse_sum_like", "tile", "repeat",
               "dynamic_strided_slice", "index_tensor", "gather_elements", "scatter_elements", "layout_transform"),
}
OP_GROUP_NAMES: tuple[str, ...] = (*OP_GROUPS, "other")
_GROUP_OF = {op: group for group, ops in OP_GROUPS.items() for op in ops}

NUM_STORE_FEATURES = 164  # MetaSchedule PerStoreFeature, without workload features


def op_group(op: str) -> str:
    """Coarse kind of a legalized op name ("conv2d" -> "conv")."""
    return _GROUP_OF.get(op, "other")


def _store_feature_names() -> list[str]:
    # PerStoreFeature's layout (src/s_tir/meta_schedule/feature_extractor/per_store_feature.cc): group 1 (57,
    # arithmetic and loop annotations), group 2 (5 buffers x 18 access features), group 3 (10, arithmetic
    # intensity curve), group 4 (4, allocation), group 5 (3, outer loops).
    base = ([f"g1_{i:02d}" for i in range(57)] + [f"g2_buf{b}_{i:02d}" for b in range(5) for i in range(18)]
            + [f"g3_{i}" for i in range(10)] + [f"g4_{i}" for i in range(4)] + [f"g5_{i}" for i in range(3)])
    assert len(base) == NUM_STORE_FEATURES
    return [f"store_{agg}_{name}" for agg in ("mean", "max") for name in base]


@dataclass(frozen=True)
class FeatureSchema:
    """Names of the node, edge and global feature columns, in order."""

    name: str
    version: str
    node: tuple[str, ...]
    edge: tuple[str, ...]
    globals: tuple[str, ...]

    @property
    def hash(self) -> str:
        """Short sha256 over the version and every column name."""
        text = json.dumps([self.name, self.version, self.node, self.edge, self.globals])
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def describe(self) -> dict[str, object]:
        return {"name": self.name, "version": self.version, "hash": self.hash, "node": list(self.node),
                "edge": list(self.edge), "globals": list(self.globals)}


NODE_STATIC = (
    *(f"ops_{g}" for g in OP_GROUP_NAMES),
    "num_ops", "log_flops", "log_anchor_flops", "log_bytes", "log_output_bytes", "log_intensity",
    "log_reduction_extent", "output_rank", "output_dtype_bytes",
    "blocks", "loops", "max_loop_depth", "parallel_loops", "vectorized_loops", "unrolled_loops", "thread_loops",
    "log_num_stores",
)
SCHEMA = FeatureSchema(
    name="tvm-cost-opgraph",
    version="1",
    node=(*NODE_STATIC, *_store_feature_names()),
    edge=("log_bytes", "rank", "dtype_bytes", "is_float"),
    globals=("log_total_flops", "log_total_bytes", "num_nodes", "num_edges", "num_tasks", "log_batch_size",
             "is_gpu", "hw_cores", "log_hw_peak_gflops", "log_hw_mem_bandwidth_gbs", "log_hw_l1_kb",
             "log_hw_l2_kb", "log_hw_l3_kb", "hw_clock_ghz"),
)
