#!/usr/bin/env python3
"""Second oracle for the tiny hybrid fixtures (and gpt-oss): llama.cpp's float32 logits on
tests/models/tiny/<name>.gguf against the transformers goldens in <name>.json.

    python3 tests/models/llama-cpp-tiny-logits.py [--only qwen3_5_moe,...] [--llama-cpp DIR]

Builds llama.cpp's library once (cmake, CPU only, Release, under `nice`) into
~/.cache/vt/llama.cpp-build-tiny from the llama-cpp-python 0.3.36 sdist (the
source that examples/bench/compare-llama-bench.py fetches into
~/.cache/vt/llama.cpp-src), or from --llama-cpp DIR (a llama.cpp tree, e.g. the
sdist's vendor/llama.cpp), and a small C++ driver against llama.h. The driver
evaluates every golden prompt in one batch (logits of every position, K/V
cache in F32, flash attention off) and then decodes the golden's 32 greedy
tokens one at a time from the last prompt (so llama.cpp's chunked prefill and
its token-by-token recurrence are both compared). Prints, per fixture and
prompt, max |llama.cpp - transformers| over all logits, and how many greedy
argmaxes agree. Needs only the standard library and a C++ compiler + cmake.

What to expect: about 1e-5 for qwen3_5_moe and qwen3_next, 3e-6 for lfm2,
nemotron_h and nemotron_h_moe, 1e-6 for lfm2_moe, 4e-6 for falcon_h1 and 5e-6
for granitemoehybrid, 2e-6 for gpt_oss (float32 noise);
about 5e-3 for kimi_linear, all of it from one epsilon: llama.cpp's Kimi
L2-normalises q and k with rms_norm_eps (1e-5) where transformers uses 1e-6
(hybrid-numpy-reference.py with 1e-5 there matches llama.cpp to 2e-6).

llama.cpp needs the K and V head sizes of the gated delta net equal (its
loader and state assume it); the tiny qwen3_5 fixture has 16 and 24 on
purpose, so llama.cpp refuses it and the script says so.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests" / "models" / "tiny"
HYBRIDS = ["qwen3_5", "qwen3_5_moe", "qwen3_next", "kimi_linear", "lfm2", "lfm2_moe", "nemotron_h",
           "nemotron_h_moe", "granitemoehybrid", "falcon_h1", "gpt_oss"]
LLAMA_CPP_PYTHON_VERSION = "0.3.36"

DRIVER = r"""
// Reads lines "N_GEN id id id ..." on stdin; for each, a fresh context
// evaluates the ids in one batch and prints "L <pos> v..." for every position,
// then greedily decodes N_GEN tokens one at a time: "G <id> <top1 - top2>".
#include "llama.h"
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

