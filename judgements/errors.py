"""The one refusal of the judging app: an action that was refused and changed nothing."""

from __future__ import annotations

from pooling import services as pooling_services


class JudgingError(pooling_services.Refused):
    """A judging action was refused; nothing changed."""
