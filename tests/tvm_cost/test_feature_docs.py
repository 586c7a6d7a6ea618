"""docs/features.md names every column of the schema."""

from __future__ import annotations

from pathlib import Path

from tvm_cost.features.schema import NODE_STATIC, SCHEMA

DOC = (Path(__file__).resolve().parents[2] / "docs" / "features.md").read_text()


def test_every_column_is_documented():
    missing = [name for name in (*NODE_STATIC, *SCHEMA.edge, *SCHEMA.globals) if f"`{name}`" not in DOC]
    assert missing == []
    assert f"version `{SCHEMA.version}`" in DOC and f"`x`, {len(SCHEMA.node)} columns" in DOC
