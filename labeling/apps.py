"""The project package as an app: its system checks (`labeling.checks`) and tasks (`labeling.tasks`); and
the admin's app config, whose site registers the apps' admin modules when first used (`AdminSite`)."""

from __future__ import annotations

import threading
from typing import Any

from django.apps import AppConfig
from django.contrib.admin import sites as admin_sites
from django.contrib.admin.apps import SimpleAdminConfig
from django.utils.module_loading import autodiscover_modules


class LabelingConfig(AppConfig):
    name = "labeling"
    verbose_name = "Labeling platform"

    def ready(self) -> None:
        from labeling import checks  # noqa: F401  (registers the checks)


class AdminConfig(SimpleAdminConfig):
    """django.contrib.admin with the site below in place of autodiscovery in `ready()`."""

    default_site = "labeling.apps.AdminSite"

    def ready(self) -> None:
        super().ready()
        admin_sites.site.name  # noqa: B018  (creates the site, so that the admin's checks find it)


class AdminSite(admin_sites.AdminSite):
    """The admin site, whose apps' admin modules are imported (their ModelAdmins registered) the first
    time its registry is read: by its URLs (the URLconf's import, in a web process or the system checks),
    its pages, its checks or `is_registered`. Django's AdminConfig imports them in `ready()`, for every
    process: they bring in most of the project (pool building, experiments, DRF), which a management
    command or a worker that never touches the admin paid for at each start."""

    def __init__(self, name: str = "admin") -> None:
        self._discovered = self._discovering = False
        self._lock = threading.RLock()  # re-entered: the admin modules' register() reads the registry
        super().__init__(name)

    @property
    def _registry(self) -> dict[Any, Any]:
        if not self._discovered:
            self._discover()
        return self._models

    @_registry.setter
    def _registry(self, value: dict[Any, Any]) -> None:
        self._models = value

    def _discover(self) -> None:
        """Import every app's admin module, once (another thread waits for the whole registry)."""
        with self._lock:
            if self._discovered or self._discovering:
                return
            self._discovering = True
            try:
                autodiscover_modules("admin", register_to=self)
            finally:
                self._discovering = False
            self._discovered = True
