"""The HELP NAS-Bench-201 study: GNNs and baselines predicting measured GPU latencies from TVM operator graphs.

HELP (see `tvm_cost.data.external.help`) timed every NAS-Bench-201 network with PyTorch (cuDNN kernels, not TVM's)
on five GPUs at batch 1, 32 and 256. The graphs are TVM's (`scripts/nb201_graphs.py`), built once per batch size
for one CUDA target; each GPU's datasheet descriptors (`tvm_cost.targets`) replace the hardware columns of `u`, so
one model covers all five GPUs and can be asked about a GPU it never saw (`cross_gpu`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tvm_cost.data.splits import Split
from tvm_cost.estimation.baselines import BoostedAggregates, LinearFlopsBytes
from tvm_cost.estimation.experiment import score_predictions
from tvm_cost.estimation.graph_models import predict_latency_ms, train_graph_model
from tvm_cost.errors import TvmCostError

__all__ = ["HELP_NB201_GPUS", "MODELS", "CellSet", "cross_gpu", "in_distribution", "load_cells", "make_items",
           "op_count_reference", "split_cells", "with_hardware"]

HELP_NB201_GPUS = ("1080ti", "2080ti", "titan_rtx", "titanx", "titanxp")
MODELS = ("seernet", "gcn", "linear_flops_bytes", "gbt_aggregates")


def with_hardware(u: np.ndarray, target: Any) -> np.ndarray:
    """`u` with its hardware columns (`HARDWARE_GLOBALS`) set to those of `target` (a preset such as "cuda-1080ti").

    Shapes:
        u: [1, len(SCHEMA.globals)] -> same.
    """
    from tvm_cost.features.arrays import HARDWARE_GLOBALS, hardware_vector
    from tvm_cost.features.schema import SCHEMA
    from tvm_cost.targets import resolve_target

    hw = resolve_target(target).hardware
    values = hardware_vector({"target_kind": hw.kind, **{f"hw_{k}": v for k, v in hw.as_dict().items()}})
    out = np.array(u, np.float32, copy=True)
    out[:, [SCHEMA.globals.index(c) for c in HARDWARE_GLOBALS]] = values
    return out


@dataclass
class CellSet:
    """The cells of one batch size that have a graph and a HELP latency on every GPU.

    Shapes:
        arch_index: [n]; arrays: n dicts of graph arrays; latency_ms: [n, len(gpus)].
    """

    batch: int
    gpus: tuple[str, ...]
    arch_index: np.ndarray
    arrays: list[dict[str, np.ndarray]]
    latency_ms: np.ndarray


def load_cells(graph_dir: str | Path, help_dir: str | Path, batch: int,
               gpus: Sequence[str] = HELP_NB201_GPUS) -> CellSet:
    """Joins the stored graphs of `batch` with HELP's latencies of `gpus` at that batch size.

    Raises:
        TvmCostError: If no graph of `batch` has latencies on all `gpus`.
    """
    from tvm_cost.data.external.help import help_latency_matrix, load_help
    from tvm_cost.data.external.nasbench201_graphs import load_graphs

    graphs = load_graphs(graph_dir, batch)
    archs, devices, lat = help_latency_matrix(load_help(help_dir, space="nasbench201",
                                                        device=[f"{g}_{batch}" for g in gpus]))
    missing = [g for g in gpus if f"{g}_{batch}" not in devices]
    if missing:
        raise TvmCostError(f"HELP has no NAS-Bench-201 latencies for {', '.join(missing)} at batch {batch}",
                           path=help_dir)
    lat = lat[:, [devices.index(f"{g}_{batch}") for g in gpus]]
    row = {index: i for i, (_, index) in enumerate(archs)}
    keep = [i for i in sorted(graphs) if i in row and np.isfinite(lat[row[i]]).all()]
    if not keep:
        raise TvmCostError(f"no graph of batch {batch} has HELP latencies on {', '.join(gpus)}", path=graph_dir)
    return CellSet(batch, tuple(gpus), np.array(keep), [graphs[i] for i in keep],
                   lat[[row[i] for i in keep]])


def make_items(cells: CellSet, rows: Iterable[int], gpus: Sequence[str]) -> list[Any]:
    """One PyG `Data` per (cell row, GPU): the cell's graph, `u` with that GPU's descriptors, `y` its latency.

    Items of one cell share their `x`, `edge_index` and `edge_attr` tensors. Each also has `latency_ms`, `gpu`
    and `arch_index`.
    """
    import torch
    from torch_geometric.data import Data

    items = []
    for r in rows:
        a = cells.arrays[r]
        x, ei, ea = (torch.from_numpy(a[k]) for k in ("x", "edge_index", "edge_attr"))
        for g in gpus:
            u = torch.from_numpy(with_hardware(a["u"], f"cuda-{g}"))
            latency = float(cells.latency_ms[r, cells.gpus.index(g)])
            items.append(Data(x=x, edge_index=ei, edge_attr=ea, u=u, num_nodes=x.shape[0],
                              y=torch.tensor([[latency]], dtype=torch.float32), latency_ms=latency, gpu=g,
                              arch_index=int(cells.arch_index[r])))
    return items


def split_cells(n: int, *, n_train: int = 1000, val_fraction: float = 0.1, n_test: int | None = None,
                seed: int = 0) -> Split:
    """At most `n_train` cells for training (a `val_fraction` of them for early stopping), the rest (or a seeded
    sample of `n_test` of them) for testing. Indices are rows of a `CellSet`."""
    if n <= 1:
        raise ValueError(f"need at least 2 cells to split, got {n}")
    order = np.random.default_rng(seed).permutation(n)
    n_fit = min(n_train, n - 1)
    n_val = int(round(n_fit * val_fraction))
    rest = order[n_fit:] if n_test is None else order[n_fit:n_fit + n_test]
    return Split(np.sort(order[n_val:n_fit]), np.sort(order[:n_val]), np.sort(rest))


Epochs = int | Mapping[str, int]
"""GNN epochs: one number, or per model kind ({"seernet": 8, "gcn": 30})."""


def _fit_predict(train: list[Any], val: list[Any], tests: dict[str, list[Any]], *, models: Sequence[str],
                 seed: int, epochs: Epochs, linear_hardware: bool) -> dict[str, dict[str, np.ndarray]]:
    """model -> test-set name -> predicted ms. The linear baseline is fit per GPU unless `linear_hardware`."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for name in models:
        if name == "linear_flops_bytes" and not linear_hardware:
            out[name] = {key: LinearFlopsBytes().fit([d for d in train + val if d.gpu == key]).predict(items)
                         for key, items in tests.items()}
            continue
        if name == "linear_flops_bytes":
            model: Any = LinearFlopsBytes(hardware=True).fit(train + val)
        elif name == "gbt_aggregates":
            model = BoostedAggregates(seed).fit(train + val)
        elif name in ("seernet", "gcn"):
            n_epochs = epochs if isinstance(epochs, int) else epochs[name]
            gnn = train_graph_model("seernet" if name == "seernet" else "gcn", train, val, seed=seed,
                                    epochs=n_epochs, heads=("latency",), batch_size=64,
                                    patience=max(5, n_epochs // 4))
            out[name] = {key: predict_latency_ms(gnn, items) for key, items in tests.items()}
            continue
        else:
            raise ValueError(f"unknown model {name!r}; choices: {', '.join(MODELS)}")
        out[name] = {key: model.predict(items) for key, items in tests.items()}
    return out


def in_distribution(cells: CellSet, split: Split, *, models: Sequence[str] = MODELS, seed: int = 0,
                    epochs: Epochs = 40) -> dict[str, dict[str, dict[str, float]]]:
    """One model over all GPUs (the linear baseline: one per GPU), trained on `split.train` + `split.val` cells,
    scored per GPU and over all on `split.test`.

    Returns:
        model -> GPU name or "all" -> {"mape", "within_10pct", "spearman", "n"}.
    """
    gpus = cells.gpus
    train, val = make_items(cells, split.train, gpus), make_items(cells, split.val, gpus)
    tests = {g: make_items(cells, split.test, [g]) for g in gpus}
    preds = _fit_predict(train, val, tests, models=models, seed=seed, epochs=epochs, linear_hardware=False)
    result: dict[str, dict[str, dict[str, float]]] = {}
    for name, by_gpu in preds.items():
        true = {g: np.array([d.latency_ms for d in tests[g]]) for g in gpus}
        result[name] = {g: score_predictions(true[g], by_gpu[g]) for g in gpus}
        result[name]["all"] = score_predictions(np.concatenate([true[g] for g in gpus]),
                                                np.concatenate([by_gpu[g] for g in gpus]))
    return result


def cross_gpu(cells: CellSet, split: Split, held_out: str, *, models: Sequence[str] = MODELS, seed: int = 0,
              epochs: Epochs = 40) -> dict[str, dict[str, float]]:
    """Train on the other GPUs' `split.train` + `split.val` cells; score on `held_out`'s `split.test` cells, which
    the models see only through its descriptors. The linear baseline regresses on the descriptors too.

    Returns:
        model -> {"mape", "within_10pct", "spearman", "n"}.
    """
    if held_out not in cells.gpus:
        raise ValueError(f"unknown GPU {held_out!r}; choices: {', '.join(cells.gpus)}")
    others = [g for g in cells.gpus if g != held_out]
    train, val = make_items(cells, split.train, others), make_items(cells, split.val, others)
    test = make_items(cells, split.test, [held_out])
    preds = _fit_predict(train, val, {held_out: test}, models=models, seed=seed, epochs=epochs,
                         linear_hardware=True)
    true = np.array([d.latency_ms for d in test])
    return {name: score_predictions(true, p[held_out]) for name, p in preds.items()}


def op_count_reference(cells: CellSet, split: Split,
                       archs: Mapping[int, str]) -> dict[str, dict[str, dict[str, float]]]:
    """A reference, not a graph model: per GPU, log latency linear in the counts of each op in the cell string.

    "live_edges" counts only the ops TVM's graph keeps (`none` edges and dead paths dropped, see
    `tvm_cost.data.external.nasbench201`); "all_edges" counts every edge as HELP's PyTorch network ran it,
    ``none`` (a multiply by zero there) included. The gap between the two is information the graph does not have.
    Fit on `split.train` + `split.val`, scored on `split.test`.

    Returns:
        "live_edges" / "all_edges" -> GPU name or "all" -> {"mape", "within_10pct", "spearman", "n"}.
    """
    from tvm_cost.data.external.nasbench201 import NB201_OPS, live_edges, parse_nb201

    def counts(index: int, live: bool) -> list[float]:
        edges = parse_nb201(archs[index])
        kept = live_edges(edges) if live else edges
        return [1.0] + [float(sum(e.op == op for e in kept)) for op in NB201_OPS if not live or op != "none"]

    fit_rows = np.concatenate([split.train, split.val])
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name, live in (("live_edges", True), ("all_edges", False)):
        design = np.array([counts(int(i), live) for i in cells.arch_index])
        scores, trues, preds = {}, [], []
        for j, gpu in enumerate(cells.gpus):
            coef, *_ = np.linalg.lstsq(design[fit_rows], np.log(cells.latency_ms[fit_rows, j]), rcond=None)
            true, pred = cells.latency_ms[split.test, j], np.exp(design[split.test] @ coef)
            scores[gpu] = score_predictions(true, pred)
            trues.append(true)
            preds.append(pred)
        scores["all"] = score_predictions(np.concatenate(trues), np.concatenate(preds))
        out[name] = scores
    return out
