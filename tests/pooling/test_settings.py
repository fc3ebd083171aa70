"""Settings from the environment: the embedded defaults, and a clean `check --deploy` in production.

Each test runs Python in a subprocess with an environment built from scratch: the variables documented in
.env.example are removed (or set), so what the developer's shell exports does not leak in.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import string
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent

PROBE = """
import json
import django
django.setup()
from django.conf import settings
from labeling.celery import app
db = settings.DATABASES["default"]
print(json.dumps({
    "engine": db["ENGINE"],
    "name": str(db["NAME"]),
    "eager": settings.CELERY_TASK_ALWAYS_EAGER,
    "app_eager": app.conf.task_always_eager,
    "broker": settings.CELERY_BROKER_URL,
    "debug": settings.DEBUG,
    "cache": settings.CACHES["default"]["BACKEND"],
    "ssl_redirect": settings.SECURE_SSL_REDIRECT,
    "hsts": settings.SECURE_HSTS_SECONDS,
}))
"""


def documented_variables() -> set[str]:
    """Every variable .env.example documents (the settings read nothing else)."""
    text = (ROOT / ".env.example").read_text(encoding="utf-8")
    return set(re.findall(r"^([A-Z][A-Z0-9_]*)=", text, flags=re.MULTILINE))


def clean_env(tmp_path: Path, **values: str) -> dict[str, str]:
    """The current environment without any setting, with DATA_DIR in tmp_path and `values` on top."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in documented_variables() and key != "DJANGO_SETTINGS_MODULE"
    }
    env["DJANGO_SETTINGS_MODULE"] = "labeling.settings"
    env["DATA_DIR"] = str(tmp_path)
    env.update(values)
    return env


def probe(env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def production(tmp_path: Path) -> dict[str, str]:
    alphabet = string.ascii_letters + string.digits + "!@#%^&*(-_=+)"
    return clean_env(
        tmp_path,
        DEBUG="false",
        SECRET_KEY="".join(secrets.choice(alphabet) for _ in range(60)),
        ALLOWED_HOSTS="x",
        SECURE_SSL_REDIRECT="true",
        SESSION_COOKIE_SECURE="true",
        CSRF_COOKIE_SECURE="true",
        SECURE_HSTS_SECONDS="31536000",
    )


def test_it_documents_the_variables_the_settings_read() -> None:
    settings_source = (ROOT / "labeling" / "settings.py").read_text(encoding="utf-8")
    read = set(
        re.findall(r"""(?:os\.environ\.get|env_bool|env_list)\(\s*["']([A-Z0-9_]+)["']""", settings_source)
    )

    assert read, "found no environment variable in labeling/settings.py"
    assert sorted(read - documented_variables()) == []


def test_it_defaults_to_sqlite_and_eager_tasks(tmp_path: Path) -> None:
    values = probe(clean_env(tmp_path))

    assert values["engine"] == "django.db.backends.sqlite3"
    assert values["name"] == str(tmp_path / "db.sqlite3")
    assert values["broker"] == ""
    assert values["eager"] is True
    assert values["app_eager"] is True
    assert values["cache"] == "django.core.cache.backends.locmem.LocMemCache"


def test_it_turns_debug_off_by_default(tmp_path: Path) -> None:
    assert probe(clean_env(tmp_path))["debug"] is False
    assert probe(clean_env(tmp_path, DEBUG="true"))["debug"] is True
    assert probe(clean_env(tmp_path, DEBUG="nonsense"))["debug"] is False


def test_it_switches_to_postgresql_redis_and_a_worker_by_environment(tmp_path: Path) -> None:
    values = probe(
        clean_env(
            tmp_path,
            DATABASE_URL="postgres://postgres@127.0.0.1:5432/labeling",
            CELERY_BROKER_URL="redis://127.0.0.1:6379/0",
        )
    )

    assert values["engine"] == "django.db.backends.postgresql"
    assert values["name"] == "labeling"
    assert values["eager"] is False
    assert values["app_eager"] is False
    assert values["cache"] == "labeling.cache.RedisCache"  # the broker's Redis (Django's, degrading)


def test_it_passes_check_deploy_with_production_values(tmp_path: Path) -> None:
    env = production(tmp_path)
    values = probe(env)
    assert (values["debug"], values["ssl_redirect"], values["hsts"]) == (False, True, 31536000)

    done = manage(env, "check", "--deploy", "--fail-level", "WARNING")

    assert done.returncode == 0, done.stderr
    assert "System check identified no issues" in done.stdout
    assert "Traceback" not in done.stderr


def test_it_fails_check_deploy_without_the_https_switches(tmp_path: Path) -> None:
    env = production(tmp_path)
    for key in ("SECURE_SSL_REDIRECT", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SECURE_HSTS_SECONDS"):
        del env[key]

    done = manage(env, "check", "--deploy", "--fail-level", "WARNING")

    assert done.returncode != 0
    for code in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert code in done.stderr


def test_it_fails_check_deploy_with_debug_on(tmp_path: Path) -> None:
    done = manage({**production(tmp_path), "DEBUG": "true"}, "check", "--deploy", "--fail-level", "WARNING")

    assert done.returncode != 0
    assert "security.W018" in done.stderr


def example_value(name: str) -> str:
    text = (ROOT / ".env.example").read_text(encoding="utf-8")
    match = re.search(rf"^{name}=(.*)$", text, flags=re.MULTILINE)
    assert match is not None, name
    return match.group(1).strip()


def test_it_fails_check_deploy_on_the_example_secret_key(tmp_path: Path) -> None:
    done = manage({**production(tmp_path), "SECRET_KEY": example_value("SECRET_KEY")}, "check", "--deploy")

    assert done.returncode != 0  # an error, not a warning: it fails without --fail-level
    assert "labeling.E001" in done.stderr and "SECRET_KEY" in done.stderr and "pseudonyms" in done.stderr


def test_it_fails_check_deploy_on_the_insecure_default_key(tmp_path: Path) -> None:
    env = production(tmp_path)
    del env["SECRET_KEY"]

    done = manage(env, "check", "--deploy")

    assert done.returncode != 0 and "labeling.E001" in done.stderr


def test_it_leaves_plain_check_alone_with_the_example_key(tmp_path: Path) -> None:
    """The demo and the tests run with the embedded key: only the deploy check refuses it."""
    done = manage(clean_env(tmp_path, SECRET_KEY=example_value("SECRET_KEY")), "check")

    assert done.returncode == 0, done.stderr
