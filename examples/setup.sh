#!/usr/bin/env bash
# Installs what vt needs on a fresh Debian 12 machine and builds it into
# ./build. Idempotent: re-running only rebuilds what changed.
#   - Debian packages (compilers, meson deps, Catch2, PCRE2, utf8proc, ...)
#     when any is missing; needs root or sudo.
#   - a project venv (.venv) with meson, ninja and the test tools from PyPI.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

# The last line: the Vulkan backend module (built when they are present) and
# Mesa's lavapipe, a Vulkan device on the CPU that its tests run on.
packages=(build-essential pkg-config python3-venv catch2 libxxhash-dev libpcre2-dev
          libutf8proc-dev nlohmann-json3-dev libcli11-dev libcpp-httplib-dev
          libvulkan-dev glslc mesa-vulkan-drivers)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing Debian packages: ${missing[*]}" >&2
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

py=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv" >&2
    "$py" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check \
    "meson==1.6.1" "ninja==1.11.1.3" "pytest==8.3.4" "pybind11==3.1.0" "numpy==2.4.6"

export PATH="$root/.venv/bin:$PATH"
if [ ! -f build/build.ninja ]; then
    meson setup build --buildtype=release >/dev/null
fi
ninja -C build >&2
