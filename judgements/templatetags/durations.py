"""Template filters for how long a rater took."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def seconds(value: float | None) -> str:
    """Seconds with the precision they need: 0.43 under a second (never a bare 0 for a quick judgement),
    one decimal under ten, whole seconds above; "—" when unknown."""
    if value is None:
        return "—"
    number = float(value)
    if number == 0:
        return "0"
    if number < 1:
        return f"{number:.2f}"
    if number < 10:
        return f"{number:.1f}"
    return f"{number:.0f}"
