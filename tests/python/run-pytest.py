#!/usr/bin/env python3
"""Runs the vt Python test suite (meson test suite 'python').

usage: run-pytest.py TESTS_DIR [pytest args...]

Exits 77 (meson's skip) when pytest, numpy or the vt package cannot be
imported, so that a build without the Python extension skips cleanly.
"""
import sys

try:
    import numpy  # noqa: F401
    import pytest
except ImportError as e:
    print(f"SKIP: {e} (install pytest and numpy into the build's Python)")
    sys.exit(77)
try:
    import vt  # noqa: F401
except ImportError as e:
    print(f"SKIP: cannot import vt from PYTHONPATH: {e}")
    sys.exit(77)

sys.exit(pytest.main(["-q", "-rs", "-p", "no:cacheprovider", sys.argv[1]] + sys.argv[2:]))
