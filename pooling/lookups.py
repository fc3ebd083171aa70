"""`__in` of an integer column given a value the column cannot hold: that value matches no row.

Django already answers so for `exact`, `gt`, `lt` and the others (`IntegerFieldOverflow`), not for `in`:
on SQLite, binding an id of 22 digits raised OverflowError, so a form or filter that took a list of ids
(the runs of the pool form, say) answered 500 to `runs=999999999999999999999` instead of "not one of the
choices". Registered on `IntegerField`, and so on every integer and auto field (`PoolingConfig.ready`).
"""

from __future__ import annotations

from typing import Any

from django.db.models import IntegerField, lookups


class InWithinRange(lookups.In):
    """`field__in=values`, the values outside the column's range left out (none can match)."""

    def process_rhs(self, compiler: Any, connection: Any) -> Any:
        if self.rhs_is_direct_value():
            low, high = connection.ops.integer_field_range(self.lhs.output_field.get_internal_type())
            self.rhs = [
                value
                for value in self.rhs
                if not isinstance(value, int)
                or ((low is None or value >= low) and (high is None or value <= high))
            ]
        return super().process_rhs(compiler, connection)


def register() -> None:
    IntegerField.register_lookup(InWithinRange)
