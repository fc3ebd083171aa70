from __future__ import annotations

from django.apps import AppConfig


class PoolingConfig(AppConfig):
    name = "pooling"

    def ready(self) -> None:
        from pooling import lookups

        lookups.register()
