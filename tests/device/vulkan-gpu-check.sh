#!/usr/bin/env bash
# The Vulkan checks for a machine with a real GPU, in one run of under 8
# minutes: every op against the CPU, the model gates, and decode tokens/s
# against the GPU's memory-bandwidth roofline.
#
#   tests/device/vulkan-gpu-check.sh [BUILD_DIR] [BANDWIDTH_GBS]
#
# Needs a build of this tree with the Vulkan module (BUILD_DIR, default
# build/: examples/setup.sh makes it where Debian packages can be had), the
# Vulkan loader (libvulkan.so.1) and the GPU's Vulkan driver on the machine,
# and the default model in the model cache (tests/run.sh fetches it) for the
# SmolLM2 gate and the speed line. BANDWIDTH_GBS: the GPU's memory bandwidth
# in GB/s for the roofline; without it the script asks nvidia-smi (bus width
# x memory clock x 2) and otherwise prints no roofline.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
bandwidth=${2:-}
unset VK_DRIVER_FILES VK_ICD_FILENAMES   # every driver, not lavapipe alone
status=0
step() { echo; echo "== $*"; }

step "devices"
"$build/examples/cli/vt-generate" --list-devices || exit 1
# The first Vulkan device that is hardware (type gpu or igpu, not lavapipe's "other").
dev=$("$build/examples/cli/vt-generate" --list-devices | awk '$2 == "vulkan" && ($3 == "gpu" || $3 == "igpu") { print $1; exit }')
if [ -z "$dev" ]; then
    echo "no hardware Vulkan device: nothing to check"
    exit 1
fi
echo "checking $dev"

step "every op on $dev against the CPU"
VT_TEST_DEVICE=$dev timeout 240 "$build/tests/unit/test-vulkan-ops" || status=1

step "tiny architecture gates on $dev (transformers' logits, greedy 32, the engine's batching)"
for arch in llama mistral qwen2 qwen3 gemma3 phi3; do
    VT_SOURCE_ROOT=$root VT_TINY_MODEL=$arch VT_TINY_SOURCE=gguf VT_TEST_DEVICE=$dev timeout 60 \
        "$build/tests/models/test-model-tiny" >/tmp/vt-gpu-tiny-$arch.log 2>&1 &&
        echo "ok   $arch" || { echo "FAIL $arch (/tmp/vt-gpu-tiny-$arch.log)"; status=1; }
done

model=$("$root/.venv/bin/python" "$root/examples/models/vt_models.py" path smollm2 --no-fetch 2>/dev/null ||
        ls "${VT_MODEL_DIR:-$HOME/.cache/vt/models}"/*SmolLM2*Q4_1*.gguf 2>/dev/null | head -1)
if [ -n "$model" ] && [ -f "$model" ]; then
    step "SmolLM2 against llama.cpp's goldens on $dev"
    VT_SOURCE_ROOT=$root VT_GOLDEN=smollm2-q4_1 VT_TEST_MODEL_DIR=$(dirname "$model") VT_TEST_MODEL=$model \
        VT_TEST_DEVICE=$dev timeout 180 "$build/tests/models/test-model-llama-goldens" || status=1

    step "decode on $dev: SmolLM2 Q4_1, pp512 and tg128"
    out=$("$build/examples/bench/vt-bench" -m "$model" --device "$dev" -p 512 -n 128 -r 3 --json) || status=1
    echo "$out"
    if [ -z "$bandwidth" ] && command -v nvidia-smi >/dev/null; then
        # GB/s = bus width (bits) / 8 x memory clock (MHz) x 2 (double data rate) / 1000
        bandwidth=$(nvidia-smi --query-gpu=memory.bus_width,clocks.max.memory --format=csv,noheader,nounits |
                    head -1 | awk -F', ' '{ printf "%.0f", $1 / 8 * $2 * 2 / 1000 }')
    fi
    if [ -n "$bandwidth" ]; then
        bytes=$(stat -c %s "$model")   # decode reads every weight once per token (tied embedding included)
        echo "$out" | python3 -c "
import json, sys
r = json.load(sys.stdin); bw = float('$bandwidth') * 1e9; b = int('$bytes')
roof = bw / b
print(f'tg {r[\"tg_tps\"]:.1f} tokens/s = {100 * r[\"tg_tps\"] / roof:.1f}% of the roofline {roof:.0f} tokens/s '
      f'({bw / 1e9:.0f} GB/s / {b / 2**20:.1f} MiB per token)')"
    fi
else
    echo "no SmolLM2 in the model cache: its gate and the speed line are left out"
    status=1
fi
exit $status
