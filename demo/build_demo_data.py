"""Build a demo collection, topics and three rankers' runs from the standard library's own documentation.

Usage: ``python demo/build_demo_data.py OUTDIR [--quick]``. Nothing is fetched; every byte is made on this
machine from this interpreter's ``pydoc_data.topics`` and the docstrings of its standard library. The output
(the TREC formats the importers read):

- ``documents.jsonl`` — ``{"docid", "title", "text", "url", "metadata"}`` per line; ``metadata`` is
  ``{"module": ..., "kind": "module|class|function|method|topic"}``.
- ``topics.jsonl`` — ``{"qid", "query", "description", "narrative", "segments"}`` per line.
- ``runs/tfidf.txt``, ``runs/bm25.txt``, ``runs/lsa.txt`` — TREC runs ``qid Q0 docid rank score tag``, the
  top ``RUN_DEPTH`` documents per topic, written in trec_eval's order (score descending, ties by docid
  descending), ranks 1..n.
- ``qrels_seed.txt`` — ``qid 0 docid grade`` for the hand-named canonical answers of each topic that exist
  in the collection (e.g. ``json.loads`` is grade 3 for "parse a JSON string into a dict"). A seed, not a
  judgement campaign: every other document is unjudged.

Docstrings are extracted in a child process (``sys.executable`` running this file with ``--extract``) with
its stdin, stdout and stderr on ``/dev/null``: importing arbitrary standard-library modules may print, set
signal handlers, start threads or change ``warnings`` filters, and none of that may leak into the caller
(a test process, a management command). Output is deterministic for a given Python build: modules, members
and topics are visited in sorted order, hash randomisation is fixed in the child, and memory addresses are
removed from signatures.

Importable without Django: ``build(outdir, quick=False) -> dict``.

Over 400 lines on purpose: nearly 600 of them are the demo's topics, hand-written data (each query with
its description, narrative, segments and canonical answers) kept beside the code that checks them against
the collection; the code itself is about 600 lines, read top to bottom as the build runs.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import inspect
import json
import os
import pkgutil
import re
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.preprocessing import normalize

# --- documents ---------------------------------------------------------------------------------------------

#: Docstrings shorter than this (after ``inspect.getdoc`` cleaning) are too trivial to judge.
MIN_DOC_CHARS = 40
#: Documents per topic in each run.
RUN_DEPTH = 100
#: Size of the ``--quick`` collection.
QUICK_DOCS = 400
QUICK_TOPICS = 6
#: Seconds the extraction child may take before it is killed.
EXTRACT_TIMEOUT = 300

#: Top-level modules never imported: side effects on import (open a browser, print, run a GUI or a
#: program), tests, installers, platform-specific or deprecated aliases that only warn, and this data itself.
DENY_MODULES = frozenset(
    {
        "__main__",
        "__phello__",
        "antigravity",
        "this",
        "idlelib",
        "tkinter",
        "turtle",
        "turtledemo",
        "test",
        "lib2to3",
        "ensurepip",
        "venv",
        "pydoc_data",
        "distutils",
        "readline",  # may write terminal escape sequences on import
        "rlcompleter",  # imports readline
        "msilib",
        "msvcrt",
        "nt",
        "ntpath",
        "nturl2path",
        "winreg",
        "winsound",
        "_winapi",
        "ossaudiodev",
        "sre_compile",
        "sre_constants",
        "sre_parse",
        "encodings",  # a hundred codec modules with one-line docstrings
    }
)
#: Submodules whose dotted name contains one of these parts are skipped (test suites, entry points).
DENY_PARTS = frozenset({"__main__", "test", "tests", "idle_test"})

#: Modules extracted for ``--quick``: the answers of the first ``QUICK_TOPICS`` topics and some distractors.
QUICK_MODULES = (
    "json",
    "builtins",
    "csv",
    "subprocess",
    "hashlib",
    "operator",
    "urllib.request",
    "http.client",
    "hmac",
    "shlex",
    "heapq",
    "bisect",
    "base64",
    "binascii",
    "zlib",
    "gzip",
    "tempfile",
)
#: Language-reference topics kept in ``--quick``.
QUICK_REFERENCE_TOPICS = 40

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


@dataclass(frozen=True)
class Document:
    """One collection document, as written to ``documents.jsonl``."""

    docid: str
    title: str
    text: str
    url: str
    module: str
    kind: str

    def as_json(self) -> dict[str, Any]:
        """The fields, with the module and kind as the document's metadata."""
        data = asdict(self)
        data["metadata"] = {"module": data.pop("module"), "kind": data.pop("kind")}
        return data


def _clean(text: str) -> str:
    return _ADDRESS.sub("", text).strip()


def _api_url(module: str, anchor: str) -> str:
    return f"https://docs.python.org/3/library/{module.lower()}.html#{anchor}"


def reference_topic_documents() -> list[Document]:
    """The entries of ``pydoc_data.topics.topics`` (the language reference pydoc shows), sorted by name.

    docid ``topic:<name>``, title the topic name, kind ``topic``, module ``pydoc_data.topics``.
    """
    from pydoc_data.topics import topics

    return [
        Document(
            docid=f"topic:{name}",
            title=name,
            text=_clean(topics[name]),
            url=f"https://docs.python.org/3/search.html?q={name}",
            module="pydoc_data.topics",
            kind="topic",
        )
        for name in sorted(topics)
        if len(topics[name].strip()) >= MIN_DOC_CHARS
    ]


def _is_denied(name: str) -> bool:
    parts = name.split(".")
    return parts[0] in DENY_MODULES or any(p in DENY_PARTS or p.startswith("_") for p in parts)


#: Seconds one import may take in the extraction child before it is abandoned (``None``: no limit, the
#: default in any other process, whose signal handlers are not ours to replace).
_import_timeout: int | None = None


def _on_alarm(signum: int, frame: Any) -> None:
    raise TimeoutError("import took too long")


