"""Operator graphs and scheduled TIR -> arrays, under a named, versioned feature schema."""

from tvm_cost.features.schema import SCHEMA, FeatureSchema

__all__ = ["SCHEMA", "FeatureSchema"]
