"""What the readers yield: :class:`TopicEntry` (``read_topics``) and :class:`DocumentEntry`
(``read_documents``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class TopicEntry:
    """One topic; ``line`` is where it starts (the ``<top>`` line for TREC topic files)."""

    qid: str
    query: str
    description: str
    narrative: str
    segments: tuple[str, ...]
    line: int


@dataclass(frozen=True, slots=True)
class DocumentEntry:
    """One document; ``line`` is where it starts (the ``<DOC>`` line for TREC SGML)."""

    docid: str
    title: str
    text: str
    url: str
    metadata: dict[str, Any]
    line: int
