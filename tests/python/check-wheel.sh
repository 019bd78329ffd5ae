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
"$work/venv/bin/python" - "$work/tiny.gguf" <<'PY'
import sys
import vt
path = sys.argv[1]
assert vt.__file__.startswith(sys.prefix), f"vt imported from {vt.__file__}, not the venv"
tok = vt.Tokenizer.from_file(path)
ids = tok.encode("the thing")
assert tok.decode(ids) == "the thing", tok.decode(ids)
out = vt.LLM(model=path).generate(["the"], vt.SamplingParams(temperature=0, max_tokens=8))[0]
assert len(out.token_ids) == 8 and out.finish_reason in ("length", "stop"), out
print("wheel ok:", vt.version(), repr(out.text))
PY
