"""The errors of every reader of the house: :class:`LineError` (one problem, ``FILE:LINE: message``),
:class:`FormatError` (all the problems of a file, raised once it was read) and the messages every reader
words the same way (:func:`line_too_long`, :func:`nul_message`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

#: How many errors ``str(FormatError)`` shows before "... and N more".
SHOWN_ERRORS = 20


@dataclass(frozen=True)
class LineError:
    """One problem in one file: ``line`` is 1-based, or ``None`` for a problem with the whole file."""

    path: str
    line: int | None
    message: str

    def __str__(self) -> str:
        if self.line is None:
            return f"{self.path}: {self.message}"
        return f"{self.path}:{self.line}: {self.message}"


class FormatError(ValueError):
    """A file could not be read completely and correctly; ``errors`` lists every problem recorded.

    ``str(exc)`` is the errors, one per line, the first 20 followed by ``... and N more``.
    """

    def __init__(self, errors: Iterable[LineError]) -> None:
        self.errors: list[LineError] = list(errors)
        super().__init__(self._render())

    def _render(self) -> str:
        lines = [str(error) for error in self.errors[:SHOWN_ERRORS]]
        if len(self.errors) > SHOWN_ERRORS:
            lines.append(f"... and {len(self.errors) - SHOWN_ERRORS} more")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self._render()

    def __reduce__(self) -> tuple[Any, ...]:
        # Keeps the structured errors when pickled (e.g. by a task queue).
        return (type(self), (self.errors,))


def line_too_long(limit: int) -> str:
    """The message for a line over the limit (the same in every reader)."""
    return f"line longer than the limit of {limit:,} bytes"


def nul_message(column: int) -> str:
    """The message for a NUL byte in a line (the same in every reader)."""
    return f"NUL byte at byte column {column} (text may not contain NUL)"
