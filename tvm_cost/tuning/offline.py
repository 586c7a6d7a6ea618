"""Offline kernel cost models from measured tuning logs: pretrain the GNN, and compare it with TVM's `XGBModel`,
the decision-aware tree ranker (`tvm_cost.tuning.ranker`) and random scores on the tasks of model families held
out of training.

The split is by model family (``tasks.json`` of a `tvm_cost.collect` folder names the models of each task): test
tasks are those that only held-out families contain; a task that a training family also contains trains. All
learned models see the same training records. `XGBModel` is TVM's own class, fed through its own training step
(`seed_xgb`: per-store feature rows, label = best latency of the task / latency, the pack-sum objective, its early
stopping); only its `predict` is skipped for its inner `_predict`, which needs no tune context.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from tvm_cost.errors import TvmCostError
from tvm_cost.features.schema import NUM_STORE_FEATURES

log = logging.getLogger(__name__)

RANKING_METRICS = ("pairwise_acc", "pairwise_acc_1.1x", "peak@1", "peak@5", "kendall_tau")
APART = 1.1
"""Pairs of "pairwise_acc_1.1x" are at least this factor apart in latency: past the near-ties that measurement noise
orders either way (a re-timed record's median relative spread is 2.4 % here, docs/kernel_model.md, label noise)."""
REGRESSION_METRICS = ("mape", "within_2x", "within_2x_slow")
REGRESSION_MODELS = ("gnn-rank-calibrated", "gnn-times-member", "gnn-uncalibrated", "work-fit", "xgb-reg")
"""Rows with regression metrics only: the two halves of the "gnn" row's times (the ranking network's own head
through `tvm_cost.train.calibration`, and its times member, `times_train_config`), the head uncalibrated, and two
baselines (`regression_baselines`)."""


def task_families(root: str | Path) -> dict[str, set[str]]:
    """Workload hash -> model families (``zoo:gpt,...`` -> ``gpt``) that contain the task, from ``tasks.json``."""
    path = Path(root) / "tasks.json"
    try:
        tasks = json.loads(path.read_text())
        return {h: {m.split(",")[0].removeprefix("zoo:") for m in t["models"]} for h, t in tasks.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise TvmCostError(f"cannot read the task -> model map ({err})", path=path) from None


def family_split(tasks: Sequence[str], families: dict[str, set[str]], test_families: Sequence[str]
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Indices of training and test items: test items belong to tasks that only `test_families` contain.

    Args:
        tasks: The task (workload hash) of each item.
        families: `task_families` of the data folder; tasks missing there train.
        test_families: The held-out families.
    """
    held = set(test_families)
    unknown = held - set().union(*families.values()) if families else held
    if unknown:
        raise TvmCostError(f"no task of the families {sorted(unknown)} in the data; known: "
                           f"{', '.join(sorted(set().union(*families.values())))}")
    is_test = np.array([bool(families.get(t)) and families[t] <= held for t in tasks], bool)
    return np.flatnonzero(~is_test), np.flatnonzero(is_test)


def bound_settings(train: np.ndarray, test: np.ndarray, group: np.ndarray, *, seed: int = 0
                   ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(fit, score) indices of the three settings the feature studies report: ``held_out`` (the training items,
    then the test items), ``in_task_half`` (a seeded half of each test task, then the other half: what the
    features allow a model that has seen the task) and ``training_families_plus_half`` (both, same half scored).

    Args:
        train, test: Item indices, as `family_split` returns them.
        group: The task of every item, [items] int.
    """
    rng = np.random.default_rng(seed)
    half = np.zeros(len(test), bool)
    for g in np.unique(group[test]):
        rows = np.flatnonzero(group[test] == g)
        half[rng.permutation(rows)[:len(rows) // 2]] = True
    return {"held_out": (train, test), "in_task_half": (test[half], test[~half]),
            "training_families_plus_half": (np.concatenate([train, test[half]]), test[~half])}


def ranking_metrics(latency: np.ndarray, score: np.ndarray, group: np.ndarray) -> dict[str, float]:
    """`RANKING_METRICS` within groups (`tvm_cost.train.metrics`): pairwise accuracy over all pairs and over pairs
    `APART` apart, peak@1, peak@5 and Kendall tau."""
    from tvm_cost.train import kendall_tau, pairwise_accuracy, peak_at_k

    return {"pairwise_acc": pairwise_accuracy(latency, score, group),
            "pairwise_acc_1.1x": pairwise_accuracy(latency, score, group, min_ratio=APART),
            "peak@1": peak_at_k(latency, score, group, k=1), "peak@5": peak_at_k(latency, score, group, k=5),
            "kendall_tau": kendall_tau(-latency, score, group)}


def regression_metrics(latency: np.ndarray, predicted_ms: np.ndarray, train_latency: np.ndarray
                       ) -> dict[str, float]:
    """`REGRESSION_METRICS`: MAPE, the share of predictions within 2x of the measured latency, and that share among
    the test kernels slower than 99 % of the training kernels (NaN if none), where a model must extrapolate."""
    from tvm_cost.train import mape, share_within_factor

    slow = latency > np.quantile(train_latency, 0.99)
    return {"mape": mape(latency, predicted_ms), "within_2x": share_within_factor(latency, predicted_ms),
            "within_2x_slow": share_within_factor(latency[slow], predicted_ms[slow]) if slow.any() else float("nan")}


def xgbmodel_scores(train_items: Sequence[Any], test_items: Sequence[Any]) -> np.ndarray:
    """Scores of TVM's `XGBModel` (higher is better) on `test_items` after training on `train_items`.

    Items are kernel-dataset graphs: their first `NUM_STORE_FEATURES` node columns are the PerStoreFeature rows.
    """
    from tvm_cost.tuning.xgb import make_xgb, seed_xgb

    groups: dict[int, tuple[list[np.ndarray], list[float]]] = {}
    for d in train_items:  # by group id: one task measured on two machines (`with_rank_only`) is two groups
        rows, costs = groups.setdefault(int(d.group), ([], []))
        rows.append(d.x[:, :NUM_STORE_FEATURES].numpy())
        costs.append(d.latency_ms * 1e-3)
    model = make_xgb(num_threads=1, num_warmup_samples=0)
    seed_xgb(model, {str(k): (rows, np.asarray(costs)) for k, (rows, costs) in groups.items()})
    inner = getattr(model, "_inst", model)
    rows = [d.x[:, :NUM_STORE_FEATURES].numpy() for d in test_items]
    return np.asarray(inner._predict(rows), np.float64)  # noqa: SLF001


REGRESSION_ROUNDS = 400
REGRESSION_PARAMS = {"objective": "reg:squarederror", "eta": 0.05, "max_depth": 8, "subsample": 0.8,
                     "colsample_bytree": 0.8, "nthread": 1}


def regression_baselines(train_items: Sequence[Any], test_items: Sequence[Any], *, seed: int = 0
                         ) -> dict[str, np.ndarray]:
    """Predicted log-ms of `test_items` by two baselines for the GNN's regression head, fitted on the training
    items' own times (``rank_only`` items skipped):

    - "work-fit": least squares of log latency on (log FLOPs, log bytes, 1), what a kernel's size alone says;
    - "xgb-reg": XGBoost regression (squared error on log ms) over the rows ranker's features (PerStoreFeature
      sums and maxima, the task's globals, the trace's decisions), fitted to what "work-fit" leaves.
    """
    import xgboost as xgb

    from tvm_cost.features.program_schema import WORK_GLOBALS
    from tvm_cost.tuning.ranker import ranker_features

    fit = [d for d in train_items if not is_rank_only(d)]
    y = np.log([d.latency_ms for d in fit])

    def size(items: Sequence[Any]) -> np.ndarray:
        work = np.stack([d.u.numpy().reshape(-1)[list(WORK_GLOBALS)] for d in items]).astype(np.float64)
        return np.c_[work, np.ones(len(items))]

    coef = np.linalg.lstsq(size(fit), y, rcond=None)[0]
    base_fit, base_test = size(fit) @ coef, size(test_items) @ coef
    booster = xgb.train({**REGRESSION_PARAMS, "seed": seed}, xgb.DMatrix(ranker_features(fit, "rows"), y - base_fit),
                        REGRESSION_ROUNDS)
    return {"work-fit": base_test,
            "xgb-reg": base_test + booster.predict(xgb.DMatrix(ranker_features(test_items, "rows")))}


def with_rank_only(primary: Sequence[Any], extra: Sequence[Sequence[Any]]) -> list[Any]:
    """`primary` then each list of `extra` (other machines' candidates) as one training set for `TaskLoss`.

    Items are shallow copies with ``rank_only`` (false for `primary`, true for the rest: they train the ranking
    within their tasks, not this machine's absolute times) and with each extra list's group ids shifted past all
    earlier ones, so one task measured on two machines forms two ranking groups, never one. Without `extra`,
    `primary` as it is.
    """
    import copy

    import torch

    if not extra:
        return list(primary)
    out: list[Any] = []
    offset = 0
    for k, items in enumerate([primary, *extra]):
        for d in items:
            item = copy.copy(d)
            item.group = d.group + offset
            item.rank_only = torch.tensor([k > 0])
            out.append(item)
        offset += max((int(d.group) + 1 for d in items), default=0)
    return out


def is_rank_only(item: Any) -> bool:
    """Whether `item` came from another machine's data (`with_rank_only`)."""
    flag = getattr(item, "rank_only", None)
    return flag is not None and bool(flag)


def ensemble_scores(gnn_score: np.ndarray, xgb_score: np.ndarray, group: np.ndarray) -> np.ndarray:
    """`EnsembleCostModel`'s rule with equal weights: the mean of both models' percentile ranks within each group."""
    from tvm_cost.tuning.ensemble import percentile_ranks

    out = np.zeros(len(group))
    for g in np.unique(group):
        idx = np.flatnonzero(group == g)
        out[idx] = 0.5 * (percentile_ranks(gnn_score[idx]) + percentile_ranks(xgb_score[idx]))
    return out


def predict_log_ms(model: Any, items: Sequence[Any], *, batch_size: int = 256) -> np.ndarray:
    """The model's predicted natural-log latency (ms) of each item, in eval mode, float64 [len(items)]."""
    import torch
    from torch_geometric.loader import DataLoader

    model.eval()
    head = model.head_index()
    with torch.no_grad():
        parts = [model(b)[:, head] for b in DataLoader(list(items), batch_size=batch_size)]
    return torch.cat(parts).double().numpy() if parts else np.zeros(0)


def online_finetuned_scores(pretrained: Any, seen: Sequence[Any], rest: Sequence[Any], config: Any, *, seed: int,
                            round_size: int) -> np.ndarray:
    """Scores (minus predicted log-latency) of `rest` after a copy of `pretrained` is fine-tuned on `seen` in
    rounds of `round_size`, each round as `GNNCostModel.update` runs it (`config`: a `GNNCostModelConfig`)."""
    import copy

    from tvm_cost.tuning.finetune import finetune_optimizer, finetune_steps

    model = copy.deepcopy(pretrained)
    optimizer = finetune_optimizer(model, config)
    graphs = [{"x": d.x.numpy(), "edge_index": d.edge_index.numpy(), "edge_attr": d.edge_attr.numpy(),
               "u": d.u.numpy()} for d in seen]
    latency = np.array([d.latency_ms for d in seen])
    for r in range(len(seen) // round_size):
        end = (r + 1) * round_size
        finetune_steps(model, optimizer, graphs[:end], latency[:end], num_new=round_size, config=config,
                       seed=seed * 1_000_003 + r)
    return -predict_log_ms(model, rest)


def online_comparison_scores(pretrained: Any, seen: Sequence[Any], rest: Sequence[Any], shipped: Any,
                             variants: Mapping[str, Any], *, seed: int, round_size: int,
                             rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Every model's scores of one task's `rest` once its `seen` candidates are measured, as the offline studies
    of online learning compare them: "gnn" (the checkpoint alone), "gnn-online" (fine-tuned with `shipped`, a
    `GNNCostModelConfig`), one fine-tuned copy per `variants` entry (name -> config), "xgb" (`XGBModel` fitted on
    `seen`), "ensemble" (the rank mean of "gnn-online" and "xgb") and "random" (drawn from `rng`)."""
    gnn_online = online_finetuned_scores(pretrained, seen, rest, shipped, seed=seed, round_size=round_size)
    xgb = xgbmodel_scores(seen, rest)
    return {"gnn": -predict_log_ms(pretrained, rest), "gnn-online": gnn_online,
            **{name: online_finetuned_scores(pretrained, seen, rest, config, seed=seed, round_size=round_size)
               for name, config in variants.items()},
            "xgb": xgb, "ensemble": ensemble_scores(gnn_online, xgb, np.zeros(len(rest), np.int64)),
            "random": rng.random(len(rest))}


def times_train_config(train_config: Any) -> Any:
    """`train_config` with the ranking terms off: the log-MSE alone, for the times member of a checkpoint.

    The ranking losses that order candidates best stretch each task's predicted times about 2x (docs/kernel_model.md,
    run thirty); a second network trained on the times alone predicts some held-out families better than any
    calibration of the first, others worse, and the mean of the two is close to the better on each (run
    thirty-one).
    """
    return train_config.replace(rank_weight=0.0, listwise_weight=0.0, task_mse_weight=0.0)


def train_gnn(items: Sequence[Any], *, model_config: Any, train_config: Any, kind: str = "seernet",
              callback: Callable[[dict[str, float]], None] | None = None) -> Any:
    """A freshly built model of `kind` trained on `items` with `train_config`; returns ``(model, history)``."""
    from tvm_cost.models import build_model
    from tvm_cost.train import train

    model = build_model(kind=kind, config=model_config)  # type: ignore[arg-type]
    history = train(model, list(items), None, config=train_config, callback=callback)
    return model, history


def study_configs(global_dim: int, *, seed: int, epochs: int = 40) -> tuple[Any, Any]:
    """(ModelConfig, TrainConfig) of the GNN the feature studies train: `tvm-cost eval`'s defaults written out
    (SeerNet, hidden 64, 3 layers, sum readout, per-work globals; ListMLE, per-task and plain log-MSE, task
    batches, no ranking data), for items whose globals are `global_dim` wide."""
    from tvm_cost.features.program_schema import CANDIDATE_SCHEMA, WORK_GLOBALS
    from tvm_cost.models import ModelConfig
    from tvm_cost.train import TrainConfig

    model_config = ModelConfig.for_schema(CANDIDATE_SCHEMA, hidden=64, layers=3, readout="sum", seed=seed,
                                          work_globals=WORK_GLOBALS).replace(global_dim=global_dim)
    train_config = TrainConfig(epochs=epochs, batch_size=64, lr=2e-3, listwise_weight=1.0, task_mse_weight=1.0,
                               batching="group", patience=None, seed=seed)
    return model_config, train_config


def compare_on_held_out(items: Sequence[Any], train_idx: np.ndarray, test_idx: np.ndarray, *, seeds: Sequence[int],
                        model_config: Any, train_config: Any, store_features: bool = True,
                        on_epoch: Callable[[int, dict[str, float]], None] | None = None) -> dict[str, Any]:
    """GNN (one per seed) vs `XGBModel` vs their rank ensemble vs random on the test items, all in this one call;
    also the decision-aware tree ranker (`tvm_cost.tuning.ranker`, trained once on 3 seeds), its rank ensemble
    with the GNN ("gnn+ranker"), and the ranker on the trace alone ("ranker-trace").

    With two or more seeds, the GNNs of all seeds also score together as a deep ensemble (the mean of their
    predicted log-latencies, as `EnsembleModel` combines its members): one more model, at the cost of one
    forward pass per member.

    The GNN's times are `GNNCostModel`'s: the mean of its ranking head through a `Calibration` fitted on its
    training predictions ("gnn-rank-calibrated") and of a times member trained per seed on the same items
    (`times_train_config`, "gnn-times-member"), as `tvm-cost train` ships them; those two, "gnn-uncalibrated" and
    the `regression_baselines` add regression metrics only. With `store_features` False the GNNs (both networks)
    train and predict on the items without their PerStoreFeature columns (`without_store_features`, as
    ``tvm-cost train --no-store-features``); XGBModel, the rankers and the baselines keep them.

    Returns:
        ``{"per_seed": {seed: {model: metrics}}, "mean": {model: metrics}, "std": ..., "deep_ensemble": metrics
        (None for one seed), "predictions": {"measured_ms", "gnn_ms" (first seed)}}``; the GNN's metrics add
        `regression_metrics` of its times.
    """
    from tvm_cost.data.kernel_dataset import without_store_features
    from tvm_cost.train import fit_calibration, item_log_work
    from tvm_cost.tuning.ranker import ranker_scores

    train_items = [items[int(i)] for i in train_idx]
    test_items = [items[int(i)] for i in test_idx]
    timed = [d for d in train_items if not is_rank_only(d)]  # what calibrations and baselines fit absolute times on
    gnn_view = (lambda d: d) if store_features else without_store_features
    gnn_train, gnn_test, gnn_timed = ([gnn_view(d) for d in part] for part in (train_items, test_items, timed))
    latency = np.array([d.latency_ms for d in test_items])
    train_latency = np.array([d.latency_ms for d in timed])
    group = np.array([int(d.group) for d in test_items])
    xgb_scores = xgbmodel_scores(train_items, test_items)  # deterministic: one fit serves all seeds
    xgb = ranking_metrics(latency, xgb_scores, group)
    ranked = ranker_scores(train_items, test_items)
    ranker = ranking_metrics(latency, ranked, group)
    ranker_trace = ranking_metrics(latency, ranker_scores(train_items, test_items, features="trace"), group)
    baselines = {name: regression_metrics(latency, np.exp(pred), train_latency)
                 for name, pred in regression_baselines(train_items, test_items).items()}
    per_seed: dict[int, dict[str, dict[str, float]]] = {}
    preds: list[np.ndarray] = []
    times: list[np.ndarray] = []
    for seed in seeds:
        model, _ = train_gnn(gnn_train, model_config=model_config.replace(seed=seed),
                             train_config=train_config.replace(seed=seed),
                             callback=None if on_epoch is None else partial(on_epoch, seed))
        times_model, _ = train_gnn(gnn_timed, model_config=model_config.replace(seed=seed),
                                   train_config=times_train_config(train_config.replace(seed=seed)),
                                   callback=None if on_epoch is None else partial(on_epoch, seed))
        if not preds:  # the work columns are the config's, the same for every seed
            work, train_work = item_log_work(model, gnn_test), item_log_work(model, gnn_timed)
        pred = predict_log_ms(model, gnn_test)
        calibrated = fit_calibration(predict_log_ms(model, gnn_timed), train_work, train_latency).apply(pred, work)
        member = predict_log_ms(times_model, gnn_test)
        preds.append(pred)
        times.append(0.5 * (calibrated + member))
        rand = np.random.default_rng(seed).random(len(test_items))
        per_seed[seed] = {"random": ranking_metrics(latency, rand, group), "xgb": xgb,
                          "gnn": {**ranking_metrics(latency, -pred, group),
                                  **regression_metrics(latency, np.exp(times[-1]), train_latency)},
                          "ensemble": ranking_metrics(latency, ensemble_scores(-pred, xgb_scores, group), group),
                          "ranker": ranker, "ranker-trace": ranker_trace,
                          "gnn+ranker": ranking_metrics(latency, ensemble_scores(-pred, ranked, group), group),
                          "gnn-rank-calibrated": regression_metrics(latency, np.exp(calibrated), train_latency),
                          "gnn-times-member": regression_metrics(latency, np.exp(member), train_latency),
                          "gnn-uncalibrated": regression_metrics(latency, np.exp(pred), train_latency), **baselines}
    return {**_over_seeds(per_seed),
            "deep_ensemble": None if len(preds) < 2 else {
                **ranking_metrics(latency, -np.mean(preds, axis=0), group),
                **regression_metrics(latency, np.exp(np.mean(times, axis=0)), train_latency)},
            "predictions": {"measured_ms": latency, "gnn_ms": np.exp(times[0]) if times else None}}


def _over_seeds(per_seed: dict[Any, dict[str, dict[str, float]]]) -> dict[str, Any]:
    """``per_seed`` with the mean and std over seeds of each model's metrics (NaN-aware; NaN where every seed's
    value is NaN, e.g. ``within_2x_slow`` without slow test kernels)."""
    seeds = list(per_seed)
    stack = {n: {k: np.array([per_seed[s][n][k] for s in seeds]) for k in metrics}
             for n, metrics in per_seed[seeds[0]].items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices: the NaN is the answer
        return {"per_seed": per_seed,
                "mean": {n: {k: float(np.nanmean(v)) for k, v in ms.items()} for n, ms in stack.items()},
                "std": {n: {k: float(np.nanstd(v)) for k, v in ms.items()} for n, ms in stack.items()}}


def mean_over_folds(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Leave-one-family-out summary of `compare_on_held_out` results: per seed, each metric averaged over the folds
    (a fold's value is already the mean over its test tasks), then mean and std over seeds.

    Returns:
        ``{"per_seed": {seed: {model: metrics}}, "mean": {model: metrics}, "std": ..., "deep_ensemble": metrics
        averaged over the folds, or None}``.
    """
    first = results[0]["per_seed"]
    deep = [r["deep_ensemble"] for r in results if r.get("deep_ensemble")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a metric NaN in every fold (no slow kernels): NaN it is
        per_seed = {s: {n: {k: float(np.nanmean([r["per_seed"][s][n][k] for r in results])) for k in first[s][n]}
                        for n in first[s]} for s in first}
        deep_mean = {k: float(np.nanmean([d[k] for d in deep])) for k in deep[0]} if deep else None
    return {**_over_seeds(per_seed), "deep_ensemble": deep_mean}


def plot_predicted_vs_measured(path: str | Path, measured_ms: np.ndarray, predicted_ms: np.ndarray, *,
                               title: str) -> Path:
    """A log-log scatter of predicted against measured latency with the identity line, written as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 5))
    ax.scatter(measured_ms, predicted_ms, s=6, alpha=0.5)
    lo = float(min(measured_ms.min(), predicted_ms.min()))
    hi = float(max(measured_ms.max(), predicted_ms.max()))
    ax.plot([lo, hi], [lo, hi], color="black", linewidth=1)
    ax.set(xscale="log", yscale="log", xlabel="measured latency (ms)", ylabel="predicted latency (ms)", title=title)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def data_target(root: str | Path) -> Any:
    """The target a tuning-log folder was measured on (its ``MANIFEST.json``), else None (each record's own)."""
    path = Path(root) / "MANIFEST.json"
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text()).get("target")
    except (OSError, ValueError, AttributeError) as err:
        raise TvmCostError(f"cannot read the manifest ({err})", path=path) from None


def load_kernel_dataset(root: str | Path, *, target_spec: Any = None,
                        on_progress: Callable[[int, int], None] | None = None) -> Any:
    """`KernelDataset` of `root` with `target_spec` defaulting to the folder's manifest target."""
    from tvm_cost.data.kernel_dataset import KernelDataset

    spec = target_spec if target_spec is not None else data_target(root)
    return KernelDataset(root, target_spec=spec, on_progress=on_progress)
