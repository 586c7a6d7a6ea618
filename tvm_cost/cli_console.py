"""The rich console every `tvm-cost` command prints to."""

from __future__ import annotations

import sys
from typing import Any


def make_console() -> Any:
    """A rich `Console`: the terminal's width on a terminal, 200 columns otherwise (no wrapping in logs)."""
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 200)
