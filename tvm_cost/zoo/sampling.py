"""A seeded sampler of varied zoo configurations for data collection.

Every sampled model is meant to be lowered by TVM and measured on a small CPU, so sizes stay moderate:
resolutions 32..224, batch 1..8, hidden sizes 64..512, sequence lengths 16..256, and the work per batch is capped
(`batch * resolution**2 <= 2 * 224**2` for CNNs, `batch * tokens <= 1024` for transformers and the Mixer, which
also keep to at most 16x16 patches) by lowering the batch.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from tvm_cost.zoo.registry import FAMILIES, family_spec, resolve_config

BATCHES = (1, 2, 3, 4, 6, 8)
RESOLUTIONS = (32, 64, 96, 112, 128, 160, 192, 224)
SEQ_LENS = (16, 32, 64, 96, 128, 192, 256)
CNN_WIDTHS = (0.25, 0.5, 0.75, 1.0)
HIDDEN = (64, 128, 192, 256, 320, 384, 512)
MAX_PIXELS = 2 * 224 * 224
MAX_TOKENS = 1024


def _cap_batch(batch: int, size: int, limit: int) -> int:
    """The largest allowed batch size not above `batch` with `batch * size <= limit` (at least 1)."""
    allowed = [b for b in BATCHES if b <= batch and b * size <= limit]
    return max(allowed, default=1)


def _image(rng: random.Random) -> dict[str, Any]:
    res = rng.choice(RESOLUTIONS)
    return {"resolution": res, "batch": _cap_batch(rng.choice(BATCHES), res * res, MAX_PIXELS)}


def _resnet(rng: random.Random) -> dict[str, Any]:
    return {"width": rng.choice(CNN_WIDTHS), **_image(rng)}


def _mobilenet(rng: random.Random) -> dict[str, Any]:
    return {"width": rng.choice((0.35, 0.5, 0.75, 1.0, 1.4)), "depth": rng.choice((0.5, 1.0)), **_image(rng)}


def _vgg(rng: random.Random) -> dict[str, Any]:
    return {
        "width": rng.choice(CNN_WIDTHS),
        "depth": rng.choice((11, 13, 16, 19)),
        "batch_norm": rng.choice((0, 1)),
        **_image(rng),
    }


def _densenet(rng: random.Random) -> dict[str, Any]:
    return {"width": rng.choice((0.375, 0.5, 0.75, 1.0)), "depth": rng.choice((21, 41, 61, 121)), **_image(rng)}


def _text(rng: random.Random) -> dict[str, Any]:
    hidden = rng.choice(HIDDEN)
    seq = rng.choice(SEQ_LENS)
    return {
        "width": hidden,
        "depth": rng.randint(1, 6),
        "heads": max(1, hidden // 64),
        "seq_len": seq,
        "batch": _cap_batch(rng.choice(BATCHES), seq, MAX_TOKENS),
        "vocab_size": rng.choice((4096, 8192, 30522)),
    }


def _patches(rng: random.Random) -> dict[str, Any]:
    patch = rng.choice((8, 16, 32))
    # 2x2 to 16x16 patches, so attention and token mixing stay moderate
    sides = [r // patch for r in RESOLUTIONS if r % patch == 0 and 2 <= r // patch <= 16]
    side = rng.choice(sides)
    return {
        "patch": patch,
        "width": rng.choice(HIDDEN),
        "depth": rng.randint(1, 8),
        "resolution": side * patch,
        "batch": _cap_batch(rng.choice(BATCHES), side * side, MAX_TOKENS),
    }


def _vit(rng: random.Random) -> dict[str, Any]:
    cfg = _patches(rng)
    return {**cfg, "heads": max(1, cfg["width"] // 64)}


def _mlp(rng: random.Random) -> dict[str, Any]:
    return {
        "width": rng.choice(HIDDEN),
        "depth": rng.randint(1, 6),
        "in_features": rng.choice((256, 784, 1024, 3072)),
        "num_classes": rng.choice((10, 100, 1000)),
        "batch": rng.choice(BATCHES),
    }


_SAMPLERS: dict[str, Callable[[random.Random], dict[str, Any]]] = {
    "resnet18": _resnet,
    "resnet34": _resnet,
    "resnet50": _resnet,
    "mobilenet_v2": _mobilenet,
    "vgg": _vgg,
    "densenet": _densenet,
    "bert": _text,
    "gpt": _text,
    "vit": _vit,
    "mlp_mixer": _patches,
    "mlp": _mlp,
}
assert set(_SAMPLERS) == set(FAMILIES), "every family needs a sampler"


def sample_configs(family: str | None, n: int, seed: int) -> list[dict[str, Any]]:
    """Draws `n` distinct-where-possible configurations, each `{"name": family, knob: value, ...}`.

    `build(**config)` builds one. The draw is deterministic for a seed, and the first `k` configs of a call with
    `n >= k` are those of a call with `n = k`.

    Args:
        family: One family name, or None to draw the family uniformly from `FAMILIES` for each config.
        n: Number of configurations.
        seed: Seed of the sampler's own `random.Random` (the global RNG is not touched).

    Raises:
        ValueError: Unknown family or negative `n`.
    """
    if family is not None:
        family_spec(family)
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    seen: set[tuple[Any, ...]] = set()
    while len(out) < n:
        for _ in range(20):  # a few redraws to avoid duplicates; small spaces may still repeat
            name = family if family is not None else rng.choice(FAMILIES)
            cfg = {"name": name, **_SAMPLERS[name](rng)}
            key = tuple(sorted(cfg.items()))
            if key not in seen:
                break
        resolve_config(name, {k: v for k, v in cfg.items() if k != "name"})  # a sampler bug, if it raises
        seen.add(key)
        out.append(cfg)
    return out
