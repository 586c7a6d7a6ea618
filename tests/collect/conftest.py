"""Fixtures of the collection tests (helpers live in collect_helpers.py)."""

from __future__ import annotations

from typing import Any

import pytest
from collect_helpers import LLVM


@pytest.fixture()
def llvm_target() -> Any:
    import tvm

    return tvm.target.Target(LLVM)
