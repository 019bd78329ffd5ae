#!/bin/sh
# Runs the model test suite with the model located by examples/models/vt_models.py
# (fetched into ${VT_MODEL_DIR:-~/.cache/vt/models} on first use).
#   tests/models/run-model-tests.sh [BUILD_DIR] [extra meson test args...]
# Env: PYTHON (default python3), MESON (default meson, e.g. .venv/bin/meson).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
[ $# -gt 0 ] && shift
py=${PYTHON:-python3}
VT_TEST_MODEL=$("$py" "$root/examples/models/vt_models.py" path smollm2)
export VT_TEST_MODEL
echo "VT_TEST_MODEL=$VT_TEST_MODEL" >&2
exec ${MESON:-meson} test -C "$build" --suite model --print-errorlogs "$@"