def _import_quietly(name: str) -> Any | None:
    """Import ``name``; ``None`` if it fails for any reason (platform-specific, missing C library, hangs,
    exits). Warnings and anything printed to ``sys.stdout``/``sys.stderr`` are swallowed."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sink = open(os.devnull, "w")  # noqa: SIM115 - closed below, after both redirects end
        try:
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                if _import_timeout is not None:
                    signal.alarm(_import_timeout)
                return importlib.import_module(name)
        except BaseException:  # noqa: BLE001 - SystemExit from a script-like module is a failure too
            return None
        finally:
            if _import_timeout is not None:
                signal.alarm(0)
            sink.close()


def iter_module_names(roots: Sequence[str]) -> Iterator[str]:
    """Public importable module names under ``roots``, depth-first, each level sorted by name.

    A package's submodules are found with ``pkgutil.iter_modules`` over its ``__path__``; denied names
    (:data:`DENY_MODULES`, :data:`DENY_PARTS`, any part starting with ``_``) are never imported.
    """
    for root in roots:
        if _is_denied(root):
            continue
        module = _import_quietly(root)
        if module is None:
            continue
        yield root
        path = getattr(module, "__path__", None)
        if path is not None:
            children = sorted(f"{root}.{info.name}" for info in pkgutil.iter_modules(path))
            yield from iter_module_names(children)


#: Public modules that re-export an implementation module other than ``_<name>`` as their own API.
_FACADES: dict[str, frozenset[str]] = {
    "os": frozenset({"posix"}),
    "threading": frozenset({"_thread"}),
    "curses.panel": frozenset({"_curses_panel"}),
    "importlib.machinery": frozenset({"_frozen_importlib", "_frozen_importlib_external"}),
    "importlib.util": frozenset({"_frozen_importlib", "_frozen_importlib_external"}),
    "types": frozenset({"builtins"}),
    "hashlib": frozenset({"_hashlib", "_md5", "_sha1", "_sha256", "_sha512", "_sha3", "_blake2"}),
    "hmac": frozenset({"_hashlib"}),
}


def _owns(module_name: str, obj: Any) -> bool:
    """True if ``obj`` is documented as part of ``module_name``.

    Defined there (``obj.__module__ == module_name``), or in its C accelerator ``_<module_name>``
    (``pickle.dumps`` from ``_pickle``), or in an implementation module listed in :data:`_FACADES`
    (``os.listdir`` from ``posix``). A name merely imported from elsewhere (``pickle.pack`` is
    ``struct.pack``) belongs to the other module.
    """
    owner = getattr(obj, "__module__", None)
    if not isinstance(owner, str):
        return False
    return owner in (module_name, f"_{module_name}") or owner in _FACADES.get(module_name, frozenset())


def _defined_in(cls: type, raw: Any) -> bool:
    """False for a routine merely assigned into the class (``ForkingPickler.loads = pickle.loads``): its
    ``__qualname__`` does not start with the class's. Routines without a ``__qualname__`` are kept."""
    target = raw.__func__ if isinstance(raw, classmethod | staticmethod) else raw
    qualname = getattr(target, "__qualname__", None)
    return not isinstance(qualname, str) or qualname.startswith(f"{cls.__qualname__}.")


def _signature(name: str, obj: Any) -> str:
    try:
        return f"{name}{inspect.signature(obj)}"
    except Exception:  # noqa: BLE001 - signatures of C functions fail in many ways (TypeError, AttributeError)
        return ""


def _is_routine(obj: Any) -> bool:
    return inspect.isroutine(obj) or isinstance(obj, classmethod | staticmethod)


def _init_doc(cls: type) -> str:
    """The docstring of ``cls.__init__`` if the class defines one: many classes document themselves there
    (``pprint.PrettyPrinter``, ``sched.scheduler``)."""
    init = vars(cls).get("__init__")
    return (inspect.getdoc(init) or "") if inspect.isfunction(init) else ""


def api_documents(module_name: str) -> Iterator[tuple[Document, str]]:
    """(document, docstring) for one module: the module, its functions, then each class and its methods.

    Members are public names (no leading ``_``) the module owns (:func:`_owns`), visited in sorted order;
    a class's methods are the routines in its own ``__dict__``. A class without a docstring is
    documented by its own ``__init__``'s docstring, if any. The text is the signature (when
    ``inspect.signature`` knows it) followed by ``inspect.getdoc``; the docstring is returned beside the
    document so the caller can drop trivial and duplicate ones.
    """
    module = _import_quietly(module_name)
    if module is None:
        return
    doc = inspect.getdoc(module) or ""
    yield (
        Document(
            module_name,
            module_name,
            _clean(doc),
            _api_url(module_name, f"module-{module_name}"),
            module_name,
            "module",
        ),
        doc,
    )
    members: list[tuple[str, Any]] = []
    for name in sorted(vars(module)):
        if name.startswith("_"):
            continue
        obj = vars(module)[name]
        if (inspect.isclass(obj) or _is_routine(obj)) and _owns(module_name, obj):
            members.append((name, obj))

    for name, obj in members:
        if inspect.isclass(obj):
            continue
        qualname = f"{module_name}.{name}"
        doc = inspect.getdoc(obj) or ""
        text = _clean("\n\n".join(part for part in (_signature(qualname, obj), doc) if part))
        yield (
            Document(qualname, qualname, text, _api_url(module_name, qualname), module_name, "function"),
            doc,
        )

    for name, cls in members:
        if not inspect.isclass(cls):
            continue
        qualname = f"{module_name}.{name}"
        doc = inspect.getdoc(cls) or _init_doc(cls)
        text = _clean("\n\n".join(part for part in (_signature(qualname, cls), doc) if part))
        yield Document(qualname, qualname, text, _api_url(module_name, qualname), module_name, "class"), doc
        for attr in sorted(vars(cls)):
            if attr.startswith("_"):
                continue
            raw = vars(cls)[attr]
            if not _is_routine(raw) or not _defined_in(cls, raw):
                continue
            try:
                method = getattr(cls, attr)
            except Exception:  # noqa: BLE001, S112 - a descriptor may refuse class access; nothing to document
                continue
            method_name = f"{qualname}.{attr}"
            doc = inspect.getdoc(method) or ""
            text = _clean("\n\n".join(part for part in (_signature(method_name, method), doc) if part))
            yield (
                Document(
                    method_name, method_name, text, _api_url(module_name, method_name), module_name, "method"
                ),
                doc,
            )


