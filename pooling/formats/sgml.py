"""SGML-ish files (TREC topics and TREC documents): ``_blocks`` (the text of each ``<X>…</X>`` block,
with the line where it opened) and ``_SPACES`` (a run of whitespace, collapsed to one space).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from pooling.formats.reader import _Reader

_SPACES = re.compile(r"\s+")


def _blocks(reader: _Reader, tag: re.Pattern[str], label: str) -> Iterator[tuple[int, str]]:
    """The text inside each ``<X>…</X>`` block of an SGML-ish file, with the line where it opened.

    ``tag`` matches the opening and closing tag, group 1 being ``/`` for a closing one. Blocks may start
    and end anywhere on a line. Non-blank text outside blocks, a block opened inside an open block, a
    stray closing tag and a block still open at the end of the file are errors.
    """
    opened: int | None = None
    parts: list[str] = []
    for lineno, line in reader.lines():
        if line.strip():
            reader.content = True
        outside_text = False
        position = 0
        for match in tag.finditer(line):
            chunk = line[position : match.start()]
            position = match.end()
            closing = bool(match.group(1))
            if opened is None:
                outside_text = outside_text or bool(chunk.strip())
                if closing:
                    reader.error(lineno, f"</{label}> without a matching <{label}>")
                else:
                    opened, parts = lineno, []
                continue
            parts.append(chunk)
            if closing:
                yield opened, "".join(parts)
                opened, parts = None, []
            else:
                reader.error(
                    opened, f"<{label}> opened here is not closed before the <{label}> on line {lineno}"
                )
                opened, parts = lineno, []
        rest = line[position:]
        if opened is None:
            outside_text = outside_text or bool(rest.strip())
        else:
            parts.append(rest)
            parts.append("\n")
        if outside_text:
            reader.error(lineno, f"text outside <{label}> … </{label}>")
    if opened is not None and reader.complete:
        reader.error(opened, f"<{label}> opened here is never closed (end of file)")
