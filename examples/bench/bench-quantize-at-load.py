#!/usr/bin/env python3
"""Decode speed of a bf16 Hugging Face folder quantized at load vs llama.cpp's GGUF of that type.

The gate (issue 17): a bf16 folder loaded with --quantize Q4_K decodes within
5% of the same weights quantized by llama.cpp into a pure Q4_K GGUF. This
script builds both from one random-weight BF16 GGUF in a real shape and runs
vt-bench on them in alternation, in one run:

  1. make-random-gguf.py --shape SHAPE --type BF16     (the weights)
  2. gguf-to-hf-folder.py BF16.gguf FOLDER             (the same bytes as a folder)
  3. llama-quantize --pure BF16.gguf Q.gguf TYPE       (llama.cpp's quantizer)
  4. vt-bench -m FOLDER --quantize TYPE  vs  vt-bench -m Q.gguf, -p 0 -n N -t T,
     ROUNDS times each, alternating; medians and their ratio.

    .venv/bin/python examples/bench/bench-quantize-at-load.py \\
        --llama-quantize PATH/llama-quantize --python-gguf PYTHON_WITH_gguf \\
        [--shape qwen3-0.6b] [--type Q4_K] [-n 128] [-t 2] [--rounds 3] [--work DIR]

Files go to --work (default ~/.cache/vt/quantize-bench) and are kept.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run(cmd, **kw):
    print("$ " + " ".join(str(c) for c in cmd), file=sys.stderr, flush=True)
    return subprocess.run([str(c) for c in cmd], check=True, **kw)


def bench(vt_bench: Path, model: Path, extra: list, n: int, t: int) -> dict:
    r = run([vt_bench, "-m", model, *extra, "-p", 0, "-n", n, "-t", t, "-r", 3, "--json"],
            stdout=subprocess.PIPE, text=True)
    return json.loads(r.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llama-quantize", required=True, type=Path)
    ap.add_argument("--python-gguf", default=sys.executable, help="a Python that has the gguf package")
    ap.add_argument("--vt-bench", type=Path, default=REPO / "build" / "examples" / "bench" / "vt-bench")
    ap.add_argument("--shape", default="qwen3-0.6b")
    ap.add_argument("--type", default="Q4_K")
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("-t", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", type=Path, default=Path.home() / ".cache" / "vt" / "quantize-bench")
    a = ap.parse_args()
    a.work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, VT_MODEL_DIR=str(a.work))
    bf16 = a.work / "random" / f"{a.shape}-BF16.gguf"
    if not bf16.exists():
        run([a.python_gguf, REPO / "examples" / "bench" / "make-random-gguf.py", "--shape", a.shape, "--type", "BF16"],
            env=env)
    folder = a.work / f"{a.shape}-bf16-hf"
    if not (folder / "model.safetensors").exists():
        run([a.python_gguf, REPO / "examples" / "bench" / "gguf-to-hf-folder.py", bf16, folder])
    qgguf = a.work / f"{a.shape}-{a.type}-pure.gguf"
    if not qgguf.exists():
        lib = str(a.llama_quantize.resolve().parent)
        run([a.llama_quantize, "--pure", bf16, qgguf, a.type, a.t],
            env=dict(os.environ, LD_LIBRARY_PATH=lib + ":" + os.environ.get("LD_LIBRARY_PATH", "")),
            stdout=subprocess.DEVNULL)
    at_load, by_llama, load_s = [], [], []
    for i in range(a.rounds):
        r = bench(a.vt_bench, folder, ["--quantize", a.type], a.n, a.t)
        at_load += r["tg_samples"]
        load_s.append(r["quantize_seconds"])
        by_llama += bench(a.vt_bench, qgguf, [], a.n, a.t)["tg_samples"]
        print(f"round {i + 1}: at load {r['tg_tps']:.2f} tok/s, llama.cpp GGUF {by_llama[-1]:.2f}", file=sys.stderr)
    m_load, m_llama = statistics.median(at_load), statistics.median(by_llama)
    print(json.dumps({"shape": a.shape, "type": a.type, "n_gen": a.n, "threads": a.t, "rounds": a.rounds,
                      "tg_at_load_median": round(m_load, 3), "tg_gguf_median": round(m_llama, 3),
                      "ratio": round(m_load / m_llama, 4), "quantize_seconds": load_s,
                      "tg_at_load_samples": at_load, "tg_gguf_samples": by_llama}, indent=1))


if __name__ == "__main__":
    main()
