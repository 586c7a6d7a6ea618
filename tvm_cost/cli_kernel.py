"""`tvm-cost train` and `tvm-cost eval`: the kernel cost model from a tuning-log folder (parsing and printing only;
the work is in `tvm_cost.tuning.offline`). `train` also runs under ``torchrun`` (DDP, gloo on CPU)."""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tvm_cost.cli_console import make_console


def register(sub: Any) -> None:
    """Add the ``train`` and ``eval`` sub-commands to the `tvm-cost` sub-parsers `sub`."""
    p = sub.add_parser("train", help="train the GNN kernel cost model on a tuning-log folder (torchrun: DDP)")
    p.add_argument("data", help="folder with database_tuning_record.json[.gz] (e.g. a copy of tuning_logs/llvm-1core)")
    p.add_argument("--out", required=True, help="checkpoint path (writes OUT.safetensors and OUT.json; with "
                                                "--ranker OUT.ubj and OUT.json)")
    p.add_argument("--ranker", action="store_true",
                   help="train the tree ranker over PerStoreFeature rows and trace decisions (RankerCostModel, "
                        "XGBoost rank:pairwise; one process) instead of the GNN; the GNN's options are ignored")
    p.add_argument("--ranker-features", choices=("rows", "trace"), default="rows",
                   help="with --ranker: 'rows' (PerStoreFeature rows + trace decisions; ship as "
                        "<target>-ranker) or 'trace' (the trace alone, no feature extraction; <target>-ranker-trace)")
    p.add_argument("--seed", type=int, default=0, help="seed of the initial weights, shuffling and dropout")
    p.add_argument("--exclude-families", default="", metavar="F1,F2",
                   help="leave out the tasks only these model families contain (tasks.json), e.g. to bench the "
                        "checkpoint on those families")
    p.add_argument("--times", action=argparse.BooleanOptionalAction, default=True,
                   help="also train the times member (OUT-times: the same network on the log-MSE alone, DATA's own "
                        "records only), which GNNCostModel.predict_with_uncertainty averages with the calibrated "
                        "ranking head")
    _add_training_args(p)
    p.set_defaults(func=_train)

    p = sub.add_parser("eval", help="offline metrics on held-out model families: GNN vs TVM's XGBModel vs their "
                                    "rank ensemble vs random, and the decision-aware tree ranker alone and with "
                                    "the GNN")
    p.add_argument("data", help="folder with database_tuning_record.json[.gz] and tasks.json")
    p.add_argument("--test-families", default="gpt,mlp_mixer",
                   help="comma-separated held-out model families, or 'each': leave one family out, a fold per "
                        "family, reported as the mean over folds (for data with few tasks per family)")
    p.add_argument("--seeds", default="0,1,2", help="comma-separated seeds, one GNN training each")
    p.add_argument("--json", metavar="OUT", help="write the report as JSON")
    p.add_argument("--png", metavar="OUT", help="plot predicted vs measured latency of the test tasks (first seed)")
    _add_training_args(p)
    p.set_defaults(func=_eval)


def _add_training_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", help="target JSON or preset for the global features (default: the folder's manifest)")
    p.add_argument("--rank-data", action="append", default=[], metavar="DATA",
                   help="a folder measured on another machine (same target): its candidates train the ranking "
                        "within their tasks, not the absolute times (repeatable; never in the test set)")
    p.add_argument("--epochs", type=int, default=40)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--readout", choices=("pool", "sum"), default="sum",
                   help="graph readout: pooled nodes + global node, or per-store times summed (XGBModel's way)")
    p.add_argument("--per-work", action=argparse.BooleanOptionalAction, default=True,
                   help="predict latency per unit of work (the task's FLOPs + bytes), then scale back, so kernels "
                        "slower than any in training are not capped (--no-per-work: latency itself)")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--batch-size", type=int, default=64, help="candidates per batch (per process under torchrun)")
    p.add_argument("--rank-weight", type=float, default=0.0, help="weight of the pairwise ranking loss")
    p.add_argument("--rank-top-weight", type=float, default=0.0, metavar="P",
                   help="weight each pair of the pairwise loss by (task best / faster latency)^P, so the order "
                        "among fast candidates counts more (0: all pairs alike)")
    p.add_argument("--listwise-weight", type=float, default=1.0, help="weight of the ListMLE loss within tasks")
    p.add_argument("--task-mse-weight", type=float, default=1.0, help="weight of the per-task centered log-MSE")
    p.add_argument("--store-features", action=argparse.BooleanOptionalAction, default=True,
                   help="the GNN reads the PerStoreFeature rows (--no-store-features: the program graph's structure "
                        "and the trace alone; GNNCostModel then never runs the extractor, at some cost in ranking; "
                        "eval's XGBModel and rankers keep the rows)")


