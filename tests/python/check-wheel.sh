#!/usr/bin/env bash
# `pip install .` as a user would: the repository built into a wheel in a
# brand-new venv (with pip's build isolation, so meson-python and pybind11
# come from PyPI), then `import vt` from another directory, a tokenizer round
# trip and a greedy generation on the tiny model.
#   check-wheel.sh SOURCE_ROOT WRITE_TINY_MODEL [PYTHON]
set -euo pipefail
src=$1
writer=$2
py=${3:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$py" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q --disable-pip-version-check "$src"
"$writer" "$work/tiny.gguf"
cd /
# The wheel's own configure builds the Vulkan module where libvulkan and
# glslc are present (lavapipe gives it a device here).
vulkan=none
if pkg-config --exists vulkan && command -v glslc >/dev/null; then vulkan=vulkan; fi
"$work/venv/bin/python" - "$work/tiny.gguf" "$vulkan" <<'PY'
import sys
import vt
path = sys.argv[1]
assert vt.__file__.startswith(sys.prefix), f"vt imported from {vt.__file__}, not the venv"
tok = vt.Tokenizer.from_file(path)
ids = tok.encode("the thing")
assert tok.decode(ids) == "the thing", tok.decode(ids)
out = vt.LLM(model=path).generate(["the"], vt.SamplingParams(temperature=0, max_tokens=8))[0]
assert len(out.token_ids) == 8 and out.finish_reason in ("length", "stop"), out
names = [d["name"] for d in vt.devices()]
if len(sys.argv) > 2 and sys.argv[2] == "vulkan":
    # The wheel carries the Vulkan module: a device on it, and a generation there.
    assert "vulkan0" in names, names
    out_vk = vt.LLM(model=path, device="vulkan0").generate(["the"], vt.SamplingParams(temperature=0, max_tokens=8))[0]
    assert out_vk.token_ids == out.token_ids, (out_vk.token_ids, out.token_ids)
print("wheel ok:", vt.version(), repr(out.text), names)
PY
