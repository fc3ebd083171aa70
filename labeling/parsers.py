"""The API's one reader of a JSON request body: the DRF views' parser (`JSONParser`, first of
REST_FRAMEWORK's DEFAULT_PARSER_CLASSES) and the plain function views of the hot paths
(`judgements.rater_api`) both call `read_json`, so that a body one refuses the other refuses too, with the
same 400."""

from __future__ import annotations

import json
from typing import Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError
from rest_framework.utils.json import strict_constant


def read_json(body: bytes, *, encoding: str | None = None) -> Any:
    """`body` decoded (`encoding`, the request's charset, else DEFAULT_CHARSET; a text encoding only) and
    read as strict JSON (NaN and Infinity are not JSON, as REST_FRAMEWORK's STRICT_JSON has it). Anything
    else is a ParseError (400), nesting deeper than the decoder can follow included: DRF's own parser
    lets that RecursionError through, a 500."""
    charset = parsers.get_encoding({"encoding": encoding} if encoding else {})
    try:
        return json.loads(body.decode(charset), parse_constant=strict_constant)
    except ValueError as exc:  # a JSONDecodeError, a UnicodeDecodeError, the strict constants
        raise ParseError(f"JSON parse error - {exc}") from None
    except RecursionError:
        raise ParseError("JSON parse error - nested too deeply") from None


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, reading with `read_json`."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        return read_json(stream.read(), encoding=(parser_context or {}).get("encoding"))