def _configs(args: argparse.Namespace, seed: int = 0) -> tuple[Any, Any]:
    from tvm_cost.features.program_schema import CANDIDATE_SCHEMA, WORK_GLOBALS
    from tvm_cost.models import ModelConfig
    from tvm_cost.train import TrainConfig

    model = ModelConfig.for_schema(CANDIDATE_SCHEMA, hidden=args.hidden, layers=args.layers, heads=("latency",),
                                   readout=args.readout, seed=seed, work_globals=WORK_GLOBALS if args.per_work else ())
    train = TrainConfig(epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, rank_weight=args.rank_weight,
                        rank_top_weight=args.rank_top_weight, listwise_weight=args.listwise_weight,
                        task_mse_weight=args.task_mse_weight,
                        batching="group", patience=None, seed=seed)
    return model, train


def _target(args: argparse.Namespace) -> Any:
    if args.target is None:
        return None
    return json.loads(args.target) if args.target.lstrip().startswith("{") else args.target


def _progress(enabled: bool = True) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, \
        TimeRemainingColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    TimeRemainingColumn(), disable=not enabled)


@contextmanager
def _distributed() -> Iterator[tuple[bool, int]]:
    """A gloo process group when started by ``torchrun`` with more than one process; yields (distributed, rank)."""
    import torch.distributed as dist

    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        yield False, 0
        return
    dist.init_process_group("gloo")
    try:
        yield True, dist.get_rank()
    finally:
        dist.destroy_process_group()


def _dataset(args: argparse.Namespace, progress: Any, path: str | None = None) -> Any:
    """The `KernelDataset` of `path` (default: ``args.data``), its features built or read under a progress bar."""
    from tvm_cost.tuning.offline import load_kernel_dataset

    path = path or args.data
    bar = progress.add_task(f"features of {path}", total=None)
    ds = load_kernel_dataset(path, target_spec=_target(args),
                             on_progress=lambda done, total: progress.update(bar, completed=done, total=total))
    progress.update(bar, description=f"features of {path}: {len(ds)} candidates")
    return ds


def _rank_datasets(args: argparse.Namespace, progress: Any) -> list[tuple[str, Any]]:
    """(folder, `KernelDataset`) of each ``--rank-data`` folder; one measured for another target is refused."""
    from tvm_cost.errors import TvmCostError
    from tvm_cost.tuning.offline import data_target

    own = data_target(args.data)
    for path in args.rank_data:
        if args.target is None and data_target(path) != own:
            raise TvmCostError(f"measured for target {data_target(path)}, not {own} as {args.data}; --rank-data "
                               f"needs the same target", path=path)
    return [(path, _dataset(args, progress, path)) for path in args.rank_data]


def _kept(ds: Any, path: str, excluded: list[str]) -> list[Any]:
    """The candidates of `ds` (the folder `path`) without the tasks only the `excluded` families contain."""
    from tvm_cost.tuning.offline import family_split, task_families

    keep = family_split(ds.groups, task_families(path), excluded)[0] if excluded else range(len(ds))
    return [ds[int(i)] for i in keep]


