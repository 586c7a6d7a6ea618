"""`GNNCostModel`: a MetaSchedule cost model that scores candidates with a graph network over program graphs.

Plug it into any MetaSchedule tune (``ms.tune_tir(..., cost_model=GNNCostModel())``). The contract MetaSchedule
uses is four methods; how this model fills them:

- **predict** -- program graphs of the candidates (`tvm_cost.features.program_graph`) -> predicted log-latency
  ``p`` -> score ``exp((min(p) - p) / temperature)``: the predicted throughput relative to the best candidate of the
  call, in (0, 1], best = 1 (like `XGBModel`'s best-cost / cost label). Evolutionary search picks the top scores
  and samples parents in proportion to them, so the scores are positive and ratio-like.
- **update** -- the built, non-failed results (latency = mean ``run_secs``, in ms) join a per-task replay buffer;
  then `update_steps` AdamW steps on batches of that task (newest results first, the rest drawn from the buffer)
  minimize a pairwise ranking loss within the task plus a small log-space MSE. A model built untrained first
  takes its input standardization from the measured graphs.
- **save / load** -- a folder: ``model.safetensors`` + ``model.json`` (`tvm_cost.train.save_checkpoint`),
  ``times.safetensors`` + ``times.json`` where the weights have a times member, ``buffer.npz`` (the replay buffer,
  no pickle), ``state.json``, and ``xgb.tar`` after a fallback. `load` also takes a bare training checkpoint
  (weights only). Untrained models save and load like trained ones.

**Weights.** ``GNNCostModel()`` loads the checkpoint shipped for the tune's target
(``tvm_cost/checkpoints/<target name>.safetensors``, found at first use from the tune context) and otherwise
starts untrained with a warning. A checkpoint that is truncated, does not match `CANDIDATE_SCHEMA` or the model
classes is refused with a one-line `TvmCostError`.

**Times.** `predict_with_uncertainty` gives each candidate's predicted ln(ms). The ranking loss stretches the
ranking network's own predictions within a task, so they pass through the `Calibration` stored with the checkpoint
(identity if none; docs/kernel_model.md, run thirty). A checkpoint from `tvm-cost train` also names a **times
member** (``<name>-times``: the same network trained on the log-MSE alone); the times are then the mean of the two,
each better on different held-out families (run thirty-one). Once the tune has measured candidates of the task,
they are shifted by the median of their measured-minus-predicted ln(ms): the task's level, the part of the error
that its own measurements fix directly.

**Fallback.** Any exception inside predict/update logs a warning and hands the rest of the tune to an internal
`XGBModel`, seeded with the candidates measured so far (unseeded behind weights that read no PerStoreFeature rows,
such as the shipped CPU ones: the buffer then holds none to give it), instead of crashing the tune.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tvm.ir.utils import derived_object
from tvm.s_tir.meta_schedule.cost_model import PyCostModel

from tvm_cost.atomic import atomic_open
from tvm_cost.data.kernel_dataset import to_data
from tvm_cost.errors import TvmCostError
from tvm_cost.features.program_graph import to_pyg_batch
from tvm_cost.features.program_schema import CANDIDATE_SCHEMA
from tvm_cost.features.schema import NUM_STORE_FEATURES
from tvm_cost.models import CostModel, ModelConfig, build_model
from tvm_cost.models.base import GraphCostModel, log_work
from tvm_cost.train.calibration import Calibration
from tvm_cost.tuning.checkpoints import shipped_checkpoint, target_name
from tvm_cost.tuning.config import GNNCostModelConfig
from tvm_cost.tuning.finetune import finetune_optimizer, finetune_steps, fit_input_normalization
from tvm_cost.tuning.replay import CandidateFeaturizer, ReplayBuffer, measured_latency_ms, task_key
from tvm_cost.tuning.scoring import one_line, python_side_save_load, scores_from_log_latency, torch_threads
from tvm_cost.tuning.xgb import load_xgb, make_xgb, save_xgb, seed_xgb

log = logging.getLogger(__name__)

STATE_FORMAT = "tvm-cost-gnn-cost-model"
STATE_VERSION = 1


def reads_store_features(model: CostModel) -> bool:
    """Whether `model` reads any PerStoreFeature column of its graphs' nodes. False when every one was constant in
    its training (`tvm-cost train --no-store-features`), so standardizes to 0 whatever its value: the graphs then
    need no extraction (`CandidateFeaturizer.graphs(..., store_features=False)`). An untrained model reads them."""
    stds = [m.x_std[:NUM_STORE_FEATURES] for m in model.modules() if isinstance(m, GraphCostModel)]
    return any(bool(torch.isfinite(std).any()) for std in stds)


@derived_object
class GNNCostModel(PyCostModel):
    """A GNN cost model for MetaSchedule (see the module docstring for the score, update and fallback rules).

    Reading the PerStoreFeature rows, on held-out CPU tasks (population 128) it led XGBModel up to 64 trials in
    every seed set, ended at 0.91-1.03x its best at 128, and reached XGBModel's 128-trial best in a median of 74
    trials over 432 runs (95 % interval over seed sets: 53.5 to 93; XGBModel itself needed 1.54x as many, paired
    by set); before it read the trace decisions it trailed late, and at MetaSchedule's default population of 512
    it ended 15 % behind (docs/kernel_model.md: runs thirty-nine, forty; runs thirteen, fifteen).
    ``tvm-cost tune``'s default on CPUs is the trace ranker (`RankerCostModel`), which needs fewer trials still.

    Weights trained with ``tvm-cost train --no-store-features`` read no PerStoreFeature column (`reads_store_features`):
    their graphs come from the walk of the scheduled TIR and the trace alone, and predict never runs the extractor
    (0.13x XGBModel's predict on one thread, 0.41x on two). The shipped CPU checkpoint is such weights: on three
    fresh seed sets they needed fewer trials than the same recipe with the rows (37 against 56.5 pooled), over
    eight sets 59 against 83.5 (paired 1.42x, 95 % interval from 0.94x), and they rank held-out kernels 2.5 points
    worse offline (docs/kernel_model.md, runs forty and forty-one).

    Args:
        checkpoint: "auto": the checkpoint shipped for the target (found at first use), else untrained with a
            warning; None: untrained; a path: that training checkpoint, or a folder from `save` (restored whole:
            weights, replay buffer and its own config, which then replaces `config`).
        target: The tuning target (preset, JSON or `tvm.target.Target`) to pick the shipped checkpoint now;
            None: taken from the first tune context.
        model: A model from `tvm_cost.models` to use as is (overrides `checkpoint`).
        config: Scoring and fine-tuning settings.
    """

    def __init__(self, *, checkpoint: str | Path | None = "auto", target: Any = None, model: CostModel | None = None,
                 config: GNNCostModelConfig = GNNCostModelConfig()) -> None:
        self.config = config
        self.checkpoint = checkpoint
        self.target_name = target_name(target) if target is not None else None
        self.featurizer = CandidateFeaturizer()
        self.buffer = ReplayBuffer(config.buffer_size)
        self.model: CostModel | None = None
        self.source = "none"
        self.calibration = Calibration()  # of the weights' times (`predict_with_uncertainty`); identity if untrained
        self.times: CostModel | None = None  # the checkpoint's times member, if it has one
        self.store_features = True  # whether the weights read PerStoreFeature rows (`reads_store_features`)
        self.trained = False  # weights came from training (a checkpoint or a given model)
        self.norm_fitted = False
        self.updates = 0
        self.mode = "gnn"  # "xgb" after a fallback
        self.fallback_reason: str | None = None
        self.xgb: Any = None
        self._optimizer: torch.optim.Optimizer | None = None
        if model is not None:
            self._set_model(model, source="given", trained=True)
        elif checkpoint is not None and checkpoint != "auto":
            if Path(checkpoint).is_dir():
                self.load(str(checkpoint))
            else:
                self._load_weights(Path(checkpoint))
        elif self.target_name is not None:
            self._materialize()

    # -- weights -----------------------------------------------------------------------------------------------
    def _set_model(self, model: CostModel, *, source: str, trained: bool, meta: dict[str, Any] | None = None,
                   path: Path | None = None) -> None:
        """Use `model`; `meta` (its checkpoint's metadata, read from `path`) gives the time calibration and names
        the times member, read from beside `path`."""
        extra = (meta or {}).get("extra", {})
        try:
            self.calibration = Calibration.from_dict(extra.get("calibration"))
        except ValueError as err:
            raise TvmCostError(str(err), path=path) from None
        self.times = None
        if extra.get("times") and path is not None:
            from tvm_cost.train.checkpoint import load_checkpoint

            self.times = load_checkpoint(path.parent / str(extra["times"]), schema=CANDIDATE_SCHEMA)[0]
        self.model, self.source, self.trained = model.eval(), source, trained
        self.store_features = any(reads_store_features(m) for m in (model, self.times) if m is not None)
        self.norm_fitted = trained
        self._optimizer = None

    def _load_weights(self, path: Path, source: str | None = None) -> None:
        from tvm_cost.train.checkpoint import load_checkpoint

        model, meta = load_checkpoint(path, schema=CANDIDATE_SCHEMA)
        self._set_model(model, source=source or str(path), trained=True, meta=meta, path=path)
        self._warn_other_cpu(meta.get("extra", {}).get("measured_on"), path)

    def _warn_other_cpu(self, measured_on: str | None, path: Path) -> None:
        """A CPU checkpoint ranks by the latencies of the CPU it learnt from: say so when that is not this one."""
        from tvm_cost.collect.manifest import other_cpu_warning

        if self.target_name is not None and not self.target_name.startswith("llvm"):
            return
        warning = other_cpu_warning(measured_on, Path(path).name)
        if warning:
            log.warning("%s", warning)

    def _untrained(self) -> CostModel:
        c = self.config
        mc = ModelConfig.for_schema(CANDIDATE_SCHEMA, hidden=c.hidden, layers=c.layers,
                                    dropout=c.dropout, seed=c.seed)
        return build_model(kind=c.model_kind, config=mc, ensemble=c.ensemble)

    def _loaded(self) -> CostModel:
        """The model set by `_set_model` (every path into it runs `_materialize` first)."""
        if self.model is None:
            raise RuntimeError("GNNCostModel has no model yet; _materialize() sets one")
        return self.model

    def _materialize(self, context: Any = None) -> CostModel:
        """The model, built at first use: shipped checkpoint for the target if any, else untrained."""
        if self.model is not None:
            return self.model
        if self.target_name is None and context is not None:
            self.target_name = target_name(context.target)
        if self.checkpoint == "auto":
            path = shipped_checkpoint(self.target_name) if self.target_name else None
            if path is not None:
                self._load_weights(path, source=f"shipped:{path.stem}")
                return self._loaded()
            log.warning("no trained GNN checkpoint ships for target %s; the GNN cost model starts untrained and "
                        "learns only from this tune's measurements", self.target_name or "(unknown)")
        else:
            log.info("GNN cost model starts untrained (checkpoint=None)")
        self._set_model(self._untrained(), source="untrained", trained=False)
        return self._loaded()

    # -- the MetaSchedule contract -----------------------------------------------------------------------------
    def predict(self, context: Any, candidates: list[Any]) -> np.ndarray:
        """Positive scores, higher is better, float64 [len(candidates)]."""
        if not candidates:
            return np.zeros(0, np.float64)
        if self.mode == "gnn":
            try:
                c = self.config
                samples = c.mc_samples if c.exploration > 0 else 1
                mean, std = self._predict_log(context, candidates, samples=samples)
                pred = mean - c.exploration * std
                if not np.isfinite(pred).all():
                    raise FloatingPointError("the GNN predicted non-finite latencies")
                return scores_from_log_latency(pred, temperature=c.temperature)
            except Exception as err:  # noqa: BLE001 - any failure hands the tune to XGBModel
                if not self.config.fallback:
                    raise
                self._fall_back(err, "predict")
        return np.maximum(np.asarray(self.xgb.predict(context, candidates), np.float64), 1e-9)

    def update(self, context: Any, candidates: list[Any], results: list[Any]) -> None:
        """Add the measured candidates to the task's replay buffer and fine-tune on it."""
        if self.mode == "gnn":
            added = False
            try:
                with torch_threads(self.config.num_threads):
                    self._materialize(context)
                    labels = [measured_latency_ms(r) for r in results]
                    kept = [(cand, lat) for cand, lat in zip(candidates, labels, strict=True) if lat is not None]
                    if kept:
                        key = task_key(context)
                        graphs = self._graphs(context, [cand for cand, _ in kept])
                        self.buffer.add(key, graphs, [lat for _, lat in kept])
                        added = True
                        self._finetune(key, len(graphs))
                return
            except Exception as err:  # noqa: BLE001
                if not self.config.fallback:
                    raise
                self._fall_back(err, "update")
                if added:  # the buffer, with these results, already seeded the XGBModel
                    return
        self.xgb.update(context, candidates, results)

    def save(self, path: str) -> None:
        """Write the folder `path` (see the module docstring)."""
        from tvm_cost.train.checkpoint import save_checkpoint

        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        model = self._materialize()
        if self.times is not None:
            save_checkpoint(folder / "times", self.times, schema=CANDIDATE_SCHEMA, extra={"role": "times"})
        save_checkpoint(folder / "model", model, schema=CANDIDATE_SCHEMA,
                        extra={"target": self.target_name, "source": self.source,
                               "calibration": self.calibration.to_dict(),
                               "times": "times" if self.times is not None else None})
        self.buffer.save(folder / "buffer.npz")
        if self.xgb is not None:
            save_xgb(self.xgb, str(folder / "xgb.tar"))
        state = {"format": STATE_FORMAT, "version": STATE_VERSION, "config": self.config.to_dict(),
                 "target_name": self.target_name, "source": self.source, "trained": self.trained,
                 "norm_fitted": self.norm_fitted, "updates": self.updates, "mode": self.mode,
                 "fallback_reason": self.fallback_reason, "xgb": self.xgb is not None}
        with atomic_open(folder / "state.json") as f:
            f.write(json.dumps(state, indent=2, sort_keys=True) + "\n")

    def load(self, path: str) -> None:
        """Load a folder written by `save`, or a bare training checkpoint (replaces the weights only).

        Raises:
            TvmCostError: One line naming the file: missing, truncated or mismatched checkpoint or state.
        """
        folder = Path(path)
        if not folder.is_dir():
            self._load_weights(folder)
            return
        state_path = folder / "state.json"
        try:
            state = json.loads(state_path.read_text())
            if state.get("format") != STATE_FORMAT or state.get("version") != STATE_VERSION:
                raise ValueError(f"not a {STATE_FORMAT} v{STATE_VERSION} state file")
            config = GNNCostModelConfig.from_dict(state["config"])
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise TvmCostError(f"cannot read the cost-model state ({one_line(err)})", path=state_path) from None
        from tvm_cost.train.checkpoint import load_checkpoint

        model, meta = load_checkpoint(folder / "model", schema=CANDIDATE_SCHEMA)
        try:
            buffer = ReplayBuffer.load(folder / "buffer.npz", capacity=config.buffer_size)
        except (OSError, ValueError, KeyError) as err:
            raise TvmCostError(f"cannot read the replay buffer ({one_line(err)})",
                               path=folder / "buffer.npz") from None
        xgb = None
        if state.get("xgb"):
            xgb = make_xgb()
            load_xgb(xgb, str(folder / "xgb.tar"))
        self.config, self.buffer, self.xgb = config, buffer, xgb
        self._set_model(model, source=str(state.get("source", folder)), trained=bool(state.get("trained")),
                        meta=meta, path=folder / "model.json")
        self.norm_fitted = bool(state.get("norm_fitted"))
        self.target_name = state.get("target_name") or self.target_name  # a saved untargeted model keeps the given one
        self.updates = int(state.get("updates", 0))
        self.mode, self.fallback_reason = str(state.get("mode", "gnn")), state.get("fallback_reason")

    # -- beyond the contract -----------------------------------------------------------------------------------
    def predict_with_uncertainty(self, context: Any, candidates: list[Any]) -> tuple[np.ndarray, np.ndarray]:
        """Mean and standard deviation of the predicted natural-log latency (ms for the shipped models): the ranking
        head through the checkpoint's `Calibration`, averaged with the times member where there is one; shifted by
        the task's median measured-minus-predicted ln(ms) once the tune has measured some of its candidates.

        MC dropout over `config.mc_samples` passes (Gal & Ghahramani 2016) gives the std; a deep ensemble
        (``config.ensemble > 1`` or an `EnsembleModel` checkpoint) adds the spread between members. Seeded, so
        repeatable.

        Shapes:
            Returns ``(mean, std)``, each float64 [len(candidates)].
        """
        if not candidates:
            return np.zeros(0), np.zeros(0)
        with torch_threads(self.config.num_threads):
            self._materialize(context)
            mean, std = self._times_log(self._graphs(context, candidates), samples=self.config.mc_samples)
            measured, latency_ms = self.buffer.task(task_key(context))
            if measured:
                mean = mean + float(np.median(np.log(latency_ms) - self._times_log(measured, samples=1)[0]))
        return mean, std

    def _times_log(self, graphs: Sequence[dict[str, np.ndarray]], *, samples: int) -> tuple[np.ndarray, np.ndarray]:
        """(mean, std) of the predicted ln(ms) of `graphs` before the task's shift (`predict_with_uncertainty`): the
        calibrated ranking head, and with a times member the two as a deep ensemble (mean of their means; std by
        the law of total variance, so their disagreement counts)."""
        model = self._loaded()
        mean, std = self._forward(model, graphs, samples=samples)
        u = torch.from_numpy(np.concatenate([g["u"] for g in graphs]))
        work = log_work(model.config, u, len(graphs))[:, 0].double().numpy()
        mean, std = self.calibration.apply(mean, work), self.calibration.scale * std
        if self.times is None:
            return mean, std
        times_mean, times_std = self._forward(self.times, graphs, samples=samples)
        spread = 0.5 * (mean - times_mean)
        return 0.5 * (mean + times_mean), np.sqrt(0.5 * (std ** 2 + times_std ** 2) + spread ** 2)

    def describe(self) -> dict[str, Any]:
        """Where the weights came from and what the model has learnt in this tune."""
        return {"source": self.source, "trained": self.trained, "mode": self.mode, "target": self.target_name,
                "times": "calibrated ranking head" + (" + times member" if self.times is not None else ""),
                "calibration": self.calibration.to_dict(),
                "fallback_reason": self.fallback_reason, "updates": self.updates,
                "store_features": self.store_features, "buffered": len(self.buffer), "tasks": len(self.buffer.tasks),
                "graph_cache": {"hits": self.featurizer.hits, "misses": self.featurizer.misses}}

    # -- internals ---------------------------------------------------------------------------------------------
    def _predict_log(self, context: Any, candidates: Sequence[Any], *, samples: int
                     ) -> tuple[np.ndarray, np.ndarray]:
        if not candidates:
            return np.zeros(0), np.zeros(0)
        with torch_threads(self.config.num_threads):
            model = self._materialize(context)
            return self._forward(model, self._graphs(context, candidates), samples=samples)

    def _graphs(self, context: Any, candidates: Sequence[Any]) -> list[dict[str, np.ndarray]]:
        """The candidates' graphs as these weights read them: without the extraction where they ignore its rows."""
        return self.featurizer.graphs(context, candidates, store_features=self.store_features)

    def _forward(self, model: CostModel, graphs: Sequence[dict[str, np.ndarray]], *, samples: int
                 ) -> tuple[np.ndarray, np.ndarray]:
        """`model`'s (mean, std) of the latency head over `samples` MC-dropout passes, `predict_batch` at a time."""
        head = model.head_index()
        means, stds = [], []
        step = self.config.predict_batch
        for i in range(0, len(graphs), step):
            mean, std = model.predict(to_pyg_batch(graphs[i:i + step]), samples=samples,
                                      seed=self.config.seed)
            means.append(mean[:, head])
            stds.append(std[:, head])
        return torch.cat(means).double().numpy(), torch.cat(stds).double().numpy()

    def _finetune(self, key: str, num_new: int) -> None:
        c, model = self.config, self.model
        assert model is not None
        if c.update_steps == 0:
            return
        if not self.norm_fitted:
            items = [to_data(g, y=torch.tensor([[lat]], dtype=torch.float32)) for k in self.buffer.tasks
                     for g, lat in zip(*self.buffer.task(k), strict=True)]
            fit_input_normalization(model, items)
            self.norm_fitted = True
        if self._optimizer is None:
            self._optimizer = finetune_optimizer(model, c)
        graphs, latency_ms = self.buffer.task(key)
        finetune_steps(model, self._optimizer, graphs, latency_ms, num_new=num_new, config=c,
                       seed=c.seed * 1_000_003 + self.updates)
        self.updates += 1

    def _fall_back(self, err: Exception, where: str) -> None:
        self.mode, self.fallback_reason = "xgb", f"{where}: {one_line(err)}"
        log.warning("GNN cost model failed in %s (%s); MetaSchedule's XGBModel takes over for the rest of this "
                    "tune", where, one_line(err))
        log.debug("GNN cost model failure", exc_info=err)
        self.xgb = make_xgb()
        if not self.store_features:
            log.info("XGBModel starts unseeded: the GNN's graphs carry no PerStoreFeature rows to give it")
            return
        try:
            seeded = seed_xgb(self.xgb, self.buffer.xgb_groups())
            log.info("XGBModel seeded with %d measured candidates", seeded)
        except Exception as seed_err:  # noqa: BLE001 - an unseeded XGBModel still works
            log.warning("could not seed the XGBModel with the measured candidates (%s)", one_line(seed_err))


python_side_save_load(GNNCostModel)
