"""A model zoo in pure torch for collecting cost-model data: CNNs, transformers, MLP-Mixer and MLPs with knobs.

Example:
    >>> from tvm_cost.zoo import build, parse_spec, sample_configs
    >>> model = build("resnet18", width=0.5, resolution=64, batch=2)
    >>> model = parse_spec("zoo:bert,depth=2,seq_len=64")
    >>> models = [build(**cfg) for cfg in sample_configs(None, 4, seed=0)]
"""

from tvm_cost.zoo._spec import FamilySpec
from tvm_cost.zoo.export import export_onnx, export_program
from tvm_cost.zoo.registry import (
    FAMILIES,
    ZooModel,
    build,
    family_spec,
    knobs,
    parse_config,
    parse_spec,
    resolve_config,
    to_spec,
)
from tvm_cost.zoo.sampling import sample_configs

__all__ = [
    "FAMILIES",
    "FamilySpec",
    "ZooModel",
    "build",
    "export_onnx",
    "export_program",
    "family_spec",
    "knobs",
    "parse_config",
    "parse_spec",
    "resolve_config",
    "sample_configs",
    "to_spec",
]
