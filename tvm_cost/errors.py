"""The one exception type users see: a one-line message naming the file and the problem."""

from __future__ import annotations

from pathlib import Path


class TvmCostError(Exception):
    """A user-facing error; the CLI prints ``str(err)`` as one line, without a traceback.

    Args:
        message: What went wrong, in one line.
        path: The file or model the problem is in, if any; it prefixes the message.
    """

    def __init__(self, message: str, *, path: str | Path | None = None) -> None:
        self.path = None if path is None else str(path)
        text = " ".join(str(message).split())  # always one line
        super().__init__(f"{self.path}: {text}" if self.path else text)


class Interrupt:
    """Remembers a Ctrl-C (the CLI installs `handler` for SIGINT): raised inside TVM's FFI, in a build pool or a
    runner, the KeyboardInterrupt comes back as a RuntimeError, and `seen` tells the two apart."""

    seen = False

    @classmethod
    def handler(cls, signum: int, frame: object) -> None:
        cls.seen = True
        raise KeyboardInterrupt
