"""An integer column takes PostgreSQL's range (the production database's) on every database: the embedded
SQLite, which would store any 64-bit value, refuses what production could not hold, with the same message
(`pooling.models.column_problems`, which every pool option, page and command asks)."""

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


def test_it_says_a_columns_range_once_where_the_database_has_it_too():
    assert column_problems(Pool, "depth", 2**31) == ["Ensure this value is less than or equal to 2147483647."]
