"""An integer column takes PostgreSQL's range (the production database's) on every database: the embedded
SQLite, which would store any 64-bit value, refuses what production could not hold, with the same message
(`pooling.models.column_problems`, which every pool option, page and command asks). A text column takes
no NUL, as PostgreSQL's cannot hold one."""

from __future__ import annotations

import pytest
from django.db import connection

from pooling.models import Pool, column_problems

pytestmark = pytest.mark.django_db


@pytest.fixture
def sixty_four_bit_columns(monkeypatch):
    """The database's own integer ranges as SQLite's (64-bit), whatever the database under the tests."""
    field = Pool._meta.get_field("depth")
    monkeypatch.setattr(connection.ops, "integer_field_range", lambda internal_type: (-(2**63), 2**63 - 1))
    field.__dict__.pop("validators", None)  # Django caches a field's validators, range included
    yield
    field.__dict__.pop("validators", None)


def test_it_holds_an_integer_column_to_postgresqls_range_on_a_64_bit_database(sixty_four_bit_columns):
    assert column_problems(Pool, "depth", 2**31) == ["Ensure this value is less than or equal to 2147483647."]
    assert column_problems(Pool, "depth", 2**31 - 1) == []
    # beyond the 64-bit database's range too: still PostgreSQL's range that is named, not the database's
    assert column_problems(Pool, "depth", 10**20) == column_problems(Pool, "depth", 2**31)
    assert column_problems(Pool, "depth", "ten") == ["“ten” value must be an integer."]


def test_it_says_a_columns_range_once_where_the_database_has_it_too():
    assert column_problems(Pool, "depth", 2**31) == ["Ensure this value is less than or equal to 2147483647."]


def test_it_refuses_a_nul_in_a_text_column_as_a_form_and_a_serializer_do():
    """No PostgreSQL text column holds a NUL; the model field does not check it, so a service called with
    no form in front (a command reading a file) would crash on the database without this."""
    assert column_problems(Pool, "instructions", "grade\x00it") == ["Null characters are not allowed."]
    assert column_problems(Pool, "instructions", "grade it") == []