static void row(const float *l, int n, int &best, float &margin) {
    best = 0;
    int second = -1;
    for (int i = 1; i < n; ++i)
        if (l[i] > l[best]) { second = best; best = i; }
        else if (second < 0 || l[i] > l[second]) second = i;
    margin = l[best] - l[second];
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s MODEL THREADS\n", argv[0]); return 2; }
    llama_backend_init();
    llama_model *model = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (!model) { fprintf(stderr, "load failed\n"); return 3; }
    const int nv = llama_vocab_n_tokens(llama_model_get_vocab(model));
    std::string line;
    while (std::getline(std::cin, line)) {
        std::istringstream is(line);
        int n_gen = 0;
        is >> n_gen;
        std::vector<llama_token> ids;
        for (int t; is >> t;) ids.push_back(t);
        llama_context_params cp = llama_context_default_params();
        cp.n_ctx = 512; cp.n_batch = 512; cp.n_ubatch = 512; cp.n_seq_max = 1;
        cp.n_threads = cp.n_threads_batch = atoi(argv[2]);
        cp.type_k = GGML_TYPE_F32; cp.type_v = GGML_TYPE_F32;
        cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
        cp.no_perf = true;
        llama_context *ctx = llama_init_from_model(model, cp);
        if (!ctx) { fprintf(stderr, "context failed\n"); return 4; }
        llama_batch b = llama_batch_init((int)ids.size(), 0, 1);
        for (size_t i = 0; i < ids.size(); ++i) {
            b.token[i] = ids[i]; b.pos[i] = (llama_pos)i; b.n_seq_id[i] = 1; b.seq_id[i][0] = 0; b.logits[i] = 1;
        }
        b.n_tokens = (int)ids.size();
        if (llama_decode(ctx, b) != 0) { fprintf(stderr, "decode failed\n"); return 5; }
        for (size_t i = 0; i < ids.size(); ++i) {
            const float *l = llama_get_logits_ith(ctx, (int)i);
            printf("L %zu", i);
            for (int v = 0; v < nv; ++v) printf(" %.9g", l[v]);
            printf("\n");
        }
        llama_batch_free(b);
        int best; float margin;
        row(llama_get_logits_ith(ctx, -1), nv, best, margin);
        llama_pos pos = (llama_pos)ids.size();
        for (int s = 0; s < n_gen; ++s) {
            printf("G %d %.6f\n", best, margin);
            llama_token t = best;
            llama_batch one = llama_batch_init(1, 0, 1);
            one.token[0] = t; one.pos[0] = pos++; one.n_seq_id[0] = 1; one.seq_id[0][0] = 0; one.logits[0] = 1;
            one.n_tokens = 1;
            if (llama_decode(ctx, one) != 0) { fprintf(stderr, "decode failed\n"); return 5; }
            llama_batch_free(one);
            row(llama_get_logits_ith(ctx, -1), nv, best, margin);
        }
        fflush(stdout);
        llama_free(ctx);
    }
    llama_model_free(model);
    return 0;
}
"""


def log(msg: str) -> None:
    print(f"llama-cpp-tiny-logits: {msg}", file=sys.stderr, flush=True)


def llama_source(cache: Path, given: Path | None) -> Path:
    if given is not None:
        if not (given / "CMakeLists.txt").is_file():
            sys.exit(f"{given} is not a llama.cpp tree (no CMakeLists.txt)")
        return given
    src_root = cache / "llama.cpp-src"
    llama_src = src_root / f"llama_cpp_python-{LLAMA_CPP_PYTHON_VERSION}" / "vendor" / "llama.cpp"
    if (llama_src / "CMakeLists.txt").is_file():
        return llama_src
    src_root.mkdir(parents=True, exist_ok=True)
    sdist = src_root / f"llama_cpp_python-{LLAMA_CPP_PYTHON_VERSION}.tar.gz"
    if not sdist.is_file():
        r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                            "--disable-pip-version-check", f"llama-cpp-python=={LLAMA_CPP_PYTHON_VERSION}",
                            "-d", str(src_root)])
        if r.returncode != 0 or not sdist.is_file():
            sys.exit(f"pip download of the llama-cpp-python {LLAMA_CPP_PYTHON_VERSION} sdist failed")
    log(f"extracting {sdist.name}")
    with tarfile.open(sdist) as tf:
        if hasattr(tarfile, "data_filter"):
            tf.extractall(src_root, filter="data")
        else:
            tf.extractall(src_root)
    if not (llama_src / "CMakeLists.txt").is_file():
        sys.exit(f"{llama_src} has no CMakeLists.txt")
    return llama_src


def build_driver(src: Path, build: Path, jobs: int, nice: int) -> Path:
    exe = build / "tiny-logits"
    if exe.is_file() and os.access(exe, os.X_OK):
        return exe
    for tool in ("cmake", "c++"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is not installed")
    nice_cmd = ["nice", "-n", str(nice)] if nice and shutil.which("nice") else []
    cfg = ["cmake", "-S", str(src), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=ON",
           "-DBUILD_SHARED_LIBS=ON", "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF", "-DLLAMA_BUILD_TESTS=OFF",
           "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_SERVER=OFF", "-DLLAMA_BUILD_TOOLS=OFF"]
    if subprocess.run(nice_cmd + cfg, stdout=subprocess.DEVNULL).returncode != 0:
        sys.exit("cmake configure of llama.cpp failed")
    log(f"building llama.cpp's library in {build} (minutes)")
    r = subprocess.run(nice_cmd + ["cmake", "--build", str(build), "--target", "llama", "-j", str(jobs)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"building llama.cpp failed:\n{r.stdout[-3000:]}{r.stderr[-3000:]}")
    (build / "tiny-logits.cpp").write_text(DRIVER, encoding="utf-8")
    libdir = build / "bin"
    cmd = ["c++", "-std=c++17", "-O2", str(build / "tiny-logits.cpp"), "-o", str(exe),
           "-I", str(src / "include"), "-I", str(src / "ggml" / "include"),
           "-L", str(libdir), "-lllama", "-lggml", "-lggml-base", f"-Wl,-rpath,{libdir}"]
    if subprocess.run(nice_cmd + cmd).returncode != 0:
        sys.exit("compiling the driver failed")
    return exe


def compare(exe: Path, name: str, threads: int) -> bool:
    golden = json.loads((TINY / f"{name}.json").read_text(encoding="utf-8"))
    prompts = golden["prompts"]
    n_gen = len(golden["greedy"])
    lines = [f"{n_gen if i == len(prompts) - 1 else 0} " + " ".join(map(str, p["ids"]))
             for i, p in enumerate(prompts)]
    r = subprocess.run([str(exe), str(TINY / f"{name}.gguf"), str(threads)], input="\n".join(lines) + "\n",
                       capture_output=True, text=True)
    if r.returncode != 0:
        err = [l for l in r.stderr.splitlines() if "error" in l.lower() or "failed" in l.lower()]
        print(f"{name}: llama.cpp failed (rc {r.returncode}): {' | '.join(err[-3:]) or r.stderr[-500:]}")
        return False
    rows: list[list[float]] = []
    greedy: list[int] = []
    for l in r.stdout.splitlines():
        if l.startswith("L "):
            rows.append([float(x) for x in l.split()[2:]])
        elif l.startswith("G "):
            greedy.append(int(l.split()[1]))
    at = 0
    worst = 0.0
    for p in prompts:
        n = len(p["ids"])
        d = max(abs(a - b) for got, want in zip(rows[at:at + n], p["logits"]) for a, b in zip(got, want))
        at += n
        worst = max(worst, d)
        print(f"{name}: prompt of {n} tokens: max |llama.cpp - transformers| = {d:.2e}")
    same = sum(a == b for a, b in zip(greedy, golden["greedy"]))
    first = next((i for i, (a, b) in enumerate(zip(greedy, golden["greedy"])) if a != b), None)
    print(f"{name}: greedy (llama.cpp decoding token by token) agrees at {same}/{n_gen} steps"
          + ("" if first is None else f", first difference at step {first} "
             f"(golden margin there {golden['greedy_margins'][first]:.4f})"))
    return True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="comma-separated subset of " + ",".join(HYBRIDS))
    ap.add_argument("--llama-cpp", type=Path, help="llama.cpp source tree (default: the 0.3.36 sdist's)")
    ap.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "vt")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--nice", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    names = a.only.split(",") if a.only else HYBRIDS
    cache = a.cache_dir.expanduser()
    build = cache / "llama.cpp-build-tiny"
    exe = build / "tiny-logits"
    if not (exe.is_file() and os.access(exe, os.X_OK)):
        exe = build_driver(llama_source(cache, a.llama_cpp), build, a.jobs, a.nice)
    for n in names:
        compare(exe, n, a.threads)


if __name__ == "__main__":
    main()