def extract_documents(*, quick: bool = False) -> list[Document]:
    """The collection, in this process: reference topics, then API docstrings module by module.

    Full: every module reachable from ``sys.stdlib_module_names`` (see :func:`iter_module_names`), in
    visiting order. Docstrings shorter than :data:`MIN_DOC_CHARS` are dropped, and so is a docstring
    identical to one already kept (the first in visiting order wins), as is a repeated docid.
    Quick: the first :data:`QUICK_REFERENCE_TOPICS` topics, then the documents of :data:`QUICK_MODULES`
    taken round-robin (one from each module in turn), cut at :data:`QUICK_DOCS`.
    """
    documents = reference_topic_documents()
    if quick:
        documents = documents[:QUICK_REFERENCE_TOPICS]
    names = list(QUICK_MODULES) if quick else iter_module_names(sorted(sys.stdlib_module_names))
    seen_texts = {d.text for d in documents}
    seen_ids = {d.docid for d in documents}
    per_module: list[list[Document]] = []
    for module_name in names:
        kept = []
        for document, doc in api_documents(module_name):
            key = doc.strip()
            if len(key) < MIN_DOC_CHARS or key in seen_texts or document.docid in seen_ids:
                continue
            seen_texts.add(key)
            seen_ids.add(document.docid)
            kept.append(document)
        per_module.append(kept)
    if not quick:
        return documents + [d for kept in per_module for d in kept]
    for turn in range(max((len(kept) for kept in per_module), default=0)):
        documents.extend(kept[turn] for kept in per_module if turn < len(kept))
    return documents[:QUICK_DOCS]


def _extract_child(out: Path, quick: bool) -> None:
    """Entry point of the extraction child: silence the standard streams at the file-descriptor level
    (C code writes there too), extract, write the documents as JSONL to ``out``."""
    global _import_timeout
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    if hasattr(signal, "SIGALRM"):
        signal.signal(signal.SIGALRM, _on_alarm)
        _import_timeout = 20
    documents = extract_documents(quick=quick)
    with out.open("w", encoding="utf-8") as f:
        for d in documents:
            f.write(json.dumps(d.as_json(), ensure_ascii=False) + "\n")
    # Skip interpreter teardown: imported modules' atexit hooks and threads are not ours to wait for.
    os._exit(0)


def collect_documents(*, quick: bool = False) -> list[Document]:
    """:func:`extract_documents` run in a child interpreter (``PYTHONHASHSEED=0``, no network needed)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "documents.jsonl"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--extract", str(out)]
        if quick:
            cmd.append("--quick")
        env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}
        subprocess.run(
            cmd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=EXTRACT_TIMEOUT,
            check=True,
        )
        documents = []
        with out.open(encoding="utf-8") as f:
            for line in f:
                row = json.loads(line)
                meta = row["metadata"]
                documents.append(
                    Document(
                        row["docid"], row["title"], row["text"], row["url"], meta["module"], meta["kind"]
                    )
                )
        return documents


# --- topics ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Topic:
    """A developer question, as written to ``topics.jsonl``, with its hand-named canonical answers.

    ``answers`` maps docids to grades on the default rubric (3 perfect, 2 good, 1 marginal); it feeds
    ``qrels_seed.txt`` only, and only for docids present in the collection.
    """

    qid: str
    query: str
    description: str
    narrative: str
    segments: tuple[str, ...]
    answers: dict[str, int] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The fields but the answers (they go to the seed qrels, not to the topics file)."""
        data = asdict(self)
        del data["answers"]
        return data


HEAD, TAIL, NAV, INFO = "head", "tail", "navigational", "informational"

