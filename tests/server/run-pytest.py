#!/usr/bin/env python3
"""Runs the vt-server end-to-end tests (meson test suites 'server').

usage: run-pytest.py [--without-default-model] TESTS [pytest args...]

Exits 77 (meson's skip) when pytest or openai cannot be imported, when
VT_TEST_MODEL (the default model, set by tests/run.sh) is unset or missing
(unless --without-default-model: the tests bring their own models), or when
every test that ran was skipped (their fixtures are absent), so that a
machine without them skips with the reason instead of passing or failing.
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
args = sys.argv[1:]
needs_model = True
if args and args[0] == "--without-default-model":
    needs_model = False
    args = args[1:]
model = os.environ.get("VT_TEST_MODEL", "")
if needs_model and (not model or not os.path.exists(model)):
    print("SKIP: VT_TEST_MODEL is unset or missing; run tests/run.sh, which fetches the model "
          "with examples/models/vt_models.py")
    sys.exit(77)


class Outcomes:
    """Counts the tests that passed, failed and were skipped."""

    def __init__(self):
        self.ran = self.skipped = 0

    def pytest_runtest_logreport(self, report):
        if report.skipped:
            self.skipped += 1
        elif report.when == "call" or report.failed:
            self.ran += 1


outcomes = Outcomes()
rc = pytest.main(["-q", "-rs", "-p", "no:cacheprovider", *args], plugins=[outcomes])
if rc == 0 and outcomes.ran == 0 and outcomes.skipped > 0:
    print("SKIP: every test was skipped (see the reasons above)")
    sys.exit(77)
sys.exit(rc)
