"""The refusals of the pooling app: an import or a pool operation refused, having changed nothing."""

from __future__ import annotations

from pooling import formats


class Refused(Exception):
    """An action was refused and changed nothing; `errors` say why (what a job row records)."""

    @property
    def errors(self) -> list[str]:
        return [str(self)]


class ImportFailed(Refused):
    """An import stored nothing. `errors` are `FILE:LINE: message` strings."""

    def __init__(self, errors: list[str]) -> None:
        self._errors = errors
        shown = errors[:20]
        more = f"\n... and {len(errors) - 20} more" if len(errors) > 20 else ""
        super().__init__("\n".join(shown) + more)

    @property
    def errors(self) -> list[str]:
        return self._errors


class PoolError(Refused):
    """A pool operation was refused; nothing changed."""


def format_errors(exc: formats.FormatError) -> list[str]:
    """A reader's errors as the `FILE:LINE: message` strings an `ImportFailed` carries."""
    return [str(error) for error in exc.errors]
