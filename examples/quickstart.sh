#!/usr/bin/env bash
# The main job on a fresh machine: set up, build, fetch the default model
# (SmolLM2-135M-Instruct Q4_1) and generate a short text with it.
#   examples/quickstart.sh ["prompt"]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/examples/setup.sh"
model=$("$root/.venv/bin/python" "$root/examples/models/vt_models.py" path smollm2)
prompt=${1:-"The three primary colors are"}
exec "$root/build/examples/cli/vt-generate" -m "$model" -p "$prompt" -n 64 --temp 0
