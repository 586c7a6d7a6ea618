"""`ModelConfig`: the frozen description of a graph cost model's architecture, written into every checkpoint."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Protocol


READOUTS = ("pool", "sum")


class SchemaLike(Protocol):
    """What the model needs to know of a feature schema: the column names (see `tvm_cost.features.schema`)."""

    @property
    def node(self) -> tuple[str, ...]: ...

    @property
    def edge(self) -> tuple[str, ...]: ...

    @property
    def globals(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class ModelConfig:
    """Architecture of a graph cost model (`SeerNet`, `GCNBaseline`, or the members of an `EnsembleModel`).

    Args:
        node_dim: Columns of `x` (``len(SCHEMA.node)``).
        edge_dim: Columns of `edge_attr`; 0 when graphs carry no edge features.
        global_dim: Columns of `u`; 0 when graphs carry no global features.
        hidden: Width of every hidden representation.
        layers: Message-passing layers (SeerBlocks or GCN layers).
        dropout: Dropout probability inside the MLPs; also what MC-dropout samples with.
        heads: Metric names, one regression head each; every head predicts the natural log of its metric.
        mlp_layers: Linear layers in each encoder, update and head MLP (>= 1).
        input_clip: Standardized inputs are clipped to ``[-input_clip, input_clip]`` so an out-of-range feature of
            an unseen graph cannot blow up the prediction.
        seed: Seed of the initial weights; ensembles use ``seed + i`` for member ``i``.
        readout: How `SeerNet` turns node states into a graph's metric: ``"pool"`` (mean and max of the nodes
            with the global node, then a head) or ``"sum"`` (a head per node, in the context of the global node,
            whose metric values are summed, as TVM's XGBModel sums its per-store predictions).
        work_globals: Columns of `u` that hold ln(1 + count) of the graph's work (e.g. its FLOPs and bytes). When
            set, the heads predict the metric per unit of work and `forward` adds ln(sum of (1 + count)), so a
            graph larger than any seen in training scales with its work instead of being capped (see
            `tvm_cost.estimation.work`); empty: the heads predict the metric itself.
    """

    node_dim: int
    edge_dim: int
    global_dim: int
    hidden: int = 128
    layers: int = 3
    dropout: float = 0.1
    heads: tuple[str, ...] = ("latency",)
    mlp_layers: int = 2
    input_clip: float = 10.0
    seed: int = 0
    readout: str = "pool"
    work_globals: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "heads", tuple(self.heads))  # accept a list, e.g. from JSON
        object.__setattr__(self, "work_globals", tuple(self.work_globals))
        if min(self.node_dim, self.edge_dim, self.global_dim) < 0 or self.node_dim == 0:
            raise ValueError(f"ModelConfig: bad input dims node={self.node_dim} edge={self.edge_dim} "
                             f"global={self.global_dim} (node_dim >= 1, others >= 0)")
        if self.hidden < 1 or self.layers < 0 or self.mlp_layers < 1:
            raise ValueError(f"ModelConfig: hidden={self.hidden}, layers={self.layers}, mlp_layers="
                             f"{self.mlp_layers} must be >= 1, >= 0, >= 1")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"ModelConfig: dropout={self.dropout} must be in [0, 1)")
        if not self.heads or len(set(self.heads)) != len(self.heads) or \
                not all(isinstance(h, str) and h.isidentifier() for h in self.heads):
            raise ValueError(f"ModelConfig: heads={self.heads!r} must be unique, non-empty identifiers")
        if self.readout not in READOUTS:
            raise ValueError(f"ModelConfig: readout={self.readout!r}; choices: {', '.join(READOUTS)}")
        if self.input_clip <= 0:
            raise ValueError(f"ModelConfig: input_clip={self.input_clip} must be > 0")
        if any(not 0 <= c < self.global_dim for c in self.work_globals):
            raise ValueError(f"ModelConfig: work_globals={self.work_globals} must be columns of u "
                             f"(0 <= c < global_dim={self.global_dim})")

    @classmethod
    def for_schema(cls, schema: SchemaLike, **kwargs: Any) -> ModelConfig:
        """A config whose input dims match `schema` (e.g. ``ModelConfig.for_schema(SCHEMA, hidden=64)``)."""
        return cls(node_dim=len(schema.node), edge_dim=len(schema.edge), global_dim=len(schema.globals), **kwargs)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (tuples become lists)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelConfig:
        """Inverse of `to_dict`; unknown keys raise `ValueError` naming them."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"ModelConfig: unknown fields {unknown}")
        return cls(**data)

    def replace(self, **changes: Any) -> ModelConfig:
        """A copy with `changes` applied (returns the new config; the original is frozen)."""
        return dataclasses.replace(self, **changes)