#: The topics, in qid order. The first :data:`QUICK_TOPICS` have their answers in :data:`QUICK_MODULES`.
TOPICS: tuple[Topic, ...] = (
    Topic(
        "py01",
        "how do I parse a JSON string into a dict",
        "The user holds a JSON document in a str (from an API response or a config value) and wants the "
        "Python dict it encodes.",
        "Perfect: the function that decodes a JSON str into Python objects (json.loads). Good: the file "
        "variant json.load, or the decoder class and its decode method. Marginal: the json module overview "
        "or the encoding side (json.dumps), which only points the way. Not relevant: other serialisation "
        "formats (pickle, marshal, plistlib) and parsers for other syntaxes.",
        (HEAD, NAV),
        {
            "json.loads": 3,
            "json.load": 2,
            "json.decoder.JSONDecoder": 2,
            "json.decoder.JSONDecoder.decode": 2,
            "json": 1,
            "json.dumps": 1,
        },
    ),
    Topic(
        "py02",
        "sort a list of dicts by a key",
        "The user has a list of dictionaries (rows) and wants it ordered by the value under one key, "
        "possibly descending or by several keys.",
        "Perfect: sorted() or list.sort() with their key= and reverse= parameters. Good: operator.itemgetter "
        "as the key function. Marginal: functools.cmp_to_key, heapq.nlargest/nsmallest for the top few "
        "only. Not relevant: dict ordering, OrderedDict, or sorting algorithms in general.",
        (HEAD, INFO),
        {
            "builtins.sorted": 3,
            "builtins.list.sort": 3,
            "operator.itemgetter": 2,
            "functools.cmp_to_key": 1,
            "heapq.nlargest": 1,
            "heapq.nsmallest": 1,
        },
    ),
    Topic(
        "py03",
        "read a csv file with headers",
        "The user has a CSV file whose first row names the columns and wants each row as a mapping from "
        "column name to value.",
        "Perfect: csv.DictReader. Good: csv.reader (rows as lists, the header handled by hand) and "
        "csv.Sniffer.has_header. Marginal: the csv module overview, csv.DictWriter for the opposite "
        "direction. Not relevant: generic file reading or other tabular formats.",
        (HEAD, NAV),
        {
            "csv.DictReader": 3,
            "csv.reader": 2,
            "csv.Sniffer": 2,
            "csv.Sniffer.has_header": 2,
            "csv": 1,
            "csv.DictWriter": 1,
        },
    ),
    Topic(
        "py04",
        "run a subprocess and capture its output",
        "The user wants to run an external command from Python, wait for it, and get what it printed "
        "(stdout, maybe stderr) as a string, plus the exit status.",
        "Perfect: subprocess.run with capture_output, or subprocess.check_output. Good: subprocess.Popen "
        "with communicate(), subprocess.getoutput/getstatusoutput, the CompletedProcess result. Marginal: "
        "the subprocess module overview, os.popen. Not relevant: os.system (no capture), threads or "
        "multiprocessing.",
        (HEAD, NAV),
        {
            "subprocess.run": 3,
            "subprocess.check_output": 3,
            "subprocess.Popen": 2,
            "subprocess.Popen.communicate": 2,
            "subprocess.getoutput": 2,
            "subprocess.getstatusoutput": 2,
            "subprocess.CompletedProcess": 2,
            "subprocess": 1,
            "os.popen": 1,
        },
    ),
    Topic(
        "py05",
        "make an HTTP request",
        "The user wants to send an HTTP GET or POST to a URL with only the standard library and read the "
        "response.",
        "Perfect: urllib.request.urlopen. Good: urllib.request.Request (headers, method, data), "
        "http.client.HTTPConnection and its request/getresponse methods. Marginal: the urllib.request and "
        "http.client module overviews, openers and handlers. Not relevant: HTTP servers (http.server, "
        "wsgiref), URL parsing alone, or email and other protocols.",
        (HEAD, INFO),
        {
            "urllib.request.urlopen": 3,
            "urllib.request.Request": 2,
            "http.client.HTTPConnection": 2,
            "http.client.HTTPConnection.request": 2,
            "http.client.HTTPConnection.getresponse": 2,
            "urllib.request": 1,
            "http.client": 1,
            "urllib.request.build_opener": 1,
        },
    ),
    Topic(
        "py06",
        "compute sha256 of a file",
        "The user wants the SHA-256 hex digest of a file's contents, e.g. to verify a download, without "
        "reading a large file into memory at once.",
        "Perfect: hashlib.file_digest, or hashlib.sha256 fed chunk by chunk. Good: hashlib.new and the "
        "hashlib module overview (update/hexdigest). Marginal: hmac (a keyed digest), zlib.crc32 (a "
        "checksum, not a cryptographic hash). Not relevant: base64 or other encodings.",
        (HEAD, NAV),
        {
            "hashlib.file_digest": 3,
            "hashlib.sha256": 3,
            "hashlib.new": 2,
            "hashlib": 2,
            "hmac.new": 1,
            "hmac": 1,
            "zlib.crc32": 1,
        },
    ),
    Topic(
        "py07",
        "parse command line arguments",
        "The user writes a script and wants to accept options and positional arguments from the command "
        "line, with help text and type conversion.",
        "Perfect: argparse.ArgumentParser and its parse_args/add_argument. Good: the argparse module "
        "overview; getopt.getopt as the C-style alternative. Marginal: optparse (superseded), shlex.split "
        "(splitting a command string). Not relevant: parsing config files or environment variables.",
        (HEAD, NAV),
        {
            "argparse.ArgumentParser": 3,
            "argparse": 3,
            "argparse.ArgumentParser.parse_args": 3,
            "argparse.ArgumentParser.add_argument": 2,
            "getopt.getopt": 2,
            "getopt.gnu_getopt": 2,
            "optparse.OptionParser": 1,
            "shlex.split": 1,
        },
    ),
    Topic(
        "py08",
        "schedule a function to run later",
        "The user wants a callable to run after a delay or at a given time, inside the same program, "
        "without blocking the rest of it.",
        "Perfect: threading.Timer, sched.scheduler with enter/enterabs, the event loop's call_later/call_at "
        "in asyncio. Good: the sched module overview, asyncio.sleep in a task. Marginal: time.sleep "
        "(blocks), signal.alarm/setitimer. Not relevant: cron-like system schedulers or measuring time.",
        (TAIL, INFO),
        {
            "threading.Timer": 3,
            "sched.scheduler": 3,
            "sched.scheduler.enter": 3,
            "sched.scheduler.enterabs": 3,
            "sched": 2,
            "asyncio.base_events.BaseEventLoop.call_later": 3,
            "asyncio.base_events.BaseEventLoop.call_at": 2,
            "asyncio.tasks.sleep": 2,
            "time.sleep": 1,
            "signal.alarm": 1,
            "signal.setitimer": 1,
        },
    ),
    Topic(
        "py09",
        "pretty print nested data",
        "The user has deeply nested lists and dicts and wants them printed readably, indented and wrapped.",
        "Perfect: pprint.pprint and pprint.pformat. Good: pprint.PrettyPrinter and the pprint module, "
        "json.dumps with indent for JSON-compatible data. Marginal: reprlib (abbreviated reprs), "
        "textwrap. Not relevant: string formatting of single values.",
        (HEAD, NAV),
        {
            "pprint.pprint": 3,
            "pprint.pformat": 3,
            "pprint.PrettyPrinter": 2,
            "pprint": 2,
            "pprint.pp": 2,
            "json.dumps": 2,
            "reprlib": 1,
            "reprlib.Repr": 1,
        },
    ),
    Topic(
        "py10",
        "create a temporary directory",
        "The user needs a scratch directory that is unique, private and removed afterwards, e.g. in tests.",
        "Perfect: tempfile.TemporaryDirectory (a context manager that cleans up) and tempfile.mkdtemp. "
        "Good: the tempfile module overview. Marginal: tempfile.gettempdir, NamedTemporaryFile/mkstemp "
        "(a file, not a directory), shutil.rmtree for the cleanup. Not relevant: os.mkdir alone.",
        (HEAD, NAV),
        {
            "tempfile.TemporaryDirectory": 3,
            "tempfile.mkdtemp": 3,
            "tempfile": 2,
            "tempfile.gettempdir": 1,
            "tempfile.mkstemp": 1,
            "tempfile.NamedTemporaryFile": 1,
            "shutil.rmtree": 1,
        },
    ),
    Topic(
        "py11",
        "measure execution time of code",
        "The user wants to know how long a snippet or function takes, reliably enough to compare two "
        "versions.",
        "Perfect: timeit.timeit/timeit.Timer for micro-benchmarks, time.perf_counter for wall-clock spans. "
        "Good: timeit.repeat, the timeit module, time.process_time, cProfile/profile for where time goes. "
        "Marginal: time.time, time.monotonic. Not relevant: datetime arithmetic, scheduling.",
        (HEAD, INFO),
        {
            "timeit.timeit": 3,
            "timeit.Timer": 3,
            "time.perf_counter": 3,
            "timeit.repeat": 2,
            "timeit": 2,
            "time.process_time": 2,
            "cProfile": 2,
            "profile": 1,
            "time.monotonic": 1,
            "time.time": 1,
            "time.perf_counter_ns": 2,
        },
    ),
    Topic(
        "py12",
        "compare two text files and show differences",
        "The user wants a diff of two text files, like the output of diff -u, from Python.",
        "Perfect: difflib.unified_diff. Good: difflib.context_diff, difflib.ndiff, difflib.Differ, "
        "difflib.HtmlDiff and the difflib module. Marginal: difflib.SequenceMatcher (similarity only), "
        "filecmp.cmp (equal or not, no diff). Not relevant: comparing objects with ==.",
        (TAIL, NAV),
        {
            "difflib.unified_diff": 3,
            "difflib.context_diff": 2,
            "difflib.ndiff": 2,
            "difflib.Differ": 2,
            "difflib.HtmlDiff": 2,
            "difflib": 2,
            "difflib.SequenceMatcher": 1,
            "filecmp.cmp": 1,
        },
    ),
    Topic(
        "py13",
        "serialize an object to bytes",
        "The user wants to turn an arbitrary Python object into bytes (to store or send) and get it back "
        "later.",
        "Perfect: pickle.dumps (and pickle.loads to get it back). Good: pickle.Pickler, the pickle module, "
        "marshal.dumps (code objects and simple types), struct.pack for fixed binary layouts, shelve. "
        "Marginal: json.dumps (text, simple types only), copyreg. Not relevant: str.encode of text.",
        (HEAD, INFO),
        {
            "pickle.dumps": 3,
            "pickle.loads": 2,
            "pickle.Pickler": 2,
            "pickle": 2,
            "marshal.dumps": 2,
            "struct.pack": 2,
            "shelve": 1,
            "json.dumps": 1,
            "copyreg": 1,
        },
    ),
    Topic(
        "py14",
        "thread-safe queue between workers",
        "The user has producer and consumer threads and wants to hand work items between them safely.",
        "Perfect: queue.Queue with put/get/task_done/join. Good: queue.SimpleQueue, queue.LifoQueue, "
        "queue.PriorityQueue, the queue module, multiprocessing queues for processes. Marginal: "
        "collections.deque (atomic append/pop but no blocking), asyncio.Queue (not thread-safe). Not "
        "relevant: locks or thread pools in general.",
        (TAIL, NAV),
        {
            "queue.Queue": 3,
            "queue": 2,
            "queue.Queue.put": 2,
            "queue.Queue.get": 2,
            "queue.Queue.task_done": 2,
            "queue.Queue.join": 2,
            "queue.SimpleQueue": 2,
            "queue.LifoQueue": 1,
            "queue.PriorityQueue": 1,
            "multiprocessing.queues.Queue": 1,
            "collections.deque": 1,
            "asyncio.queues.Queue": 1,
        },
    ),
    Topic(
        "py15",
        "decimal arithmetic without float errors",
        "The user sees 0.1 + 0.2 != 0.3 and wants exact decimal arithmetic, e.g. for money, with control "
        "over rounding.",
        "Perfect: decimal.Decimal and the decimal module with its contexts (getcontext, localcontext, "
        "quantize). Good: fractions.Fraction (exact rationals), the language reference on floating point "
        "literals. Marginal: round(), math.isclose, math.fsum. Not relevant: integer arithmetic.",
        (TAIL, INFO),
        {
            "decimal.Decimal": 3,
            "decimal.Decimal.quantize": 2,
            "decimal.getcontext": 2,
            "decimal.localcontext": 2,
            "decimal.Context": 2,
            "fractions.Fraction": 2,
            "topic:floating": 1,
            "builtins.round": 1,
            "math.isclose": 1,
            "math.fsum": 1,
        },
    ),
    Topic(
        "py16",
        "walk a directory tree recursively",
        "The user wants to visit every file under a directory, including subdirectories, e.g. to find all "
        "files with some extension.",
        "Perfect: os.walk, pathlib.Path.rglob. Good: os.fwalk, pathlib.Path.glob with '**', glob.glob with "
        "recursive=True, glob.iglob. Marginal: os.scandir/os.listdir (one level), fnmatch for the "
        "pattern. Not relevant: copying or deleting trees (shutil) unless the walk is the point.",
        (HEAD, NAV),
        {
            "os.walk": 3,
            "pathlib.Path.rglob": 3,
            "os.fwalk": 2,
            "pathlib.Path.glob": 2,
            "glob.glob": 2,
            "glob.iglob": 2,
            "os.scandir": 1,
            "os.listdir": 1,
            "fnmatch.fnmatch": 1,
        },
    ),
    Topic(
        "py17",
        "match a regular expression and extract groups",
        "The user has a pattern with capture groups and wants to test a string and pull out the captured "
        "parts.",
        "Perfect: re.match/re.search/re.fullmatch and the match object's group/groups/groupdict. Good: "
        "re.findall and re.finditer (all matches), re.compile, the re module overview. Marginal: "
        "re.sub, re.split. Not relevant: glob or fnmatch wildcard patterns.",
        (HEAD, INFO),
        {
            "re.match": 3,
            "re.search": 3,
            "re.Match.group": 3,
            "re.Match.groups": 3,
            "re.Match.groupdict": 3,
            "re.fullmatch": 2,
            "re.findall": 2,
            "re.finditer": 2,
            "re.compile": 2,
            "re": 2,
            "re.sub": 1,
            "re.split": 1,
        },
    ),
    Topic(
        "py18",
        "count word frequencies",
        "The user has a text and wants how often each word occurs, and the most common ones.",
        "Perfect: collections.Counter and Counter.most_common. Good: str.split and re.findall to tokenize, "
        "Counter.update. Marginal: collections.defaultdict(int), dict.get. Not relevant: counting "
        "characters with str.count only.",
        (HEAD, INFO),
        {
            "collections.Counter": 3,
            "collections.Counter.most_common": 3,
            "collections.Counter.update": 2,
            "builtins.str.split": 2,
            "re.findall": 2,
            "collections.defaultdict": 1,
            "builtins.str.count": 1,
        },
    ),
    Topic(
        "py19",
        "date arithmetic add days",
        "The user wants the date N days (or weeks) after a given date, or the difference between two dates.",
        "Perfect: datetime.timedelta added to a date or datetime. Good: datetime.date and datetime.datetime "
        "(the operands), date.toordinal/fromordinal. Marginal: calendar module helpers, time.mktime. Not "
        "relevant: formatting or parsing dates only.",
        (HEAD, NAV),
        {
            "datetime.timedelta": 3,
            "datetime.date": 2,
            "datetime.datetime": 2,
            "datetime": 1,
            "datetime.date.toordinal": 1,
            "datetime.date.fromordinal": 1,
            "calendar": 1,
        },
    ),
    Topic(
        "py20",
        "compress a file with gzip",
        "The user wants to write a .gz file from an existing file (and read one back) in Python.",
        "Perfect: gzip.open (with shutil.copyfileobj), gzip.GzipFile. Good: gzip.compress/decompress, the "
        "gzip module, shutil.make_archive for archives. Marginal: zlib (raw deflate), bz2/lzma (other "
        "formats), tarfile with 'w:gz'. Not relevant: zipfile unless gzip is not required.",
        (TAIL, NAV),
        {
            "gzip.open": 3,
            "gzip.GzipFile": 3,
            "gzip.compress": 2,
            "gzip.decompress": 1,
            "gzip": 2,
            "shutil.copyfileobj": 2,
            "shutil.make_archive": 1,
            "zlib.compress": 1,
            "bz2.open": 1,
            "lzma.open": 1,
            "tarfile.open": 1,
        },
    ),
    Topic(
        "py21",
        "read environment variables",
        "The user wants the value of an environment variable such as HOME or a secret, with a default when "
        "it is unset.",
        "Perfect: os.getenv (and os.environ, which has no docstring of its own). Good: os.getenvb, "
        "os.putenv/unsetenv for the other direction. Marginal: os.path.expandvars, the os module "
        "overview. Not relevant: command-line arguments or config files.",
        (HEAD, NAV),
        {"os.getenv": 3, "os.getenvb": 2, "os.putenv": 1, "os.unsetenv": 1, "posixpath.expandvars": 1},
    ),
    Topic(
        "py22",
        "copy a file preserving metadata",
        "The user wants to copy a file and keep its permission bits and modification times, as cp -p does.",
        "Perfect: shutil.copy2. Good: shutil.copystat (metadata only), shutil.copytree (uses copy2). "
        "Marginal: shutil.copy (permissions only), shutil.copyfile (contents only), shutil.copymode. Not "
        "relevant: moving or deleting files.",
        (TAIL, NAV),
        {
            "shutil.copy2": 3,
            "shutil.copystat": 2,
            "shutil.copytree": 2,
            "shutil.copy": 1,
            "shutil.copyfile": 1,
            "shutil.copymode": 1,
        },
    ),
    Topic(
        "py23",
        "generate random sample without replacement",
        "The user wants k distinct elements chosen at random from a population, e.g. to pick test subjects.",
        "Perfect: random.sample. Good: random.shuffle then slicing, random.Random.sample with a seed, "
        "secrets.SystemRandom for security. Marginal: random.choices (with replacement), random.choice. "
        "Not relevant: random numbers in a range.",
        (HEAD, NAV),
        {
            "random.sample": 3,
            "random.shuffle": 2,
            "random.Random": 2,
            "random.SystemRandom": 1,
            "random.choices": 1,
            "random.choice": 1,
            "random": 1,
        },
    ),
    Topic(
        "py24",
        "log messages to a file with rotation",
        "The user's program writes a log file that must not grow without bound: it should roll over by "
        "size or by time and keep a few backups.",
        "Perfect: logging.handlers.RotatingFileHandler and TimedRotatingFileHandler. Good: the "
        "logging.handlers module, logging.FileHandler and logging.basicConfig (files without rotation), "
        "WatchedFileHandler. Marginal: logging.getLogger, Formatter. Not relevant: printing to the "
        "console only.",
        (TAIL, NAV),
        {
            "logging.handlers.RotatingFileHandler": 3,
            "logging.handlers.TimedRotatingFileHandler": 3,
            "logging.handlers": 2,
            "logging.FileHandler": 2,
            "logging.basicConfig": 2,
            "logging.handlers.WatchedFileHandler": 1,
            "logging.handlers.BaseRotatingHandler": 2,
            "logging.getLogger": 1,
            "logging.Formatter": 1,
        },
    ),
    Topic(
        "py25",
        "parse a date string into a datetime",
        "The user has dates as text ('2024-03-01 14:30' or 'Mar 1 2024') and wants datetime objects.",
        "Perfect: datetime.datetime.strptime and datetime.datetime.fromisoformat. Good: "
        "datetime.date.fromisoformat, time.strptime. Marginal: email.utils.parsedate_to_datetime (RFC "
        "2822 dates), strftime (the opposite direction). Not relevant: date arithmetic alone.",
        (HEAD, NAV),
        {
            "datetime.datetime.strptime": 3,
            "datetime.datetime.fromisoformat": 3,
            "datetime.date.fromisoformat": 2,
            "time.strptime": 2,
            "email.utils.parsedate_to_datetime": 1,
            "datetime.datetime": 1,
        },
    ),
    Topic(
        "py26",
        "what does the with statement do",
        "The user meets `with open(...) as f:` and wants to know what the statement guarantees and how to "
        "write an object that works with it.",
        "Perfect: the language reference on the with statement and on context managers (__enter__, "
        "__exit__). Good: contextlib.contextmanager, contextlib.ExitStack, the contextlib module. "
        "Marginal: try/finally, which with replaces. Not relevant: API functions that merely return "
        "context managers.",
        (TAIL, INFO),
        {
            "topic:with": 3,
            "topic:context-managers": 3,
            "contextlib.contextmanager": 2,
            "contextlib": 2,
            "contextlib.ExitStack": 1,
            "topic:try": 1,
        },
    ),
    Topic(
        "py27",
        "difference between is and == in python",
        "The user wants to know when `a is b` and `a == b` differ and which one to use.",
        "Perfect: the language reference on comparisons (identity versus value comparison). Good: the "
        "reference on objects, values and types (identity), customization (__eq__). Marginal: "
        "operator.is_/operator.eq, builtins.id. Not relevant: assignment or other operators.",
        (HEAD, INFO),
        {
            "topic:comparisons": 3,
            "topic:objects": 2,
            "topic:customization": 2,
            "operator.is_": 1,
            "operator.eq": 1,
            "builtins.id": 1,
        },
    ),
    Topic(
        "py28",
        "default argument values mutable list pitfall",
        "The user's function with `def f(x=[])` keeps state between calls and wants to understand why.",
        "Perfect: the language reference on function definitions, which explains that defaults are "
        "evaluated once. Good: the reference on calls and on the execution model. Marginal: "
        "functools.partial as an alternative. Not relevant: list methods.",
        (TAIL, INFO),
        {"topic:function": 3, "topic:calls": 2, "topic:execmodel": 1, "functools.partial": 1},
    ),
)


