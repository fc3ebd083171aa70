"""Pure, streaming readers for the platform's topics and documents files, and what every reader of the
house shares: how a file is opened (:func:`open_binary`), its errors (:class:`LineError`,
:class:`FormatError`) and the limits a file must keep to (:func:`limits`). Runs and qrels have one reader
of their own, vectorised, in ``pooling.trec_io``, which uses these.

The readers are split, one module each: ``errors`` (``LineError``, ``FormatError``, the messages every
reader shares), ``opening`` (``source_name``, ``client_name``, ``open_binary``, ``open_lines`` and the limits:
``limits``, ``current_limits``, ``SizeLimitReached``), ``entries`` (``TopicEntry``, ``DocumentEntry``),
``reader`` (``format_guess``, the bookkeeping the topics and documents readers
share), ``jsonl`` (JSON Lines), ``sgml`` (``<X>…</X>`` blocks), ``topics`` (``read_topics``) and
``documents`` (``read_documents``). The public names are imported here (and the private ones
``online``'s readers use). A module's constants are read in that module: to change one (a test does),
patch it there (``pooling.formats.opening._BLOCK_SIZE``), not here.

No Django here: every reader takes a path (``str`` or ``os.PathLike``) or an already-open *binary* file
object with a ``name`` (an upload), and yields entries one by one, so memory does not grow with the file
(only the sets needed to detect duplicates do: qids for topics, docids for documents).

Error semantics, shared by every reader:

- A reader yields every good entry as it streams and records each bad line as a :class:`LineError`
  (``FILE:LINE: message``). After the last entry, if anything was wrong, it raises :class:`FormatError`
  carrying all the errors. Callers consume inside one database transaction, so that exception rolls back
  everything: one bad line anywhere stores nothing.
- After ``max_errors`` errors the reader stops reading; one more error, ``stopped reading after N
  errors``, names the line where it stopped (a line adds at most one error, except in TREC SGML
  files, where a block can add two).
- Fatal problems are errors too: file not found (``path: file not found``), a truncated or corrupt gzip
  stream (named with the line being read when it broke, or file-level if no line was read), an empty file
  (``path: file is empty``: no non-blank line at all) or a file without a single entry
  (``path: no ... found``, e.g. only comments).
- Invalid UTF-8 is reported on its line (``path:7: invalid UTF-8 (byte 0xff at byte column 12)``), and
  reading goes on with the next line.
- A UTF-8 byte-order mark at the start of the file is dropped; ``\\r\\n`` line ends are accepted.
- A NUL byte (raw, or ``\\u0000`` in a JSON string) is an error on its line: trec_eval's files may not
  hold one, and PostgreSQL cannot store one in text.
- So is an unpaired surrogate escape (``\\ud800``) in a JSON string: it is no character, and no UTF-8
  text can hold it.

Limits (:func:`limits`, set by the caller for a scope; the defaults suit a notebook): a line longer than
``line_bytes`` (1 MiB by default) is an error on its line and reading stops there, so no line is ever
held whole beyond that; after ``total_bytes`` bytes of (decompressed) data the reader raises
:class:`SizeLimitReached`, which is not a file error: the caller decides (the web request's check hands
the file to its job). Both bound what a small gzip file can expand to.

Identifiers (qids and docids) must be non-empty and contain no whitespace: runs and qrels are
whitespace-separated, so such an identifier could never be matched. A topics or documents file's qid is
at most 100 characters and its docid 255 (``reader.MAX_ID_LENGTH``: what a collection keeps).

``.gz`` files are read transparently (recognised by their magic bytes, or by the ``.gz`` suffix in any
case: ``gzip_named``, ``without_gz``).
"""

from __future__ import annotations

from pooling.formats.documents import DOCUMENT_FORMATS, read_documents
from pooling.formats.entries import DocumentEntry, TopicEntry
from pooling.formats.errors import SHOWN_ERRORS, FormatError, LineError, line_too_long, nul_message
from pooling.formats.jsonl import _Invalid as _Invalid
from pooling.formats.jsonl import _json_id as _json_id
from pooling.formats.jsonl import _json_parsed as _json_parsed
from pooling.formats.jsonl import _json_type as _json_type
from pooling.formats.opening import (
    Limits,
    Opened,
    SizeLimitReached,
    Source,
    client_name,
    current_limits,
    gzip_named,
    limits,
    open_binary,
    open_lines,
    open_path,
    source_name,
    without_gz,
)
from pooling.formats.reader import FORMAT_NAMES, format_guess
from pooling.formats.reader import _id_problem as _id_problem
from pooling.formats.reader import _Reader as _Reader
from pooling.formats.topics import TOPIC_FORMATS, read_topics

#: The formats a documents or topics file may be in, what an upload's form, the API and the import commands
#: offer (the readers' own: `DOCUMENT_FORMATS`, `TOPIC_FORMATS`).
FILE_FORMATS = tuple(dict.fromkeys((*DOCUMENT_FORMATS, *TOPIC_FORMATS)))

# The ``_name as _name`` imports re-export the private helpers online.logformats and online.ubi take
# from here (their log readers share this bookkeeping and these JSON checks); they stay out of __all__.
__all__ = [
    "DOCUMENT_FORMATS",
    "FILE_FORMATS",
    "FORMAT_NAMES",
    "SHOWN_ERRORS",
    "TOPIC_FORMATS",
    "DocumentEntry",
    "FormatError",
    "Limits",
    "LineError",
    "Opened",
    "SizeLimitReached",
    "Source",
    "TopicEntry",
    "client_name",
    "current_limits",
    "format_guess",
    "gzip_named",
    "limits",
    "line_too_long",
    "nul_message",
    "open_binary",
    "open_path",
    "open_lines",
    "read_documents",
    "read_topics",
    "source_name",
    "without_gz",
]
