"""JSON Lines, for the topics and documents readers (and ``online``'s log readers): ``_json_objects``
(the object of each line, orjson first, the json module's results and messages), ``_json_parsed`` and
the field checks (``_json_id``, ``_json_text``, ``_Invalid``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from pooling.formats.reader import _id_problem, _Reader

_Parsed = TypeVar("_Parsed")


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


#: The deepest a JSON line may nest (arrays and objects), whichever parser read it.
MAX_JSON_DEPTH = 512
_DIGITS = bytes(1 if 48 <= i <= 57 else 0 for i in range(256))  # bytes.translate: ASCII digits to 1
_LONG_NUMBER = b"\x01" * 19
_UNREAD = object()


def _json_objects(reader: _Reader) -> Iterator[tuple[int, dict[str, Any]]]:
    """The JSON object of each non-blank line; a line that is not valid JSON or not an object is an error."""
    import json  # here, not at the top: reading a run or qrels (``evaluate`` on files) needs no JSON

    import orjson

    for lineno, line in reader.lines():
        # orjson (several times faster) parses the lines it reads exactly as the json module does; the
        # rest go to the json module, whose results and messages are the reader's: what orjson refuses
        # (a blank line, bad JSON, NaN, 1e400, lone surrogates, deep nesting) and any line with a run of
        # 19 digits (orjson reads integers past 64 bits as floats).
        value: Any = _UNREAD
        if line.encode().translate(_DIGITS).find(_LONG_NUMBER) < 0:
            try:  # noqa: SIM105 (a with-block per line costs more than the parse)
                value = orjson.loads(line)
            except orjson.JSONDecodeError:
                pass
        if value is _UNREAD:
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                reader.content = True
                reader.error(lineno, f"invalid JSON: {exc.msg} (column {exc.colno})")
                continue
            except RecursionError:
                reader.content = True
                reader.error(lineno, "invalid JSON: nested too deeply")
                continue
        reader.content = True
        if not isinstance(value, dict):
            reader.error(lineno, f"expected a JSON object, found {_json_type(value)}")
            continue
        # A value nested as deep as orjson reads (1,024) is more than the json module can write back (the
        # metadata column) from the depth of a stack a job runs at: the line is refused here instead.
        if line.count("[") + line.count("{") > MAX_JSON_DEPTH and _too_deep(value):
            reader.error(lineno, f"invalid JSON: nested too deeply (more than {MAX_JSON_DEPTH} levels)")
            continue
        if "\\u0000" in line and _holds_nul(value):  # the escape is rare: only then look deeper
            reader.error(lineno, "NUL character (\\u0000) in a JSON string (text may not contain NUL)")
            continue
        # A lone surrogate escape (\ud800) is read by the json module (orjson refuses it) into a string
        # no UTF-8 text, and so no database or scratch file, can hold. As rare: only then look deeper.
        if ("\\ud" in line or "\\uD" in line) and _holds_surrogate(value):
            reader.error(
                lineno,
                "unpaired surrogate (\\ud800-\\udfff) in a JSON string (text must be valid Unicode)",
            )
            continue
        yield lineno, value


def _json_parsed(
    reader: _Reader, parse: Callable[[int, dict[str, Any]], _Parsed]
) -> Iterator[tuple[int, _Parsed]]:
    """(line number, `parse(line number, object)`) for each JSON object of `reader`'s file; an object
    `parse` finds invalid (`_Invalid`) is an error on its line, and passed over."""
    for lineno, obj in _json_objects(reader):
        try:
            parsed = parse(lineno, obj)
        except _Invalid as exc:
            reader.error(lineno, str(exc))
            continue
        yield lineno, parsed


def _scalars(value: Any) -> Iterator[Any]:
    """Every key and scalar of a parsed JSON value, walked without recursion: a line the json module read
    may nest almost as deep as Python's recursion limit, and a recursive walk would pass it."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        else:
            yield item


def _too_deep(value: Any) -> bool:
    """Whether a parsed JSON value nests deeper than MAX_JSON_DEPTH, found without recursion."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > MAX_JSON_DEPTH:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _holds_nul(value: Any) -> bool:
    """Whether a parsed JSON value has a NUL character in any string (keys included)."""
    return any(isinstance(item, str) and "\x00" in item for item in _scalars(value))


_SURROGATE = re.compile("[\ud800-\udfff]")


def _holds_surrogate(value: Any) -> bool:
    """Whether a parsed JSON value has an unpaired UTF-16 surrogate in any string (keys included)."""
    return any(isinstance(item, str) and _SURROGATE.search(item) is not None for item in _scalars(value))


def holds_non_finite(value: Any) -> bool:
    """Whether a parsed JSON value holds a number that is not finite: the json module reads ``NaN``,
    ``Infinity`` and an overflowing ``1e400`` as floats that no JSON column (PostgreSQL's jsonb) stores
    (``pooling.imports.import_documents`` refuses such metadata)."""
    return any(isinstance(item, float) and not math.isfinite(item) for item in _scalars(value))


class _Invalid(Exception):
    """A field of a JSON object is unusable; the message says which and why."""


def _json_id(obj: dict[str, Any], keys: tuple[str, ...], what: str) -> str:
    """The identifier under the first present key: a string, or an integer (converted with ``str``)."""
    for key in keys:
        if key in obj and obj[key] is not None:
            value = obj[key]
            break
    else:
        raise _Invalid(f"missing required field {keys[0]!r}")
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise _Invalid(f"field {key!r} must be a string, found {_json_type(value)}")
    problem = _id_problem(value, what)
    if problem:
        raise _Invalid(problem)
    return value


def _json_text(obj: dict[str, Any], keys: tuple[str, ...]) -> str:
    """The optional string under the first present key; missing or null is ``""``."""
    for key in keys:
        value = obj.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            raise _Invalid(f"field {key!r} must be a string, found {_json_type(value)}")
        return value
    return ""
