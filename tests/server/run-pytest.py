#!/usr/bin/env python3
"""Runs the vt-server end-to-end tests (meson test suite 'server').

usage: run-pytest.py TESTS_DIR [pytest args...]

Exits 77 (meson's skip) when pytest or openai cannot be imported, or when
VT_TEST_MODEL (the default model, set by tests/run.sh) is unset, so that a
machine without them skips with the reason instead of failing.
"""
import os
import sys

try:
    import pytest
except ImportError as e:
    print(f"SKIP: {e} (install pytest into the build's Python)")
    sys.exit(77)
try:
    import openai  # noqa: F401
except ImportError as e:
    print(f"SKIP: {e} (tests/run.sh installs the pinned openai client into .venv)")
    sys.exit(77)
model = os.environ.get("VT_TEST_MODEL", "")
if not model or not os.path.exists(model):
    print("SKIP: VT_TEST_MODEL is unset or missing; run tests/run.sh, which fetches the model "
          "with examples/models/vt_models.py")
    sys.exit(77)

sys.exit(pytest.main(["-q", "-rs", "-p", "no:cacheprovider", sys.argv[1]] + sys.argv[2:]))
