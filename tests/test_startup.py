"""What a process starts with: a management command loads neither Celery nor the apps' admin modules (nor
what they bring in), and both are still there for whoever uses them.

Each probe runs in a fresh interpreter (this one has imported everything already).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Modules that the start of `import_run` used to pay for without using them: Celery (labeling/__init__),
#: and the admin modules with their imports (pool building, experiments, DRF's serializers).
NOT_NEEDED = [
    "celery",
    "kombu",
    "pooling.admin",
    "judgements.admin",
    "online.admin",
    "pooling.pool_build",
    "online.experiments",
    "rest_framework.serializers",
]


def probe(code: str) -> dict:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "labeling.settings"}
    prelude = "import json, sys\nimport django\ndjango.setup()\n"
    done = subprocess.run(
        [sys.executable, "-c", prelude + code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_command_starts_without_celery_or_the_admin_modules() -> None:
    loaded = probe(
        "from django.core.management import load_command_class\n"
        "load_command_class('pooling', 'import_run')\n"
        f"print(json.dumps([m for m in {NOT_NEEDED!r} if m in sys.modules]))\n"
    )
    assert loaded == []


def test_the_admin_registers_every_app_on_first_use() -> None:
    found = probe(
        "from django.contrib import admin\n"
        "from judgements.models import Judgement\n"
        "from online.models import ClickLog\n"
        "from pooling.models import Run\n"
        "before = 'pooling.admin' in sys.modules\n"
        "registered = [admin.site.is_registered(m) for m in (Run, Judgement, ClickLog)]\n"
        "print(json.dumps({'before': before, 'registered': registered}))\n"
    )
    assert found == {"before": False, "registered": [True, True, True]}


def test_the_admin_checks_see_every_model_admin() -> None:
    """The system checks of the admin run over the registered ModelAdmins, whichever check runs first
    (the URLconf's import registers them too, but checks run in no set order)."""
    found = probe(
        "from django.core import checks\n"
        "errors = checks.run_checks(tags=[checks.Tags.admin])\n"
        "from django.contrib import admin\n"
        "print(json.dumps({'errors': [str(e) for e in errors], 'admins': 'pooling.admin' in sys.modules,"
        " 'models': len(admin.site._registry)}))\n"
    )
    assert found["errors"] == []
    assert found["admins"] is True
    assert found["models"] > 10


def test_a_task_is_sent_through_the_project_app_without_it_imported_first() -> None:
    """labeling/__init__ no longer creates the Celery app; a task module does, so a task sent from a
    process that imported nothing else (the password reset's mail) goes through the configured app, not
    Celery's default one (which would ignore the settings' broker and eager mode)."""
    found = probe(
        "from labeling.tasks import send_email\n"
        "from django.conf import settings\n"
        "print(json.dumps({'main': send_email.app.main,"
        " 'eager': send_email.app.conf.task_always_eager == settings.CELERY_TASK_ALWAYS_EAGER,"
        " 'broker': send_email.app.conf.broker_url == settings.CELERY_BROKER_URL}))\n"
    )
    assert found == {"main": "labeling", "eager": True, "broker": True}


#: Libraries that take most of a second each to import and that only some requests use: a chart
#: (matplotlib), a statistical test or interval (scipy.stats), a classifier (scikit-learn, pandas).
HEAVY = ["scipy.stats", "sklearn", "matplotlib", "pandas"]


def test_the_urlconf_and_the_checks_load_no_heavy_library() -> None:
    """Every command that runs the system checks loads the URLconf, and with it every page and API
    module; they import the heavy libraries where they use them, so a command starts in about half the
    time (`benchmarks/command_startup.py`)."""
    loaded = probe(
        "from django.core import checks\n"
        "from django.urls import get_resolver\n"
        "get_resolver().url_patterns\n"
        "errors = checks.run_checks()\n"
        f"print(json.dumps({{'errors': [str(e) for e in errors],"
        f" 'heavy': [m for m in {HEAVY!r} if m in sys.modules]}}))\n"
    )
    assert loaded == {"errors": [], "heavy": []}


def test_a_chart_loads_matplotlib_on_first_use_and_draws() -> None:
    found = probe(
        "from pooling import charts\n"
        "before = 'matplotlib' in sys.modules\n"
        "svg = charts.hbar_chart(['a', 'b'], [0.5, None], title='t')\n"
        "import matplotlib\n"
        "try:\n"
        "    charts.no_such_chart\n"
        "    missing = None\n"
        "except AttributeError as exc:\n"
        "    missing = str(exc)\n"
        "print(json.dumps({'before': before, 'after': 'matplotlib' in sys.modules,"
        " 'backend': matplotlib.get_backend().lower(), 'svg': str(svg).lstrip().startswith('<svg'),"
        " 'missing': missing}))\n"
    )
    assert found == {
        "before": False,
        "after": True,
        "backend": "agg",
        "svg": True,
        "missing": "module 'pooling.charts' has no attribute 'no_such_chart'",
    }
