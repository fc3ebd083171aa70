#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    if _evaluate_files_only(sys.argv[1:]):
        # `evaluate` on files needs no Django: hand it to the one implementation, which starts in the time
        # numpy takes instead of Django's settings, apps and database machinery.
        _short_lived_memory()
        from evaluation.cli import main as evaluate

        sys.exit(evaluate(sys.argv[2:]))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "labeling.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


def _short_lived_memory() -> None:
    """Memory settings for a process that reads a file into arrays, scores it and exits, set before numpy
    is imported: freed arrays stay with the process for the next ones (glibc otherwise gives every array
    over 32 MB back to the system and faults its pages in again, zeroed, for the next), and no transparent
    huge pages (whose allocation can compact memory first: up to half a second of system time on a busy
    machine). Each is left as the environment says if set there; elsewhere than glibc nothing changes."""
    os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
    if "MALLOC_MMAP_MAX_" in os.environ or "MALLOC_TRIM_THRESHOLD_" in os.environ:
        return
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    m_trim_threshold, m_mmap_max = -1, -4  # glibc's malloc.h
    mallopt(m_mmap_max, 0)
    mallopt(m_trim_threshold, 2**31 - 1)


def _evaluate_files_only(args: list[str]) -> bool:
    """`evaluate` with no pool:NAME and none of Django's own options (those go through Django)."""
    if not args or args[0] != "evaluate":
        return False
    django_options = ("--settings", "--pythonpath", "--traceback", "--verbosity", "-v", "--no-color")
    return not any(a.startswith("pool:") or a.split("=")[0] in django_options for a in args[1:])


if __name__ == "__main__":
    main()
