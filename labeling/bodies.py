"""The API's answers declared once: a body the code builds is a dataclass beside that code, and its
serializer (a `BodySerializer`, for the OpenAPI schema) reads the fields from it
(djangorestframework-dataclasses) instead of restating them. Only what a type cannot say is written on
the serializer: a help text (`Meta.extra_kwargs`), a date-time the body holds as its ISO 8601 string, a
nested serializer of its own."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, ParamSpec

from rest_framework import serializers
from rest_framework_dataclasses.serializers import DataclassSerializer

_Params = ParamSpec("_Params")


def as_dict(builder: Callable[_Params, Any]) -> Callable[_Params, dict[str, Any]]:
    """`builder` (a function that builds an answer's dataclass) answering the dict of it
    (`dataclasses.asdict`), with the same parameters, typed: for callers that index the answer."""

    @functools.wraps(builder)
    def built(*args: _Params.args, **kwargs: _Params.kwargs) -> dict[str, Any]:
        return asdict(builder(*args, **kwargs))

    return built


class BodySerializer(DataclassSerializer):
    """Describes the dataclass `Meta.dataclass`. Its schema component is named after the serializer (as
    every other component is, so the names do not move with the dataclass) and described by the
    dataclass's docstring, the one place the answer is explained. For answers only, not for input."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        meta = getattr(cls, "Meta", None)
        body = getattr(meta, "dataclass", None)
        if meta is None or body is None:
            return
        if "ref_name" not in vars(meta):
            meta.ref_name = cls.__name__.removesuffix("Serializer")
        if "__doc__" not in vars(cls) or cls.__doc__ is None:
            cls.__doc__ = body.__doc__

    def build_dataclass_field(self, field_name: str, type_info: Any) -> tuple[type[serializers.Field], dict]:
        """A field that holds another answer's dataclass: described by its own `BodySerializer`, named and
        explained as every other (`body_serializer`), so a nested answer needs no serializer written."""
        return body_serializer(type_info.base_type), {"many": type_info.is_many}

    def get_fields(self) -> dict[str, serializers.Field]:
        """Every field, required: an answer made from the dataclass holds each of them (a field with a
        default is one the code may leave out when it builds the body, not one the answer may lack)."""
        fields: dict[str, serializers.Field] = super().get_fields()
        for field in fields.values():
            field.required = True
        return fields


@functools.cache
def body_serializer(body: type) -> type[BodySerializer]:
    """The `BodySerializer` of the dataclass `body`, for a field that holds one: named after the dataclass
    (its schema component too) and made once, so every answer that nests `body` shares one component."""
    meta = type("Meta", (), {"dataclass": body})
    return type(
        f"{body.__name__}Serializer", (BodySerializer,), {"Meta": meta, "__module__": body.__module__}
    )
