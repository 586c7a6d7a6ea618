"""Fixtures locating the shared real-measurement folder (``../shared/data`` next to the repository)."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"


def _require(sub: str) -> Path:
    path = (SHARED_DATA / sub).resolve()
    if not path.is_dir():
        pytest.skip(f"real data not available: {path} is missing (see docs/external_data.md)")
    return path


@pytest.fixture(scope="session")
def help_dir() -> Path:
    """The real HELP folder, or skip."""
    return _require("help")


@pytest.fixture(scope="session")
def neusight_dir() -> Path:
    """The real NeuSight folder, or skip."""
    return _require("neusight")