def select_topics(*, quick: bool = False) -> list[Topic]:
    """:data:`TOPICS`, or its first :data:`QUICK_TOPICS` for ``--quick``."""
    return list(TOPICS[:QUICK_TOPICS] if quick else TOPICS)


# --- rankers -----------------------------------------------------------------------------------------------

#: Shared tokenisation: lowercased words of two or more word characters, English stop words removed.
#: ``json.loads`` gives ``json`` and ``loads``.
_TOKENS: dict[str, Any] = {"lowercase": True, "stop_words": "english", "token_pattern": r"(?u)\b\w\w+\b"}

BM25_K1 = 1.2
BM25_B = 0.75
LSA_COMPONENTS = 150
LSA_SEED = 20240301


def score_tfidf(docs: Sequence[str], queries: Sequence[str]) -> np.ndarray:
    """Cosine similarity of TF-IDF vectors: ``TfidfVectorizer(sublinear_tf=True)`` (tf = 1 + ln tf, smooth
    idf = ln((1+N)/(1+df)) + 1, rows L2-normalised), score = q·d. Shape (queries, docs)."""
    vectorizer = TfidfVectorizer(sublinear_tf=True, **_TOKENS)
    d = vectorizer.fit_transform(docs)
    q = vectorizer.transform(queries)
    return np.asarray((q @ d.T).toarray(), dtype=np.float64)


