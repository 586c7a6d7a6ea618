"""Entry points: pick a cost model by kind and tune a TIR function or a whole model with MetaSchedule.

``tune_tir`` and ``tune_model`` are thin wrappers over ``ms.tune_tir`` and ``ms.relax_integration.tune_relax``:
they resolve the target and the cost model once, lower a model the way TVM compiles it (`relay_passes.lower`:
legalized and fused, the module MetaSchedule extracts tasks from), and default the builder to the project's
persistent `FastBuilder` (`tvm_cost.collect.fast`): MetaSchedule's `LocalBuilder` starts a fresh pool per batch
whose workers import the tensor intrinsics (20-40 s on two busy cores) inside the build timeout, and a 120 s
timeout was seen to fail all 8 builds of a tiny matmul here.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import tvm
    from tvm.s_tir import meta_schedule as ms

    from tvm_cost.tuning.config import GNNCostModelConfig

log = logging.getLogger(__name__)

CostModelKind = Literal["auto", "gnn", "xgb", "ensemble", "ranker", "gnn+ranker", "ranker-trace", "ranker-screened",
                        "gnn-screened", "random"]
COST_MODEL_KINDS: tuple[str, ...] = ("auto", "gnn", "xgb", "ensemble", "ranker", "gnn+ranker", "ranker-trace",
                                     "ranker-screened", "gnn-screened", "random")
AUTO_WITH_RANKER = "ranker-trace"
"""What "auto" tunes with where its ranker ships for the target: on held-out CPU tasks the ranker on the trace
alone was ahead of XGBModel and the other rankers at every budget, reached XGBModel's 128-trial best in a median of
34 trials over 84 runs, and costs 0.06-0.18x XGBModel's predict (docs/kernel_model.md, runs twenty-four to
twenty-seven)."""
DEFAULT_BUILD_TIMEOUT_SEC = 120.0


def _tvm_target(target: Any) -> tvm.target.Target:
    import tvm

    from tvm_cost.targets import resolve_target

    if isinstance(target, tvm.target.Target):
        return target
    return resolve_target(target).tvm_target()


def make_cost_model(kind: CostModelKind | ms.cost_model.CostModel, *, target: Any = None, seed: int | None = None,
                    checkpoint: str | Path | None = "auto", ranker: str | Path | None = "auto",
                    gnn_config: GNNCostModelConfig | None = None) -> ms.cost_model.CostModel:
    """A MetaSchedule cost model by kind, or `kind` itself when it already is one.

    Args:
        kind: "auto" (`auto_kind`: "ranker-trace" where its booster ships for `target`, else "ensemble"),
            "gnn" (`GNNCostModel`, the checkpoint shipped for `target` or untrained), "xgb" (MetaSchedule's
            `XGBModel`, with its thread count applied), "ensemble" (`EnsembleCostModel` of both), "ranker"
            (`RankerCostModel`, the tree ranker over rows and trace decisions, pretrained), "gnn+ranker"
            (`EnsembleCostModel` of the GNN and the ranker, one featurizer; equal weights from the start, or,
            without a pretrained ranker for the target, the ranker weighted in once it has fit its booster),
            "ranker-trace" (`RankerCostModel` on the trace alone: no PerStoreFeature), "ranker-screened"
            (`ScreenedCostModel`: "ranker-trace" screens, "ranker" ranks the quarter it keeps), "gnn-screened"
            ("ranker-trace" screens, the GNN ranks the quarter it keeps), "random" (`RandomModel`), or a
            `ms.cost_model.CostModel` instance.
        target: The tuning target (picks the GNN checkpoint); None: found from the first tune context.
        seed: Seed of the GNN's initial weights / dropout, or of the random model.
        checkpoint: The GNN's weights ("gnn", "ensemble", "gnn+ranker", "gnn-screened"): "auto" (shipped for
            `target`), None (untrained) or a path (`GNNCostModel`'s `checkpoint`).
        ranker: The rankers' boosters (every kind with "ranker" or "screened" in its name): "auto", None
            or the path ``OUT`` of a "rows" booster (`RankerCostModel`), whose "trace" booster is ``OUT-trace``.
        gnn_config: The GNN's online settings (its fine-tuning, e.g.); None: `GNNCostModelConfig` with `seed`.

    Raises:
        ValueError: An unknown kind (the message lists the choices), or "auto" without a target.
    """
    from tvm.s_tir import meta_schedule as ms

    from tvm_cost.tuning.config import GNNCostModelConfig
    from tvm_cost.tuning.cost_model import GNNCostModel
    from tvm_cost.tuning.ensemble import EnsembleCostModel
    from tvm_cost.tuning.xgb import make_xgb

    if isinstance(kind, ms.cost_model.CostModel):
        return kind
    if not isinstance(kind, str) or kind not in COST_MODEL_KINDS:
        raise ValueError(f"unknown cost model {kind!r}; choices: {', '.join(COST_MODEL_KINDS)} "
                         "(or a ms.cost_model.CostModel)")
    if kind == "auto":
        kind = auto_kind(target)
    config = gnn_config or GNNCostModelConfig(seed=seed or 0)
    if kind == "gnn":
        return GNNCostModel(checkpoint=checkpoint, target=target, config=config)
    if kind == "xgb":
        return make_xgb()
    if kind == "ensemble":
        return EnsembleCostModel(GNNCostModel(checkpoint=checkpoint, target=target, config=config))
    if kind in ("ranker", "gnn+ranker", "ranker-trace", "ranker-screened", "gnn-screened"):
        from tvm_cost.tuning.ranker_model import MIN_FIT, RankerCostModel, trace_checkpoint
        from tvm_cost.tuning.replay import CandidateFeaturizer
        from tvm_cost.tuning.screen import ScreenedCostModel

        def trace_ranker(featurizer: CandidateFeaturizer) -> RankerCostModel:
            return RankerCostModel(trace_checkpoint(ranker), target=target, featurizer=featurizer, features="trace",
                                   seed=seed or 0)

        if kind == "ranker":
            return RankerCostModel(ranker, target=target, seed=seed or 0)
        if kind in ("ranker-trace", "ranker-screened"):
            featurizer = CandidateFeaturizer(walk=False)  # the task's globals computed once for both
            screen = trace_ranker(featurizer)
            if kind == "ranker-trace":
                return screen
            return ScreenedCostModel(screen, RankerCostModel(ranker, target=target, featurizer=featurizer,
                                                             seed=seed or 0))
        gnn = GNNCostModel(checkpoint=checkpoint, target=target, config=config)
        if kind == "gnn-screened":
            return ScreenedCostModel(trace_ranker(gnn.featurizer), gnn)
        member = RankerCostModel(ranker, target=target, featurizer=gnn.featurizer, seed=seed or 0)
        # a pretrained ranker counts fully from the first call; one learning from this tune only once it has fit
        return EnsembleCostModel(gnn, member, xgb_warmup=0 if member.base is not None else MIN_FIT)
    return ms.cost_model.RandomModel(seed=seed)


def auto_kind(target: Any) -> str:
    """The kind "auto" picks for `target`: `AUTO_WITH_RANKER` where its ranker ships for the target's family
    (``llvm-*``: `llvm-1core-ranker-trace`), else "ensemble" (the GNN augmenting XGBModel; no ranker ships for CUDA,
    whose 192 measured candidates the GNN ranks better).

    Raises:
        ValueError: `target` is None (the choice depends on it).
    """
    from tvm_cost.tuning.checkpoints import shipped_checkpoint, target_name
    from tvm_cost.tuning.ranker_model import SUFFIXES

    if target is None:
        raise ValueError('cost model "auto" needs the target; name a kind, or pass target=')
    if shipped_checkpoint(target_name(target), suffix=SUFFIXES["trace"], warn=False) is not None:
        return AUTO_WITH_RANKER
    return "ensemble"


def default_builder(target: tvm.target.Target) -> Any:
    """A persistent build pool that skips the tensor-intrinsics import (`tvm_cost.collect.fast.FastBuilder`)."""
    from tvm_cost.collect.fast import make_builder

    return make_builder("fast", timeout_sec=DEFAULT_BUILD_TIMEOUT_SEC, target=target)


@contextmanager
def _builder(builder: Any, target: tvm.target.Target) -> Iterator[Any]:
    """`builder`, or a default one that is closed (its workers stopped) when the tune ends."""
    if builder is not None:
        yield builder
        return
    own = default_builder(target)
    try:
        yield own
    finally:
        own.close()


def tune_tir(
    mod: tvm.IRModule | tvm.tirx.PrimFunc,
    *,
    target: Any,
    cost_model: CostModelKind | ms.cost_model.CostModel = "auto",
    max_trials: int,
    work_dir: str | Path,
    builder: Any = None,
    runner: Any = None,
    seed: int | None = None,
    num_trials_per_iter: int = 64,
    strategy: Any = "evolutionary",
    measure_callbacks: Any = "default",
) -> ms.Database:
    """Tune a PrimFunc (or a module of them) with MetaSchedule, guided by `cost_model`.

    Args:
        mod: The TIR to tune.
        target: A preset ("llvm", "cuda-sm90" ...), a target JSON or a `tvm.target.Target`.
        cost_model: A kind for `make_cost_model` or a cost model object.
        max_trials: Measured candidates in total.
        work_dir: MetaSchedule's folder (JSON database, logs).
        builder, runner: MetaSchedule builder/runner; None: `default_builder(target)` (closed at the end) and
            MetaSchedule's `LocalRunner` with its default evaluator.
        seed: Seed of the search (MetaSchedule's multi-threaded search is not reproducible anyway) and the model.
        num_trials_per_iter, strategy, measure_callbacks: Passed to ``ms.tune_tir``.

    Returns:
        The tuning database.
    """
    from tvm.s_tir import meta_schedule as ms

    tvm_target = _tvm_target(target)
    model = make_cost_model(cost_model, target=tvm_target, seed=seed)
    with _builder(builder, tvm_target) as the_builder:
        return ms.tune_tir(
            mod, tvm_target, str(work_dir), max_trials,
            num_trials_per_iter=num_trials_per_iter, builder=the_builder,
            runner=runner if runner is not None else "local", cost_model=model,
            strategy=strategy, measure_callbacks=measure_callbacks, seed=seed,
        )


def tune_model(
    model: Any,
    *,
    target: Any,
    cost_model: CostModelKind | ms.cost_model.CostModel = "auto",
    max_trials: int,
    work_dir: str | Path,
    builder: Any = None,
    runner: Any = None,
    seed: int | None = None,
    max_trials_per_task: int | None = None,
    num_trials_per_iter: int = 64,
    example_inputs: tuple[Any, ...] | None = None,
    strategy: Any = "evolutionary",
    measure_callbacks: Any = "default",
) -> ms.Database:
    """Tune every kernel of a model with MetaSchedule (``tune_relax``), guided by `cost_model`.

    Args:
        model: Anything `tvm_cost.importer.import_model` takes (a zoo spec, an ONNX path, a torch module with
            `example_inputs`, an ExportedProgram) or a Relax IRModule, or a `relay_passes.lower.LoweredModule`
            (used as is). Models are lowered with `relay_passes.lower.lower` (legalized and fused).
        target, cost_model, max_trials, work_dir, builder, runner, seed, num_trials_per_iter, strategy,
            measure_callbacks: As in `tune_tir`.
        max_trials_per_task: Cap per kernel; None: MetaSchedule's default (``max_trials``).

    Returns:
        The tuning database. Compile the model from before fusion with it (``compile_relax`` fuses again).
    """
    import tvm
    from tvm.s_tir import meta_schedule as ms

    from relay_passes.lower import LoweredModule, lower

    tvm_target = _tvm_target(target)
    if isinstance(model, LoweredModule):
        fused = model.mod
    else:
        if not isinstance(model, tvm.IRModule):
            from tvm_cost.importer import import_model

            model = import_model(model, example_inputs=example_inputs).mod
        fused = lower(model, tvm_target).mod
    model = make_cost_model(cost_model, target=tvm_target, seed=seed)
    with _builder(builder, tvm_target) as the_builder:
        return ms.relax_integration.tune_relax(
            fused, {}, tvm_target, str(work_dir), max_trials,
            max_trials_per_task=max_trials_per_task, num_trials_per_iter=num_trials_per_iter,
            builder=the_builder, runner=runner if runner is not None else "local", cost_model=model,
            strategy=strategy, measure_callbacks=measure_callbacks, seed=seed,
        )
