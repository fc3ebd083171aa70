"""The documents reader, :func:`read_documents`, and its three formats (JSONL, TSV, TREC SGML)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from pooling.formats.entries import DocumentEntry
from pooling.formats.jsonl import _Invalid, _json_id, _json_objects, _json_text, _json_type
from pooling.formats.opening import Source, source_name
from pooling.formats.reader import _id_problem, _Reader, format_guess
from pooling.formats.sgml import _SPACES, _blocks

DOCUMENT_FORMATS = ("jsonl", "tsv", "trec")
#: The longest url a collection keeps, in characters (the column ``pooling.models.Document.url``).
MAX_URL_LENGTH = 2000


def _url_problem(url: str) -> str | None:
    if len(url) > MAX_URL_LENGTH:
        return f"url {url[:40]!r}… is {len(url):,} characters long (at most {MAX_URL_LENGTH:,})"
    return None


def read_documents(
    path: Source, *, format: str | None = None, max_errors: int = 50
) -> Iterator[DocumentEntry]:
    """Yield the documents of a JSONL, TSV or TREC SGML file (``format`` from the extension when not
    given, see :func:`format_guess`; the errors of a file read in a guessed format say so). A docid is
    required, non-empty, without whitespace, at most 255 characters (``reader.MAX_ID_LENGTH``), and unique
    in the file; a url is at most ``MAX_URL_LENGTH``.

    - ``jsonl``: one object per line, ``{"docid", "title", "text", "url", "metadata"}``. The docid is a
      string; an integer is accepted and converted with ``str`` (some collections number their
      documents). Pyserini's and ir_datasets' spellings are accepted when ``docid``/``text`` are absent:
      ``doc_id`` or ``id`` for the docid, ``contents`` or ``body`` for the text. title, text and url are
      optional strings (null = ""), metadata an optional object (null = {}); any other key is kept in
      metadata (unless metadata already has that key). A line that is not a JSON object is an error.
      Numbers are read as the json module reads them, ``NaN`` and ``Infinity`` included (the import,
      ``pooling.imports.import_documents``, refuses them: no JSON column stores one).
    - ``tsv``: ``docid<TAB>title<TAB>text``, exactly 3 fields (title and text may be empty, the docid is
      stripped of surrounding spaces). No header line, no unescaping.
    - ``trec``: TREC SGML as the classic collections ship it, read document by document:
      ``<DOC> <DOCNO>id</DOCNO> … <TEXT>…</TEXT> … </DOC>`` (tags case-insensitive). The title is the
      first of ``<HEADLINE>``, ``<TITLE>``, ``<HEAD>``, ``<HL>`` present (all occurrences of that tag
      joined). The text is every ``<TEXT>`` section joined by a blank line; without any ``<TEXT>``, it is
      everything in the document except DOCNO, DOCHDR and the title. In title and text, SGML comments and
      tags are removed, entities unescaped (``&amp;`` → ``&``) and whitespace collapsed to single spaces.
      The url is ``<URL>`` if present; metadata is empty. A missing or repeated ``<DOCNO>``, a ``<DOC>``
      not closed (at the end of the file or before the next ``<DOC>``; reported on the line where it
      opened) and non-blank text outside ``<DOC>…</DOC>`` are errors.
    """
    guessed = None  # why the format was guessed, for the errors (`format_guess`)
    if not format:
        format, guessed = format_guess(source_name(path), "documents")
    if format not in DOCUMENT_FORMATS:
        raise ValueError(
            f"unknown documents format {format!r}; expected one of {', '.join(DOCUMENT_FORMATS)}"
        )
    reader = _Reader(path, max_errors, guessed)
    parse = {"trec": _trec_documents, "tsv": _tsv_documents, "jsonl": _jsonl_documents}[format]
    yield from reader.first_of_each(parse(reader), "docid", "documents")


def _tsv_documents(reader: _Reader) -> Iterator[DocumentEntry]:
    for lineno, parts in reader.tab_fields():
        if len(parts) != 3:
            reader.error(
                lineno, f"expected 3 tab-separated fields 'docid<TAB>title<TAB>text', found {len(parts)}"
            )
            continue
        docid = parts[0].strip(" ")
        problem = _id_problem(docid, "docid")
        if problem:
            reader.error(lineno, problem)
            continue
        yield DocumentEntry(docid, parts[1], parts[2], "", {}, lineno)


_DOCUMENT_KEYS = {"docid", "doc_id", "id", "title", "text", "contents", "body", "url", "metadata"}


def _jsonl_documents(reader: _Reader) -> Iterator[DocumentEntry]:
    for lineno, obj in _json_objects(reader):
        try:
            docid = _json_id(obj, ("docid", "doc_id", "id"), "docid")
            title = _json_text(obj, ("title",))
            text = _json_text(obj, ("text", "contents", "body"))
            url = _json_text(obj, ("url",))
            problem = _url_problem(url)
            if problem:
                raise _Invalid(problem)
            metadata = obj.get("metadata")
            if metadata is None:
                metadata = {}
            elif not isinstance(metadata, dict):
                raise _Invalid(f"field 'metadata' must be an object, found {_json_type(metadata)}")
        except _Invalid as exc:
            reader.error(lineno, str(exc))
            continue
        extra = {
            key: value for key, value in obj.items() if key not in _DOCUMENT_KEYS and key not in metadata
        }
        if extra:
            metadata = {**metadata, **extra}
        yield DocumentEntry(docid, title, text, url, metadata, lineno)


_DOC_TAG = re.compile(r"<(/?)doc(?:\s[^>]*)?>", re.IGNORECASE)
_DOCNO = re.compile(r"<docno(?:\s[^>]*)?>(.*?)</docno\s*>", re.IGNORECASE | re.DOTALL)
_DOCHDR = re.compile(r"<dochdr(?:\s[^>]*)?>.*?(?:</dochdr\s*>|\Z)", re.IGNORECASE | re.DOTALL)
_TEXT = re.compile(r"<text(?:\s[^>]*)?>(.*?)(?:</text\s*>|\Z)", re.IGNORECASE | re.DOTALL)
_URL = re.compile(r"<url(?:\s[^>]*)?>(.*?)</url\s*>", re.IGNORECASE | re.DOTALL)
_TITLES = tuple(
    re.compile(rf"<{tag}(?:\s[^>]*)?>(.*?)</{tag}\s*>", re.IGNORECASE | re.DOTALL)
    for tag in ("headline", "title", "head", "hl")
)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_MARKUP = re.compile(r"<[^>]*>")


def _plain(markup: str) -> str:
    """Tags and comments removed, entities unescaped, whitespace collapsed."""
    import html  # here, not at the top: only documents have markup

    return _SPACES.sub(" ", html.unescape(_MARKUP.sub(" ", _COMMENT.sub(" ", markup)))).strip()


def _trec_documents(reader: _Reader) -> Iterator[DocumentEntry]:
    for line, block in _blocks(reader, _DOC_TAG, "DOC"):
        numbers = _DOCNO.findall(block)
        if not numbers:
            reader.error(line, "document has no <DOCNO>")
            continue
        if len(numbers) > 1:
            reader.error(line, f"document has {len(numbers)} <DOCNO> elements")
            continue
        docid = _plain(numbers[0])
        problem = _id_problem(docid, "docid")
        if problem:
            reader.error(line, problem)
            continue
        title, title_pattern = "", None
        for pattern in _TITLES:
            titles = pattern.findall(block)
            if titles:
                title, title_pattern = _plain(" ".join(titles)), pattern
                break
        url_match = _URL.search(block)
        url = _plain(url_match.group(1)) if url_match else ""
        problem = _url_problem(url)
        if problem:
            reader.error(line, problem)
            continue
        sections = _TEXT.findall(block)
        if sections:
            text = "\n\n".join(part for part in (_plain(section) for section in sections) if part)
        else:  # no <TEXT>: everything but the number, the HTTP header, the URL and the title
            body = _URL.sub(" ", _DOCHDR.sub(" ", _DOCNO.sub(" ", block)))
            text = _plain(title_pattern.sub(" ", body) if title_pattern else body)
        yield DocumentEntry(docid, title, text, url, {}, line)