def _train(args: argparse.Namespace) -> None:
    import numpy as np
    import torch
    from importlib.metadata import version

    import torch.distributed as dist

    from tvm_cost.collect.manifest import manifest_gpu
    from tvm_cost.data.kernel_dataset import without_store_features
    from tvm_cost.features.program_schema import CANDIDATE_SCHEMA
    from tvm_cost.train import fit_calibration, item_log_work, pairwise_accuracy, save_checkpoint, \
        share_within_factor
    from tvm_cost.tuning.checkpoints import TIMES_SUFFIX
    from tvm_cost.tuning.offline import data_target, predict_log_ms, times_train_config, train_gnn, with_rank_only

    if args.ranker:
        _train_ranker(args)
        return
    torch.set_num_threads(1)
    model_config, train_config = _configs(args, args.seed)
    with _distributed() as (distributed, rank):
        with _progress(enabled=rank == 0) as progress:
            if distributed and rank != 0:
                dist.barrier()  # rank 0 builds the feature cache first; the others read it
            ds = _dataset(args, progress)
            rank_sets = _rank_datasets(args, progress)
            if distributed and rank == 0:
                dist.barrier()
            excluded = [f for f in args.exclude_families.split(",") if f]
            items = _kept(ds, args.data, excluded)
            extra = [_kept(other, path, excluded) for path, other in rank_sets]
            if not args.store_features:
                items = [without_store_features(d) for d in items]
                extra = [[without_store_features(d) for d in e] for e in extra]
            bar = progress.add_task("train", total=train_config.epochs)
            t0 = time.perf_counter()
            model, history = train_gnn(with_rank_only(items, extra), model_config=model_config,
                                       train_config=train_config,
                                       callback=lambda r: progress.update(
                                           bar, advance=1, description=f"train (loss {r['train_loss']:.3f})"))
            times_model, times_config = None, times_train_config(train_config)
            if args.times:  # this machine's records only: other machines' times are not this one's
                bar = progress.add_task("train the times member", total=train_config.epochs)
                times_model, _ = train_gnn(items, model_config=model_config,
                                           train_config=times_config,
                                           callback=lambda r: progress.update(
                                               bar, advance=1,
                                               description=f"train the times member (loss {r['train_loss']:.3f})"))
            train_s = time.perf_counter() - t0
        if rank != 0:
            return
        latency = np.array([d.latency_ms for d in items])
        group = [int(d.group) for d in items]
        tasks = len(set(group))
        pred = predict_log_ms(model, items)
        fit_acc = pairwise_accuracy(latency, -pred, group)
        work = item_log_work(model, items)
        calibration = fit_calibration(pred, work, latency)  # on this machine's times, never the --rank-data ones
        within = [share_within_factor(latency, np.exp(p)) for p in (pred, calibration.apply(pred, work))]
        target = _target(args) or data_target(args.data)
        times_name = None
        if times_model is not None:
            times_path = save_checkpoint(
                f"{Path(args.out)}{TIMES_SUFFIX}", times_model, schema=CANDIDATE_SCHEMA,
                extra={"role": "times", "target": target, "data": str(args.data), "records": len(items),
                       "store_features": args.store_features,
                       "excluded_families": excluded, "measured_on": _measured_on(args.data, target),
                       "train_config": times_config.to_dict()})
            times_name = times_path.stem
            within.append(share_within_factor(latency, np.exp(predict_log_ms(times_model, items))))
        weights = save_checkpoint(args.out, model, schema=CANDIDATE_SCHEMA, extra={
            "calibration": calibration.to_dict(), "times": times_name, "target": target, "data": str(args.data),
            "records": len(items), "store_features": args.store_features,
            "tasks": tasks, "excluded_families": excluded,
            "rank_data": [{"data": str(path), "records": len(e), "measured_on": _measured_on(path, target)}
                          for (path, _), e in zip(rank_sets, extra, strict=True)],
            "measured_on": _measured_on(args.data, target), "gpu": manifest_gpu(args.data),
            "train_config": train_config.to_dict(), "processes": dist.get_world_size() if distributed else 1,
            "tvm_version": version("apache-tvm"), "tvm_ffi_version": version("apache-tvm-ffi")})
    make_console().print(
        f"trained on {len(items)} candidates of {tasks} tasks ({args.data}"
        f"{', without ' + ','.join(excluded) if excluded else ''}"
        f"{''.join(f'; ranking also from {len(e)} of {p}' for (p, _), e in zip(rank_sets, extra))}), "
        f"{len(history.records)} epochs "
        f"in {train_s:.0f} s, final train loss {history.records[-1]['train_loss']:.4f}, pairwise accuracy on the "
        f"training data {fit_acc:.3f}; times within 2x of the measured {within[0]:.2f} as predicted, "
        f"{within[1]:.2f} calibrated (scale {calibration.scale:.2f})"
        f"{f', {within[2]:.2f} by the times member {times_name}' if times_name else ''}; checkpoint {weights} "
        f"({weights.stat().st_size / 1e6:.2f} MB) + .json")


