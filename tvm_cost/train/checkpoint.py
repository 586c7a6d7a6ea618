"""Save and load models: weights in safetensors, metadata in JSON beside them; loading never runs code."""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from tvm_cost.atomic import atomic_open
from tvm_cost.errors import TvmCostError
from tvm_cost.models import MODEL_CLASSES, CostModel, ModelConfig

FORMAT = "tvm-cost-checkpoint"
FORMAT_VERSION = 1


def checkpoint_paths(path: str | Path) -> tuple[Path, Path]:
    """``(weights, metadata)`` paths: ``name.safetensors`` and ``name.json`` (the suffix is added if missing)."""
    path = Path(path)
    weights = path if path.suffix == ".safetensors" else path.with_name(path.name + ".safetensors")
    return weights, weights.with_suffix(".json")


def _schema_info(schema: Any) -> dict[str, str]:
    if isinstance(schema, Mapping):
        info = {k: str(schema[k]) for k in ("name", "version", "hash") if k in schema}
    else:
        info = {k: str(getattr(schema, k)) for k in ("name", "version", "hash") if hasattr(schema, k)}
    if set(info) != {"name", "version", "hash"}:
        raise ValueError("schema must give name, version and hash (a FeatureSchema or a mapping)")
    return info


def _expected_hash(schema: Any) -> str:
    if isinstance(schema, str):
        return schema
    value = schema.get("hash") if isinstance(schema, Mapping) else getattr(schema, "hash", None)
    if value is None:
        raise ValueError("schema must be a FeatureSchema, a mapping with 'hash', or a hash string")
    return str(value)


def _unwrap(model: nn.Module) -> CostModel:
    inner = model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model
    return inner  # type: ignore[return-value]


def save_checkpoint(path: str | Path, model: nn.Module, *, schema: Any, extra: Mapping[str, Any] | None = None
                    ) -> Path:
    """Write ``<path>.safetensors`` (weights and normalization buffers) and ``<path>.json`` (metadata).

    Metadata: format and version, model class name and constructor arguments, `ModelConfig`, the feature schema's
    name/version/hash, torch and torch-geometric versions, UTC creation time, the weights' sha256 and `extra`
    (e.g. ``{"target": "llvm -mcpu=...", "train_config": ...}``, JSON-serializable).

    Args:
        path: Destination, with or without the ``.safetensors`` suffix; parent folders are created.
        model: A model from `tvm_cost.models` (a `DistributedDataParallel` wrapper is unwrapped).
        schema: The feature schema the model was trained on: a `FeatureSchema` or ``{"name", "version",
            "hash"}``.
        extra: More JSON metadata.

    Returns:
        The weights path.
    """
    from safetensors.torch import save_file
    import torch_geometric

    model = _unwrap(model)
    name = type(model).__name__
    if MODEL_CLASSES.get(name) is not type(model):
        raise ValueError(f"cannot checkpoint {name}; known classes: {', '.join(MODEL_CLASSES)}")
    weights, meta_path = checkpoint_paths(path)
    weights.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().to("cpu").contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(weights), metadata={"format": FORMAT})
    meta = {
        "format": FORMAT, "format_version": FORMAT_VERSION,
        "model_class": name, "model_args": model.init_args(), "config": model.config.to_dict(),
        "feature_schema": _schema_info(schema),
        "torch_version": torch.__version__, "torch_geometric_version": torch_geometric.__version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "weights_file": weights.name, "weights_sha256": hashlib.sha256(weights.read_bytes()).hexdigest(),
        "extra": dict(extra or {}),
    }
    with atomic_open(meta_path) as f:
        f.write(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return weights


def read_metadata(path: str | Path) -> dict[str, Any]:
    """The JSON metadata of a checkpoint, checked for format; `TvmCostError` if missing or unreadable."""
    _, meta_path = checkpoint_paths(path)
    if not meta_path.is_file():
        raise TvmCostError("checkpoint metadata file is missing", path=meta_path)
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise TvmCostError(f"checkpoint metadata is truncated or not JSON ({err})", path=meta_path) from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise TvmCostError(f"not a {FORMAT} metadata file", path=meta_path)
    if meta.get("format_version") != FORMAT_VERSION:
        raise TvmCostError(f"checkpoint format version {meta.get('format_version')} is not supported "
                           f"(this tvm-cost reads {FORMAT_VERSION})", path=meta_path)
    return meta


def load_checkpoint(path: str | Path, *, schema: Any = None, map_location: str | torch.device = "cpu"
                    ) -> tuple[CostModel, dict[str, Any]]:
    """Rebuild a saved model from safetensors + JSON, in eval mode. Never unpickles or runs stored code.

    Args:
        path: The checkpoint, with or without the ``.safetensors`` suffix.
        schema: The feature schema the caller will feed (a `FeatureSchema`, a mapping with "hash", or a hash
            string); a different hash than the checkpoint's is refused. None skips the check.
        map_location: Device for the weights.

    Returns:
        ``(model, metadata)``.

    Raises:
        TvmCostError: One line naming the file and the problem: missing or truncated file, weights that do not
            match the metadata, an unknown model class, a bad config, or a feature-schema mismatch.
    """
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    weights, meta_path = checkpoint_paths(path)
    meta = read_metadata(path)
    if schema is not None:
        want = _expected_hash(schema)
        got = meta.get("feature_schema", {}).get("hash")
        if got != want:
            have = meta.get("feature_schema", {})
            given = f"{want}, {schema.name} v{schema.version}" if hasattr(schema, "version") else want
            raise TvmCostError(f"feature schema hash {got} ({have.get('name')} v{have.get('version')}) does not "
                               f"match the features given ({given}); re-extract features or retrain",
                               path=meta_path)
    cls = MODEL_CLASSES.get(str(meta.get("model_class")))
    if cls is None:
        raise TvmCostError(f"unknown model class {meta.get('model_class')!r}; known: {', '.join(MODEL_CLASSES)}",
                           path=meta_path)
    if not weights.is_file():
        raise TvmCostError("checkpoint weights file is missing", path=weights)
    data = weights.read_bytes()
    if hashlib.sha256(data).hexdigest() != meta.get("weights_sha256"):
        raise TvmCostError("weights are truncated or do not match the metadata (sha256 differs)", path=weights)
    try:
        state = load_file(str(weights), device=str(map_location))
    except (SafetensorError, OSError, ValueError) as err:
        raise TvmCostError(f"weights are not a readable safetensors file ({err})", path=weights) from None
    try:
        config = ModelConfig.from_dict(meta["config"])
        model = cls(config, **meta.get("model_args", {}))
        model.load_state_dict(state, strict=True)
    except (KeyError, TypeError, ValueError, RuntimeError) as err:
        raise TvmCostError(f"checkpoint does not fit {cls.__name__}: {err}", path=meta_path) from None
    return model.to(map_location).eval(), meta
