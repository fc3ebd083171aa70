"""The one refusal of the judging app: an action that was refused and changed nothing."""

from __future__ import annotations

from pooling import errors as pooling_errors


class JudgingError(pooling_errors.Refused):
    """A judging action was refused; nothing changed."""
