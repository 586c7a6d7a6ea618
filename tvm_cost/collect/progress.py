"""A rich progress bar (records/s, ETA) fed by the collection loop's per-batch callback."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

ProgressFn = Callable[[dict[str, Any]], None]


@contextlib.contextmanager
def rich_progress(progress: bool | ProgressFn | None) -> Iterator[ProgressFn | None]:
    """Yield a callback: `progress` itself if callable, a rich bar on stderr if True, else None."""
    if callable(progress):
        yield progress
        return
    if not progress:
        yield None
        return
    from rich.console import Console  # pylint: disable=import-outside-toplevel
    from rich.progress import (  # pylint: disable=import-outside-toplevel
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]:.2f} rec/s"),
        TextColumn("failed {task.fields[failed]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=False) as bar:
        bar_id = bar.add_task("collecting", total=None, rate=0.0, failed=0)

        def update(event: dict[str, Any]) -> None:
            rate = event["done"] / event["elapsed_s"] if event["elapsed_s"] > 0 else 0.0
            desc = f"[{event['task_index'] + 1}/{event['num_tasks']}] {event['task'][:28]} ({event['phase'][:4]})"
            bar.update(bar_id, completed=event["done"], total=event["total"] or None, description=desc,
                       rate=rate, failed=event["failed"])

        yield update