def score_bm25(
    docs: Sequence[str], queries: Sequence[str], *, k1: float = BM25_K1, b: float = BM25_B
) -> np.ndarray:
    """Okapi BM25 over ``CountVectorizer`` counts. Shape (queries, docs).

    score(q, d) = Σ_t qtf(t) · idf(t) · tf(t,d)·(k1+1) / (tf(t,d) + k1·(1 − b + b·|d|/avgdl)), where the
    sum runs over the query's distinct terms, qtf(t) is the term's count in the query, |d| is the
    document's token count after analysis (stop words removed), avgdl its mean over the collection, and
    idf(t) = ln(1 + (N − df + 0.5) / (df + 0.5)) (Lucene's form, never negative). The document side is
    computed once on the sparse matrix's non-zeros; scoring is one sparse product.
    """
    vectorizer = CountVectorizer(**_TOKENS)
    counts = sp.csr_matrix(vectorizer.fit_transform(docs), dtype=np.float64)
    n_docs = counts.shape[0]
    lengths = np.asarray(counts.sum(axis=1)).ravel()
    avgdl = float(lengths.mean()) if n_docs else 0.0
    df = np.bincount(counts.indices, minlength=counts.shape[1])
    idf = np.log1p((n_docs - df + 0.5) / (df + 0.5))
    rows = np.repeat(np.arange(n_docs), np.diff(counts.indptr))
    tf = counts.data
    norm = k1 * (1.0 - b + b * lengths[rows] / (avgdl or 1.0))
    weights = sp.csr_matrix(
        (idf[counts.indices] * tf * (k1 + 1.0) / (tf + norm), counts.indices, counts.indptr),
        shape=counts.shape,
    )
    q = vectorizer.transform(queries).astype(np.float64)
    return np.asarray((q @ weights.T).toarray(), dtype=np.float64)


