"""The impression archive of a click log: every page, in numpy chunks on disk under
MEDIA_ROOT/<ClickLog.archive_dir>/, for what needs whole sessions (the session bootstrap of the click
labels, interleaving credit). Written once by the importer, never changed.

Each chunk `chunk-NNNNN.npz` holds, per page: `topic` (index into meta `topic_pks`), `logger` (index into
meta `loggers`), `session` and `user` (CRC-32 of the logged ids: sessions that collide are resampled
together, harmless for the bootstrap), `length` (results shown); and per shown position, in page order:
`doc` (index into meta `doc_pks`, -1 for an object that is no document of the collection), `click`
(bool) and `team` (0 for none, else 1 + index into meta `teams`). `meta.npz` holds the index maps.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
from django.conf import settings


class Writer:
    """Appends chunks to a new archive directory (which the importer removes if the import fails)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.count = 0

    def __enter__(self) -> Writer:
        self.root.mkdir(parents=True, exist_ok=False)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None

    def append(self, **arrays: np.ndarray) -> None:
        np.savez(self.root / f"chunk-{self.count:05d}.npz", **arrays)  # type: ignore[arg-type]  # numpy stubs: savez(**kwds)
        self.count += 1

    def finish(
        self, *, topic_pks: np.ndarray, doc_pks: np.ndarray, loggers: list[str], teams: list[str]
    ) -> None:
        np.savez(self.root / "meta.npz", topic_pks=topic_pks, doc_pks=doc_pks)
        (self.root / "meta.json").write_text(
            json.dumps({"loggers": loggers, "teams": teams, "chunks": self.count})
        )


def root_of(archive_dir: str) -> Path:
    return Path(settings.MEDIA_ROOT) / archive_dir


def meta(archive_dir: str) -> dict[str, Any]:
    """The index maps of an archive: topic_pks, doc_pks (arrays), loggers, teams (names), chunks."""
    root = root_of(archive_dir)
    info: dict[str, Any] = json.loads((root / "meta.json").read_text())
    with np.load(root / "meta.npz") as arrays:
        info["topic_pks"] = arrays["topic_pks"]
        info["doc_pks"] = arrays["doc_pks"]
    return info


def chunks(archive_dir: str) -> Iterator[dict[str, np.ndarray]]:
    """The chunks of an archive in order, each as a dict of arrays (see the module docstring)."""
    root = root_of(archive_dir)
    for i in range(int(json.loads((root / "meta.json").read_text())["chunks"])):
        with np.load(root / f"chunk-{i:05d}.npz") as data:
            yield {key: data[key] for key in data.files}
