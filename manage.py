#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    if _evaluate_files_only(sys.argv[1:]):
        # `evaluate` on files needs no Django: hand it to the one implementation, which starts in the time
        # numpy takes instead of Django's settings, apps and database machinery.
        from evaluation.cli import main as evaluate

        sys.exit(evaluate(sys.argv[2:]))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "labeling.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


def _evaluate_files_only(args: list[str]) -> bool:
    """`evaluate` with no pool:NAME and none of Django's own options (those go through Django)."""
    if not args or args[0] != "evaluate":
        return False
    django_options = ("--settings", "--pythonpath", "--traceback", "--verbosity", "-v", "--no-color")
    return not any(a.startswith("pool:") or a.split("=")[0] in django_options for a in args[1:])


if __name__ == "__main__":
    main()
