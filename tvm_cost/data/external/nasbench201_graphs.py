"""NAS-Bench-201 operator graphs in bulk: one ``.npz`` of graph arrays per (cell, batch size), resumable.

Layout under ``root``: ``batch<B>/<arch_index:05d>.npz`` with the arrays of
:func:`tvm_cost.features.arrays.graph_arrays` (``x``, ``edge_index``, ``edge_attr``, ``u``; no pickle), and
``<arch_index:05d>.empty`` for cells TVM compiles to nothing (see `NB201GraphConverter.convert`),
``timings.jsonl`` with one line per converted graph (``arch_index``, ``batch``, ``seconds``, ``nodes``).
Each graph is TVM's: :func:`nb201_to_relax` (batch norm emitted in folded form), ``relay_passes.lower`` and
``relay_passes.build.graph_from_lowered`` with a shared :class:`relay_passes.schedule.KernelCache` and
:class:`relay_passes.legalize_cache.LegalizeCache`.

HELP latencies are not stored here; :mod:`tvm_cost.estimation.help_study` joins them at load time.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tvm_cost.data.cache import save_npz_atomic
from tvm_cost.errors import TvmCostError

__all__ = ["GRAPH_KEYS", "NB201_CELLS", "NB201GraphConverter", "cell_order", "graph_path", "load_graphs"]

GRAPH_KEYS = ("x", "edge_index", "edge_attr", "u")
NB201_CELLS = 15_625


def cell_order(*, seed: int = 0, n: int = NB201_CELLS) -> np.ndarray:
    """The seeded order in which cells are converted: a prefix of it is a uniform random sample of all cells."""
    return np.random.default_rng(seed).permutation(n)


def graph_path(root: str | Path, batch: int, arch_index: int) -> Path:
    """Where the graph of one cell at one batch size lives."""
    return Path(root) / f"batch{batch}" / f"{arch_index:05d}.npz"


log = logging.getLogger(__name__)


@dataclass
class NB201GraphConverter:
    """Builds and stores NAS-Bench-201 operator graphs, reusing kernels across cells.

    Args:
        root: Output folder.
        target: Target preset or JSON the graphs are built for (see `tvm_cost.targets.resolve_target`).
        as_run: Build the networks as NAS-Bench-201 ran them, every edge computed (`NB201Network`'s ``as_run``),
            instead of the minimal graph.
    """

    root: Path
    target: str = "cuda-2080ti"
    as_run: bool = False
    cache: Any = field(default=None, init=False)
    legalize_cache: Any = field(default=None, init=False)

    def __post_init__(self) -> None:
        from relay_passes.legalize_cache import LegalizeCache
        from relay_passes.schedule import KernelCache
        from tvm_cost.targets import resolve_target

        self.root = Path(self.root)
        self.resolved = resolve_target(self.target)
        self.cache = KernelCache()
        self.legalize_cache = LegalizeCache()

    def arrays(self, arch: str, batch: int) -> dict[str, np.ndarray]:
        """Graph arrays of one cell string at one batch size (not stored)."""
        from relay_passes.build import graph_from_lowered
        from relay_passes.lower import lower
        from tvm_cost.data.external.nasbench201_relax import nb201_to_relax
        from tvm_cost.features.arrays import graph_arrays

        lowered = lower(nb201_to_relax(arch, batch=batch, fold_batch_norm=True, as_run=self.as_run),
                        self.resolved.tvm_target(), legalize_cache=self.legalize_cache)
        graph = graph_from_lowered(lowered, self.resolved, source=f"nb201:{arch}", batch_size=batch,
                                   cache=self.cache)
        return graph_arrays(graph)

    def convert(self, arch_index: int, arch: str, batch: int) -> float | None:
        """Builds and stores one graph unless it exists; returns the seconds it took, None if skipped.

        A cell whose output node is dead makes the whole network a constant: TVM folds every op and compiles no
        kernel. Such a cell gets an ``<arch_index>.empty`` marker instead of a graph (and is skipped on reruns).
        A cell TVM itself fails on (its default CUDA schedule rules have raised on a few as-run networks) gets an
        ``<arch_index>.failed`` marker with the error's last line, is logged and skipped, so one cell cannot stop
        a long conversion; delete the markers to retry them.
        """
        path = graph_path(self.root, batch, arch_index)
        empty, failed = path.with_suffix(".empty"), path.with_suffix(".failed")
        if path.exists() or empty.exists() or failed.exists():
            return None
        path.parent.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        try:
            arrays = self.arrays(arch, batch)
        except TvmCostError as err:
            if "empty graph" not in str(err):
                raise
            empty.write_text(str(err) + "\n")
            return None
        except Exception as err:  # pylint: disable=broad-except  # TVM's own failure on this cell, kept as one
            last = (str(err).strip().splitlines() or [type(err).__name__])[-1]
            failed.write_text(f"{type(err).__name__}: {last}\n")
            log.warning("nb201 cell %d at batch %d: TVM failed (%s); marked %s", arch_index, batch, last, failed)
            return None
        seconds = time.perf_counter() - start
        save_npz_atomic(path, arrays)
        with open(self.root / "timings.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps({"arch_index": arch_index, "batch": batch, "seconds": round(seconds, 4),
                                "nodes": int(arrays["x"].shape[0])}) + "\n")
        return seconds


def load_graphs(root: str | Path, batch: int) -> dict[int, dict[str, np.ndarray]]:
    """All stored graphs of one batch size: ``{arch_index: arrays}``.

    Raises:
        TvmCostError: If the folder has no graphs for `batch`, or a file is unreadable.
    """
    folder = Path(root) / f"batch{batch}"
    files = sorted(p for p in folder.glob("*.npz") if p.stem.isdigit()) if folder.is_dir() else []
    if not files:
        raise TvmCostError(f"no NAS-Bench-201 graphs for batch {batch} (run scripts/nb201_graphs.py)", path=folder)
    out: dict[int, dict[str, np.ndarray]] = {}
    for path in files:
        try:
            with np.load(path, allow_pickle=False) as data:
                out[int(path.stem)] = {k: data[k] for k in GRAPH_KEYS}
        except (OSError, ValueError, KeyError) as err:
            raise TvmCostError(f"unreadable graph file ({err})", path=path) from None
    return out
