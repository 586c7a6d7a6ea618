"""What every zoo family provides, and the small helpers the families share.

A family is a `FamilySpec`: its knobs with defaults (the default's type is the knob's type), a constructor, the
kind of input it takes and a check of the constraints between knobs. The registry resolves a name to a spec once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import nn

InputKind = Literal["images", "tokens", "features"]
KnobValue = int | float

#: Knobs every family has, on top of its own; `seed` only changes the weights and the example inputs.
COMMON_KNOBS: dict[str, KnobValue] = {"batch": 1, "seed": 0}


@dataclass(frozen=True)
class FamilySpec:
    """One architecture family of the zoo.

    Attributes:
        name: The registry name, e.g. "resnet18".
        paper: A link to the paper the architecture comes from.
        defaults: Family knobs and their defaults (without `batch` and `seed`); an int default makes an int knob,
            a float default a float knob (ints are accepted there too).
        make: Builds the module from a complete, validated config (weights drawn from the global RNG, which the
            registry forks and seeds around the call).
        input_kind: "images" (float32 `[batch, 3, resolution, resolution]`), "tokens" (int64
            `[batch, seq_len]`, ids below `vocab_size`) or "features" (float32 `[batch, in_features]`).
        check: Raises `ValueError` for configs the architecture cannot take (e.g. a width not divisible by
            the number of heads); called before `make`.
    """

    name: str
    paper: str
    defaults: Mapping[str, KnobValue]
    make: Callable[[Mapping[str, Any]], nn.Module]
    input_kind: InputKind
    check: Callable[[Mapping[str, Any]], None] = lambda cfg: None


def make_divisible(value: float, divisor: int = 8) -> int:
    """Rounds a channel count to a multiple of `divisor`, never dropping more than 10% (as MobileNet does).

    See https://github.com/tensorflow/models/blob/master/research/slim/nets/mobilenet/mobilenet.py
    """
    new = max(divisor, int(value + divisor / 2) // divisor * divisor)
    if new < 0.9 * value:
        new += divisor
    return new


def example_inputs(
    kind: InputKind, cfg: Mapping[str, Any], generator: torch.Generator
) -> tuple[tuple[str, ...], tuple[torch.Tensor, ...]]:
    """Draws one example input batch for a family's input kind.

    Returns:
        The input names and tensors, in forward-argument order.
    """
    batch = cfg["batch"]
    if kind == "images":
        res = cfg["resolution"]
        return ("images",), (torch.randn(batch, 3, res, res, generator=generator),)
    if kind == "tokens":
        ids = torch.randint(0, cfg["vocab_size"], (batch, cfg["seq_len"]), generator=generator, dtype=torch.int64)
        return ("input_ids",), (ids,)
    if kind == "features":
        return ("features",), (torch.randn(batch, cfg["in_features"], generator=generator),)
    raise ValueError(f"unknown input kind {kind!r}")


def require(condition: bool, message: str) -> None:
    """Raises `ValueError(message)` unless `condition` holds (for `FamilySpec.check`)."""
    if not condition:
        raise ValueError(message)


def check_positive(cfg: Mapping[str, Any], *names: str) -> None:
    """Every named knob must be > 0."""
    for name in names:
        require(cfg[name] > 0, f"{name} must be > 0, got {cfg[name]!r}")
