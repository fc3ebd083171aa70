from __future__ import annotations

from pooling.formats import DOCUMENT_FORMATS
from pooling.management.commands._base import ImportCommand


class Command(ImportCommand):
    help = "Import documents into a collection (format guessed from the extension; .gz read transparently)."
    kind = "documents"
    formats = DOCUMENT_FORMATS