def score_lsa(
    docs: Sequence[str], queries: Sequence[str], *, components: int = LSA_COMPONENTS, seed: int = LSA_SEED
) -> np.ndarray:
    """Latent semantic analysis: TF-IDF (as :func:`score_tfidf`, terms in at least 2 documents) projected by
    ``TruncatedSVD(components, random_state=seed)``; score = cosine of the projected query and document.
    The number of components is capped below the matrix's rank bound. Shape (queries, docs)."""
    vectorizer = TfidfVectorizer(sublinear_tf=True, min_df=2, **_TOKENS)
    d = vectorizer.fit_transform(docs)
    k = max(1, min(components, d.shape[0] - 1, d.shape[1] - 1))
    svd = TruncatedSVD(n_components=k, algorithm="randomized", n_iter=7, random_state=seed)
    d_latent = normalize(svd.fit_transform(d))
    q_latent = normalize(svd.transform(vectorizer.transform(queries)))
    return np.asarray(q_latent @ d_latent.T, dtype=np.float64)


Ranker = Callable[[Sequence[str], Sequence[str]], np.ndarray]

#: name -> (scoring function, keep only positive scores). Cosine in LSA space can be ≤ 0 for any document,
#: so it keeps its top list whatever the sign; for the lexical rankers 0 means "no query term".
RANKERS: dict[str, tuple[Ranker, bool]] = {
    "tfidf": (score_tfidf, True),
    "bm25": (score_bm25, True),
    "lsa": (score_lsa, False),
}


