"""Name -> family resolution, knob validation, seeded construction, and `zoo:` spec strings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from tvm_cost.zoo import bert, densenet, gpt, mixer, mlp, mobilenet, resnet, vgg, vit
from tvm_cost.zoo._spec import COMMON_KNOBS, FamilySpec, KnobValue, example_inputs

_ALL = (*resnet.SPECS, mobilenet.SPEC, vgg.SPEC, densenet.SPEC, bert.SPEC, gpt.SPEC, vit.SPEC, mixer.SPEC, mlp.SPEC)
_SPECS: dict[str, FamilySpec] = {s.name: s for s in _ALL}
#: Registry names of every family, in a fixed order.
FAMILIES: tuple[str, ...] = tuple(_SPECS)
SPEC_PREFIX = "zoo:"


@dataclass(frozen=True, eq=False)
class ZooModel:
    """A built zoo model, ready for `torch.export.export(module, example_inputs)` or ONNX export.

    Attributes:
        name: The family's registry name.
        config: Every knob's value, defaults included (a fresh dict; treat it as read-only).
        module: The network, in eval mode, without gradients.
        example_inputs: One input batch, in forward-argument order.
        input_names: A name per input ("images", "input_ids" or "features").
    """

    name: str
    config: dict[str, KnobValue]
    module: nn.Module
    example_inputs: tuple[torch.Tensor, ...]
    input_names: tuple[str, ...]

    @property
    def spec(self) -> str:
        """The spec string that `parse_spec` turns back into this model (non-default knobs only)."""
        return to_spec(self.name, self.config)

    @property
    def input_shapes(self) -> dict[str, list[int]]:
        """Input name -> shape, e.g. for `from_onnx(shape_dict=...)`."""
        return {n: list(t.shape) for n, t in zip(self.input_names, self.example_inputs)}

    @property
    def input_dtypes(self) -> dict[str, str]:
        """Input name -> dtype string ("float32" or "int64")."""
        return {n: str(t.dtype).removeprefix("torch.") for n, t in zip(self.input_names, self.example_inputs)}


def family_spec(name: str) -> FamilySpec:
    """The `FamilySpec` of a registry name; `ValueError` listing the choices if there is none."""
    try:
        return _SPECS[name]
    except KeyError:
        raise ValueError(f"unknown zoo family {name!r}; choose one of {', '.join(FAMILIES)}") from None


def knobs(name: str) -> dict[str, KnobValue]:
    """Every knob of a family with its default (the default's type is the knob's type)."""
    return {**family_spec(name).defaults, **COMMON_KNOBS}


def resolve_config(name: str, config: Mapping[str, Any]) -> dict[str, KnobValue]:
    """Fills in defaults and checks every knob's name, type and constraints.

    Raises:
        ValueError: Unknown family, unknown knob, wrong type (an int knob given a float, any bool) or a value
            the architecture cannot take.
    """
    spec, defaults = family_spec(name), knobs(name)
    unknown = [k for k in config if k not in defaults]
    if unknown:
        names = ", ".join(map(repr, unknown))
        raise ValueError(f"unknown knob(s) {names} for {name!r}; choose from {sorted(defaults)}")
    cfg: dict[str, KnobValue] = {}
    for key, default in defaults.items():
        value = config.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"knob {key!r} of {name!r} takes a number, got {value!r}")
        if isinstance(default, int) and not isinstance(value, int):
            raise ValueError(f"knob {key!r} of {name!r} takes an int, got {value!r}")
        cfg[key] = value if isinstance(default, int) else float(value)
    if cfg["batch"] < 1:
        raise ValueError(f"batch must be >= 1, got {cfg['batch']}")
    spec.check(cfg)
    return cfg


def build(name: str, **config: KnobValue) -> ZooModel:
    """Builds a zoo model with seeded weights and example inputs.

    The weights come from the global RNG inside `torch.random.fork_rng`, seeded with `seed`, so the caller's RNG
    state is left as it was; the example inputs come from a `torch.Generator` seeded the same way.

    Args:
        name: A registry name, one of `FAMILIES`.
        **config: Knobs: `width`, `depth`, `resolution` or `seq_len`, `batch`, `seed`, plus family-specific ones
            (see `knobs(name)`); missing ones take their defaults.

    Returns:
        The model with its resolved config.

    Raises:
        ValueError: Unknown family (listing the choices), unknown knob (naming it), or an invalid value.
    """
    cfg = resolve_config(name, config)
    spec = family_spec(name)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(cfg["seed"]))
        module = spec.make(cfg)
    module.eval().requires_grad_(False)
    names, inputs = example_inputs(spec.input_kind, cfg, torch.Generator().manual_seed(int(cfg["seed"])))
    return ZooModel(name=name, config=cfg, module=module, example_inputs=inputs, input_names=names)


def _parse_value(key: str, text: str, spec: str) -> KnobValue:
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    raise ValueError(f"bad zoo spec {spec!r}: value {text!r} of knob {key!r} is not a number")


def parse_config(spec: str) -> dict[str, Any]:
    """Parses `"zoo:<family>[,knob=value...]"` into `{"name": family, knob: value, ...}` without building.

    The `zoo:` prefix may be left out. Values are ints where they parse as ints, else floats.

    Raises:
        ValueError: Malformed spec (saying what is wrong and what was expected), unknown family or knob.
    """
    usage = "expected 'zoo:<family>[,knob=value...]', e.g. 'zoo:resnet18,batch=4,width=0.5'"
    text = spec.strip()
    if text.startswith(SPEC_PREFIX):
        text = text[len(SPEC_PREFIX) :]
    elif ":" in text.split(",")[0]:
        raise ValueError(f"bad zoo spec {spec!r}: not a 'zoo:' spec; {usage}")
    name, *items = (part.strip() for part in text.split(","))
    if not name:
        raise ValueError(f"bad zoo spec {spec!r}: no family name; {usage}")
    family_spec(name)
    out: dict[str, Any] = {"name": name}
    for item in items:
        key, sep, value = (s.strip() for s in item.partition("="))
        if not sep or not key or not value:
            raise ValueError(f"bad zoo spec {spec!r}: {item!r} is not knob=value; {usage}")
        if key in out:
            raise ValueError(f"bad zoo spec {spec!r}: knob {key!r} given twice")
        out[key] = _parse_value(key, value, spec)
    resolve_config(name, {k: v for k, v in out.items() if k != "name"})
    return out


def parse_spec(spec: str) -> ZooModel:
    """Builds the model a spec string names, e.g. `parse_spec("zoo:resnet18,batch=4,width=0.5")`.

    Raises:
        ValueError: See `parse_config`.
    """
    return build(**parse_config(spec))


def to_spec(name: str, config: Mapping[str, KnobValue]) -> str:
    """The spec string for a family and config, naming only knobs that differ from their defaults."""
    defaults = knobs(name)
    items = [f"{k}={config[k]!r}" for k in defaults if k in config and config[k] != defaults[k]]
    return ",".join([SPEC_PREFIX + name, *items])
