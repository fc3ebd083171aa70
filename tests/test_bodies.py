"""`labeling.bodies.BodySerializer`: an answer declared once as a dataclass is described by it in the
OpenAPI schema — every field, each required, the component named after the serializer and described by
the dataclass's docstring."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, fields

from rest_framework import serializers

from judgements.agreement import bodies as agreement
from labeling.bodies import BodySerializer, body_serializer
from online import experiment_serializers, experiments
from tests.test_openapi_truth import schema


@dataclass(frozen=True)
class _Body:
    """A made-up answer."""

    n: int
    share: float | None
    names: list[str]
    seconds: float = 0.0


@dataclass(frozen=True)
class _Outer:
    """A made-up answer holding others."""

    one: _Body
    many: list[_Body]
    maybe: _Body | None


class _BodySerializer(BodySerializer):
    class Meta:
        dataclass = _Body
        extra_kwargs = {"share": {"help_text": "null when undefined"}}


def test_a_body_serializer_has_every_field_of_its_dataclass_each_required() -> None:
    fields_ = _BodySerializer().get_fields()
    assert list(fields_) == [f.name for f in fields(_Body)]
    assert all(field.required for field in fields_.values())  # `seconds` has a default: still in every answer
    assert isinstance(fields_["share"], serializers.FloatField) and fields_["share"].allow_null
    assert fields_["share"].help_text == "null when undefined"
    assert _BodySerializer.Meta.ref_name == "_Body"  # type: ignore[attr-defined]  # set by the base
    assert _BodySerializer.__doc__ == _Body.__doc__


def test_the_schema_describes_a_body_by_its_dataclass() -> None:
    component = schema()["components"]["schemas"]["InterleavingResult"]
    assert set(component["properties"]) == {f.name for f in fields(experiments.ResultBody)}
    assert set(component["required"]) == set(component["properties"])
    assert component["description"] == inspect.cleandoc(experiments.ResultBody.__doc__ or "")
    assert component["properties"]["computed_at"]["format"] == "date-time"  # declared on the serializer
    assert experiment_serializers.InterleavingResultSerializer.Meta.dataclass is experiments.ResultBody


def test_a_nested_body_needs_no_serializer_written() -> None:
    fields_ = body_serializer(_Outer)().get_fields()
    nested = body_serializer(_Body)
    assert body_serializer(_Body) is nested  # made once: every answer nesting `_Body` shares one component
    assert type(fields_["one"]) is nested and nested.Meta.ref_name == "_Body"
    assert nested.__doc__ == _Body.__doc__
    assert type(fields_["many"].child) is nested
    assert fields_["maybe"].allow_null and fields_["maybe"].required
    assert all(field.required for field in nested().get_fields().values())


def test_the_schema_describes_a_nested_body_by_its_dataclass() -> None:
    components = schema()["components"]["schemas"]
    cohen = components["Cohen"]  # nested in the agreement report: no serializer written for it
    assert set(cohen["properties"]) == {f.name for f in fields(agreement.Cohen)}
    assert set(cohen["required"]) == set(cohen["properties"])
    assert cohen["description"] == inspect.cleandoc(agreement.Cohen.__doc__ or "")
    assert cohen["properties"]["unweighted"] == {"$ref": "#/components/schemas/Kappa"}
    assert set(components["Kappa"]["required"]) == {f.name for f in fields(agreement.Kappa)}
