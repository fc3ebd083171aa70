"""A pool's texts: its description (for managers) and its instructions (what its raters read), the one part
of a pool that changes after it is made. Everything else — the collection, the runs, the strategy and its
options — is the pool's selection, fixed when the pool is made: its items, their provenance and everything
judged on them rest on it.

The texts are stored as given and escaped wherever they are shown (the templates' autoescape; the rater's
pages render the instructions through `linebreaksbr`, which escapes first), so an edit is held to the rule a
new pool's texts are (`text_problems`), nothing more."""

from __future__ import annotations

from typing import Any

from pooling.errors import PoolError
from pooling.models import Pool, column_problems

#: The fields of a pool that may be edited once it is made, in the order the pages show them.
TEXT_FIELDS = ("description", "instructions")


def text_problems(**texts: str) -> dict[str, list[str]]:
    """What each column says of the texts given by keyword (`description`, `instructions`;
    `column_problems`), by field: the rule a new pool's texts and an edit's both obey."""
    problems: dict[str, list[str]] = {}
    for field, value in texts.items():
        if messages := column_problems(Pool, field, value):
            problems[field] = [f"{field}: {message}" for message in messages]
    return problems


def not_editable(fields: Any) -> dict[str, list[str]]:
    """The fields among `fields` (names given to an edit) that are not the pool's texts, each with why: the
    message the API answers on each (a name that is no field of a pool at all is said to be one)."""
    known = {field.name for field in Pool._meta.get_fields()}
    editable = " and ".join(TEXT_FIELDS)
    return {
        field: [
            f"{field} cannot change once a pool is made: only {editable} are edited. A pool's selection (its "
            "collection, runs, strategy and options) stays as made: delete the pool (if nobody has judged "
            "it) and make it again, or add or remove runs"
            if field in known
            else f"a pool has no field {field!r}: only {editable} are edited"
        ]
        for field in fields
        if field not in TEXT_FIELDS
    }


def edit_pool_text(*, pool: Pool, description: str | None = None, instructions: str | None = None) -> Pool:
    """Change the description and the instructions of `pool` (None: that one unchanged), at any time —
    built, judged or released, since neither selects nor judges anything — and answer the pool. Refused
    (`PoolError` naming the field, nothing changed) for what `text_problems` says."""
    given = {
        field: value
        for field, value in (("description", description), ("instructions", instructions))
        if value is not None
    }
    if problems := text_problems(**given):
        raise PoolError(fields=problems)
    # only these columns: a build running meanwhile writes the pool's status, which a save() would undo
    Pool.objects.filter(pk=pool.pk).update(**given)
    for field, value in given.items():
        setattr(pool, field, value)
    return pool


def texts_saved(pool: Pool, texts: dict[str, str | None]) -> str:
    """What the page and the command say once `edit_pool_text` saved the `texts` given (None: not given)."""
    saved = " and ".join(field for field in TEXT_FIELDS if texts.get(field) is not None)
    return f"Pool {pool.name}: {saved} saved."
