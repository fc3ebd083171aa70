from __future__ import annotations

from pooling.formats import TOPIC_FORMATS
from pooling.management.commands._base import ImportCommand


class Command(ImportCommand):
    help = "Import topics into a collection (format guessed from the extension; .gz read transparently)."
    kind = "topics"
    formats = TOPIC_FORMATS
