"""The one refusal of the judging app: an action that was refused and changed nothing."""

from __future__ import annotations

import re

from pooling import errors as pooling_errors

#: A message that starts with the input it is about (`judges`: "seed: between 0 and 2,147,483,647").
_FIELD_PREFIX = re.compile(r"([a-z_]+): (.+)", re.DOTALL)


class JudgingError(pooling_errors.Refused):
    """A judging action was refused; nothing changed. `field` names the input at fault when there is one:
    given as `field=`, or read from a message written `field: what is wrong`, whose `message` is then what
    follows. The API answers a 400 on it (`judgements.api.refusal`); without one, a 400 with `detail`."""

    def __init__(self, message: str = "", *, field: str | None = None) -> None:
        prefixed = _FIELD_PREFIX.fullmatch(message)
        super().__init__(message, field=field or (prefixed[1] if prefixed else None))
        if prefixed and prefixed[1] == self.field:
            self.message = prefixed[2]


class NotARater(JudgingError):
    """The user does not (or no longer) rate the pool: the rater API answers as if the pool or the
    assignment did not exist (404), or 403 to a manager of the pool."""