def _train_ranker(args: argparse.Namespace) -> None:
    """``tvm-cost train --ranker``: one booster over DATA and the ``--rank-data`` folders, each task a group."""
    from importlib.metadata import version

    import numpy as np
    import xgboost as xgb

    from tvm_cost.errors import TvmCostError
    from tvm_cost.train import pairwise_accuracy
    from tvm_cost.tuning.offline import data_target, with_rank_only
    from tvm_cost.tuning.ranker import ranker_features, save_ranker, train_booster

    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise TvmCostError("--ranker trains in one process (XGBoost uses the cores itself); run it without torchrun")
    excluded = [f for f in args.exclude_families.split(",") if f]
    with _progress() as progress:
        sets = [(args.data, _kept(_dataset(args, progress), args.data, excluded))]
        sets += [(path, _kept(ds, path, excluded)) for path, ds in _rank_datasets(args, progress)]
        progress.add_task("train the ranker (XGBoost rank:pairwise)", total=None)
        t0 = time.perf_counter()
        items = with_rank_only(sets[0][1], [kept for _, kept in sets[1:]])  # each machine's tasks apart
        latency = np.array([d.latency_ms for d in items])
        group = np.array([int(d.group) for d in items])
        features = ranker_features(items, args.ranker_features)
        booster = train_booster(features, latency, group, seed=args.seed)
        train_s = time.perf_counter() - t0
    fit_acc = pairwise_accuracy(latency, booster.predict(xgb.DMatrix(features)), group.tolist())
    target = _target(args) or data_target(args.data)
    weights = save_ranker(args.out, booster, features=args.ranker_features, extra={
        "target": target, "excluded_families": excluded, "seed": args.seed, "tvm_version": version("apache-tvm"),
        "data": [{"data": str(path), "records": len(kept), "tasks": len({int(d.group) for d in kept}),
                  "measured_on": _measured_on(path, target)} for path, kept in sets]})
    make_console().print(
        f"{args.ranker_features!r} ranker trained on {len(items)} candidates of {len(set(group.tolist()))} tasks "
        f"({', '.join(f'{len(kept)} of {path}' for path, kept in sets)}"
        f"{', without ' + ','.join(excluded) if excluded else ''}) in {train_s:.0f} s, pairwise accuracy on the "
        f"training data {fit_acc:.3f}; {weights} ({weights.stat().st_size / 1e6:.2f} MB) + .json")


def _measured_on(data: str, target: Any) -> str | None:
    """The CPU a CPU target's training latencies were timed on (the data folder's MANIFEST); None for GPUs, whose
    records name their GPU under ``gpu``."""
    from tvm_cost.collect.manifest import manifest_cpu

    kind = target.get("kind") if isinstance(target, dict) else str(target or "")
    return manifest_cpu(data) if str(kind).startswith("llvm") else None


def _eval(args: argparse.Namespace) -> None:
    import numpy as np
    import torch

    from tvm_cost.tuning.offline import plot_predicted_vs_measured

    torch.set_num_threads(1)
    seeds = [int(s) for s in args.seeds.split(",")]
    configs = _configs(args)
    t0 = time.perf_counter()
    ds, folds, results, fold_reports = _eval_folds(args, seeds, configs)
    report, summary = _eval_report(args, ds, folds, results, fold_reports, seeds, configs, time.perf_counter() - t0)
    console = make_console()
    console.print(_eval_table(args, report, summary))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
        console.print(f"wrote {args.json}")
    if args.png:
        held = "each family held out in turn" if args.test_families == "each" else \
            f"held-out {', '.join(folds[0])}"
        plot_predicted_vs_measured(args.png, np.concatenate([r["predictions"]["measured_ms"] for r in results]),
                                   np.concatenate([r["predictions"]["gnn_ms"] for r in results]),
                                   title=f"GNN, {held} (seed {seeds[0]})")
        console.print(f"wrote {args.png}")


def _eval_folds(args: argparse.Namespace, seeds: list[int], configs: tuple[Any, Any]
                ) -> tuple[Any, list[list[str]], list[dict], dict]:
    """Train and score every held-out fold: (dataset, folds, per-fold results, per-fold report entries)."""
    import numpy as np

    from tvm_cost.errors import TvmCostError
    from tvm_cost.tuning.offline import compare_on_held_out, family_split, task_families, with_rank_only

    families = task_families(args.data)
    folds = [[f] for f in sorted(set().union(*families.values()))] if args.test_families == "each" else \
        [[f for f in args.test_families.split(",") if f]]
    model_config, train_config = configs
    results, fold_reports = [], {}
    with _progress() as progress:
        ds = _dataset(args, progress)
        rank_sets = _rank_datasets(args, progress)
        items = [ds[i] for i in range(len(ds))]
        per_seed = 2 * train_config.epochs  # the ranking network and its times member
        bar = progress.add_task("train GNNs", total=len(folds) * len(seeds) * per_seed)
        for fold in folds:
            train_idx, test_idx = family_split(ds.groups, families, fold)
            if len(test_idx) == 0:  # every task of the family is shared with another family: nothing to hold out
                progress.update(bar, advance=len(seeds) * per_seed)
                continue
            fold_items = with_rank_only(items, [_kept(other, path, fold) for path, other in rank_sets])
            train_idx = np.concatenate([train_idx, np.arange(len(items), len(fold_items))])
            result = compare_on_held_out(
                fold_items, train_idx, test_idx, seeds=seeds, model_config=model_config, train_config=train_config,
                store_features=args.store_features,
                on_epoch=lambda seed, r: progress.update(  # called within this iteration only
                    bar, advance=1, description=f"train GNN {','.join(fold)} seed {seed}"))
            groups = [ds.groups[int(i)] for i in test_idx]
            fold_reports[",".join(fold)] = {
                "train_records": len(train_idx), "test_records": len(test_idx),
                "train_tasks": len({int(fold_items[int(i)].group) for i in train_idx}), "test_tasks": len(set(groups)),
                "rank_only_records": len(fold_items) - len(items),
                "test_tasks_with_pairs": sum(1 for g in set(groups) if groups.count(g) > 1),
                **{k: result[k] for k in ("mean", "std", "deep_ensemble")},
                "per_seed": {str(s): v for s, v in result["per_seed"].items()}}
            results.append(result)
    if not results:
        raise TvmCostError("no task belongs only to the held-out families (every one is shared with another "
                           "family), so nothing can be held out", path=args.data)
    return ds, folds, results, fold_reports


