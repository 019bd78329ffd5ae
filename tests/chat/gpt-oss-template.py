#!/usr/bin/env python3
"""gpt-oss-template - where gpt-oss's chat template is, without a copy in the repository.

The template is models/templates/openai-gpt-oss-120b.jinja of the llama.cpp tree
vendored in the llama-cpp-python 0.3.36 sdist (a copy of the checkpoint's Hub
template), the sdist that examples/bench/compare-llama-bench.py and
tests/models/llama-cpp-tiny-logits.py unpack under ~/.cache/vt/llama.cpp-src.

usage: gpt-oss-template.py path    prints the template's path; exit 77 when absent
       gpt-oss-template.py fetch   pip-downloads the sdist when missing and unpacks the
                                   template alone (tests/run.sh runs this)
"""
from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

VERSION = "0.3.36"
CACHE = Path.home() / ".cache" / "vt" / "llama.cpp-src"
TOP = f"llama_cpp_python-{VERSION}"
MEMBER = f"{TOP}/vendor/llama.cpp/models/templates/openai-gpt-oss-120b.jinja"
PATH = CACHE / MEMBER


def fetch() -> Path:
    if PATH.is_file():
        return PATH
    CACHE.mkdir(parents=True, exist_ok=True)
    sdist = CACHE / f"{TOP}.tar.gz"
    if not sdist.is_file():
        r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                            "--disable-pip-version-check", "-q", f"llama-cpp-python=={VERSION}", "-d", str(CACHE)])
        if r.returncode != 0 or not sdist.is_file():
            sys.exit(f"pip download of the llama-cpp-python {VERSION} sdist failed")
    with tarfile.open(sdist) as tf:
        member = tf.getmember(MEMBER)
        if hasattr(tarfile, "data_filter"):
            tf.extractall(CACHE, members=[member], filter="data")
        else:
            tf.extractall(CACHE, members=[member])
    return PATH


def main() -> int:
    cmd = sys.argv[1] if len(sys.argv) > 1 else "path"
    if cmd == "fetch":
        print(fetch())
        return 0
    if cmd == "path":
        if not PATH.is_file():
            print(f"no {PATH} (run: {sys.argv[0]} fetch)", file=sys.stderr)
            return 77
        print(PATH)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
