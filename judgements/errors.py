"""The one refusal of the judging app: an action that was refused and changed nothing."""

from __future__ import annotations

from pooling import errors as pooling_errors


class JudgingError(pooling_errors.Refused):
    """A judging action was refused; nothing changed."""


class NotARater(JudgingError):
    """The user does not (or no longer) rate the pool: the rater API answers as if the pool or the
    assignment did not exist (404), or 403 to a manager of the pool."""