def _eval_report(args: argparse.Namespace, ds: Any, folds: list[list[str]], results: list[dict],
                 fold_reports: dict, seeds: list[int], configs: tuple[Any, Any], elapsed_s: float
                 ) -> tuple[dict, dict]:
    """The JSON report of `tvm-cost eval` and the summary its table shows (the mean over folds for "each")."""
    from tvm_cost.tuning.offline import mean_over_folds

    each = args.test_families == "each"
    model_config, train_config = configs
    summary = mean_over_folds(results) if each else results[0]
    report = {"data": str(args.data), "records": len(ds), "tasks": len(ds.tasks), "rank_data": args.rank_data,
              "seeds": seeds, "store_features": args.store_features,
              "model_config": model_config.to_dict(), "train_config": train_config.to_dict(),
              "elapsed_s": round(elapsed_s, 1),
              **({"test_families": "each", "folds": fold_reports} if each else
                 {"test_families": folds[0], **{k: v for k, v in fold_reports[",".join(folds[0])].items()
                                                if k not in ("mean", "std", "deep_ensemble", "per_seed")}}),
              **{k: summary[k] for k in ("mean", "std", "deep_ensemble")},
              "per_seed": {str(s): v for s, v in summary["per_seed"].items()}}
    return report, summary


def _eval_table(args: argparse.Namespace, report: dict, summary: dict) -> Any:
    """A rich table of every model's metrics, mean ± std over seeds."""
    from rich.table import Table

    from tvm_cost.tuning.offline import RANKING_METRICS, REGRESSION_METRICS, REGRESSION_MODELS

    if args.test_families == "each":
        folds = report["folds"]
        title = (f"leave one family out: {len(folds)} folds ({', '.join(folds)}), "
                 f"{sum(f['test_records'] for f in folds.values())} test candidates; mean over folds, "
                 f"mean ± std over seeds {args.seeds}")
    else:
        title = (f"held-out families {', '.join(report['test_families'])}: {report['test_tasks']} tasks "
                 f"({report['test_tasks_with_pairs']} with 2+ candidates), {report['test_records']} candidates; "
                 f"mean ± std over seeds {args.seeds}")
    if not args.store_features:
        title += "; the GNN without PerStoreFeature rows"
    table = Table(title=title, caption="gnn: ranks by the ranking network; its times are the mean of "
                                        "gnn-rank-calibrated (that network's head, calibrated) and gnn-times-member")
    table.add_column("model")
    for name in (*RANKING_METRICS, *REGRESSION_METRICS):
        table.add_column(name, justify="right")
    for name in ("random", "xgb", "gnn", "ensemble", "ranker", "gnn+ranker", "ranker-trace", *REGRESSION_MODELS):
        mean, std = summary["mean"][name], summary["std"][name]
        table.add_row(name, *(f"{mean[k]:.3f} ± {std[k]:.3f}" if k in mean else ""
                              for k in (*RANKING_METRICS, *REGRESSION_METRICS)))
    if summary["deep_ensemble"]:
        deep = summary["deep_ensemble"]
        table.add_row(f"gnn x{len(report['seeds'])} (deep ensemble of the seeds)",
                      *(f"{deep[k]:.3f}" for k in (*RANKING_METRICS, *REGRESSION_METRICS)))
    return table
