"""System checks of the deployment (`manage.py check --deploy`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.checks import Error, Tags, register

ENV_EXAMPLE = Path(__file__).resolve().parent.parent / ".env.example"


def example_secret_keys() -> set[str]:
    """The SECRET_KEY and BLIND_ORDER_KEY values written in `.env.example` (read from it, so the check
    follows the file)."""
    if not ENV_EXAMPLE.exists():
        return set()
    values = set()
    for line in ENV_EXAMPLE.read_text(encoding="utf-8").splitlines():
        name, sep, value = line.partition("=")
        if sep and name.strip() in {"SECRET_KEY", "BLIND_ORDER_KEY"} and value.strip():
            values.add(value.strip())
    return values


@register(Tags.security, deploy=True)
def check_secret_key(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    """labeling.E001: SECRET_KEY (or BLIND_ORDER_KEY) is the value of `.env.example` or an insecure
    default (`django-insecure-…`, the embedded one included). Django only warns (security.W009); here it
    is an error, because the key also keys what must stay secret after a release: the raters' pseudonyms
    in `judgements.jsonl` and the blind order of items."""
    known = example_secret_keys()
    errors = []
    for name in ("SECRET_KEY", "BLIND_ORDER_KEY"):
        value = str(getattr(settings, name, ""))
        if name == "BLIND_ORDER_KEY" and value == settings.SECRET_KEY:
            continue  # its default: reported once, as SECRET_KEY
        if value in known or value.startswith("django-insecure"):
            errors.append(
                Error(
                    f"{name} is a published value (the example in .env.example or an insecure default).",
                    hint=(
                        f"Set {name} to a long random string, e.g. from "
                        "`python -c 'import secrets; print(secrets.token_urlsafe(50))'`. It signs sessions "
                        "and keys the raters' pseudonyms in releases and the blind order of items: anyone "
                        "who knows it can recompute them."
                    ),
                    id="labeling.E001",
                )
            )
    return errors
