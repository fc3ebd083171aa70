"""A small terminal progress bar for management commands (stderr, only on a terminal)."""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO


class ProgressBar:
    """Draws `label [#####     ] 42%  12.3s` on a terminal; silent when the stream is not a TTY. As a
    context manager (`with ProgressBar(label) as bar:`) it is closed however the work ends."""

    def __init__(self, label: str, *, stream: TextIO | None = None, width: int = 30) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.width = width
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.started = time.monotonic()
        self._last_draw = 0.0

    def __call__(self, fraction: float, message: str = "") -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if fraction < 1.0 and now - self._last_draw < 0.1:
            return
        self._last_draw = now
        fraction = min(max(fraction, 0.0), 1.0)
        filled = int(self.width * fraction)
        bar = "#" * filled + " " * (self.width - filled)
        elapsed = now - self.started
        self.stream.write(f"\r{self.label} [{bar}] {fraction:4.0%} {elapsed:6.1f}s {message[:40]:<40}")
        self.stream.flush()

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()