def rank_rows(
    scores: np.ndarray, docids: Sequence[str], *, depth: int = RUN_DEPTH, positive_only: bool = True
) -> list[list[tuple[str, str]]]:
    """Per query, the top ``depth`` (docid, score text) in trec_eval's order.

    Scores are rounded to 6 decimals first and written with 6 decimals, so the order written (score
    descending, ties by docid descending in byte order) is exactly the order trec_eval rebuilds
    from the file.
    """
    descending = np.empty(len(docids), dtype=np.int64)
    descending[sorted(range(len(docids)), key=lambda i: docids[i].encode("utf-8"), reverse=True)] = np.arange(
        len(docids)
    )
    rounded = np.round(scores, 6) + 0.0  # + 0.0 turns -0.0 into 0.0
    lists = []
    for row in rounded:
        order = np.lexsort((descending, -row))
        if positive_only:
            order = order[row[order] > 0]
        lists.append([(docids[i], f"{row[i]:.6f}") for i in order[:depth]])
    return lists


# --- writing -----------------------------------------------------------------------------------------------


def _write_jsonl(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def write_run(path: Path, name: str, qids: Sequence[str], lists: Sequence[Sequence[tuple[str, str]]]) -> int:
    """Write a TREC run ``qid Q0 docid rank score name``; returns the number of lines."""
    lines = 0
    with path.open("w", encoding="utf-8") as f:
        for qid, ranked in zip(qids, lists, strict=True):
            for rank, (docid, score) in enumerate(ranked, start=1):
                f.write(f"{qid} Q0 {docid} {rank} {score} {name}\n")
                lines += 1
    return lines


def seed_qrels(topics: Sequence[Topic], docids: set[str]) -> list[tuple[str, str, int]]:
    """(qid, docid, grade) of each topic's named answers present in the collection, sorted by qid then
    docid in byte order (the order a release writes)."""
    rows = [(t.qid, docid, grade) for t in topics for docid, grade in t.answers.items() if docid in docids]
    return sorted(rows, key=lambda r: (r[0].encode("utf-8"), r[1].encode("utf-8")))


def build(outdir: Path, *, quick: bool = False, log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Write the demo data set into ``outdir`` (created if needed; files there are overwritten).

    Returns ``{"documents": Path, "topics": Path, "runs": {name: Path}, "qrels_seed": Path,
    "counts": {"documents": n, "topics": n, "runs": {name: lines}, "qrels_seed": n},
    "seconds": {step: seconds}}``. ``log`` receives one summary line per file.
    """
    say = log or (lambda _line: None)
    outdir = Path(outdir)
    (outdir / "runs").mkdir(parents=True, exist_ok=True)
    seconds: dict[str, float] = {}

    started = time.perf_counter()
    documents = collect_documents(quick=quick)
    documents_path = outdir / "documents.jsonl"
    _write_jsonl(documents_path, [d.as_json() for d in documents])
    seconds["documents"] = time.perf_counter() - started
    kinds: dict[str, int] = {}
    for d in documents:
        kinds[d.kind] = kinds.get(d.kind, 0) + 1
    summary = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
    say(f"{documents_path}: {len(documents)} documents ({summary}) in {seconds['documents']:.1f}s")

    started = time.perf_counter()
    topics = select_topics(quick=quick)
    topics_path = outdir / "topics.jsonl"
    _write_jsonl(topics_path, [t.as_json() for t in topics])
    seconds["topics"] = time.perf_counter() - started
    say(f"{topics_path}: {len(topics)} topics")

    docids = [d.docid for d in documents]
    texts = [f"{d.title}\n{d.text}" for d in documents]
    queries = [t.query for t in topics]
    qids = [t.qid for t in topics]
    run_paths: dict[str, Path] = {}
    run_lines: dict[str, int] = {}
    for name, (ranker, positive_only) in RANKERS.items():
        started = time.perf_counter()
        lists = rank_rows(ranker(texts, queries), docids, positive_only=positive_only)
        path = outdir / "runs" / f"{name}.txt"
        run_lines[name] = write_run(path, name, qids, lists)
        run_paths[name] = path
        seconds[f"runs/{name}"] = time.perf_counter() - started
        say(f"{path}: {run_lines[name]} lines, {len(qids)} topics in {seconds[f'runs/{name}']:.1f}s")

    started = time.perf_counter()
    qrels = seed_qrels(topics, set(docids))
    qrels_path = outdir / "qrels_seed.txt"
    with qrels_path.open("w", encoding="utf-8") as f:
        for qid, docid, grade in qrels:
            f.write(f"{qid} 0 {docid} {grade}\n")
    seconds["qrels_seed"] = time.perf_counter() - started
    judged_topics = len({qid for qid, _, _ in qrels})
    say(f"{qrels_path}: {len(qrels)} labels over {judged_topics} topics")

    return {
        "documents": documents_path,
        "topics": topics_path,
        "runs": run_paths,
        "qrels_seed": qrels_path,
        "counts": {
            "documents": len(documents),
            "topics": len(topics),
            "runs": run_lines,
            "qrels_seed": len(qrels),
        },
        "seconds": seconds,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("outdir", type=Path, help="directory to write into (created if needed)")
    parser.add_argument(
        "--quick", action="store_true", help=f"small version: {QUICK_DOCS} documents, {QUICK_TOPICS} topics"
    )
    parser.add_argument("--extract", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.extract:
        _extract_child(args.outdir, args.quick)
    started = time.perf_counter()
    build(args.outdir, quick=args.quick, log=print)
    print(f"done in {time.perf_counter() - started:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
