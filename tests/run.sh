#!/usr/bin/env bash
# Runs every test: sets up and builds (examples/setup.sh), fetches the default
# model so that the model tests run, then the whole meson test suite.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/examples/setup.sh"
if model=$("$root/.venv/bin/python" "$root/examples/models/vt_models.py" path smollm2); then
    export VT_TEST_MODEL="$model"
else
    echo "tests: could not fetch the default model; model tests will be skipped" >&2
fi
exec "$root/.venv/bin/meson" test -C "$root/build" --print-errorlogs "$@"
