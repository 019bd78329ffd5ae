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
     ROUNDS times each, alternating; medians, maxima and their ratios.

    .venv/bin/python examples/bench/bench-quantize-at-load.py \\
        --llama-quantize PATH/llama-quantize --python-gguf PYTHON_WITH_gguf \\
        [--shape qwen3-0.6b] [--type Q4_K] [-n 128] [-t 2] [--rounds 3] [--work DIR]

With --interleaved (needs the Python package: PYTHONPATH=build/bindings/python)
step 4 is instead one process holding both models, timing -n decode steps of
each in turn, --rounds times: on a shared machine each pair sees the same
background load, and the median of the pair ratios is reported.

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


def bench(vt_bench: Path, model: Path, extra: list, n: int, t: int, reps: int) -> dict:
    r = run([vt_bench, "-m", model, *extra, "-p", 0, "-n", n, "-t", t, "-r", reps, "--json"],
            stdout=subprocess.PIPE, text=True)
    return json.loads(r.stdout)


def interleaved(folder: Path, qgguf: Path, a) -> None:
    import time
    import vt
    t0 = time.perf_counter()
    models = {"at_load": vt.Model(folder, quantize=a.type), "gguf": vt.Model(qgguf)}
    print(f"loaded both in {time.perf_counter() - t0:.1f} s; quantization: {models['at_load'].quantization}",
          file=sys.stderr)
    seqs = {k: vt.Context(m, n_threads=a.t).sequence(n_ctx=a.n + 16) for k, m in models.items()}
    ids = [(17 * i + 3) % models["gguf"].n_vocab for i in range(a.n + 1)]

    def decode(seq) -> float:  # tokens/s of a.n single-token steps after one warmup token
        seq.reset()
        seq.feed(ids[:1])
        seq.step()
        start = time.perf_counter()
        for tok in ids[1:]:
            seq.feed([tok])
            seq.step()
        return a.n / (time.perf_counter() - start)

    samples = {"at_load": [], "gguf": []}
    ratios = []
    for i in range(a.rounds):
        order = ["at_load", "gguf"] if i % 2 == 0 else ["gguf", "at_load"]
        got = {k: decode(seqs[k]) for k in order}
        for k in got:
            samples[k].append(round(got[k], 3))
        ratios.append(got["at_load"] / got["gguf"])
        print(f"pair {i + 1}: at load {got['at_load']:.2f} tok/s, llama.cpp GGUF {got['gguf']:.2f}", file=sys.stderr)
    print(json.dumps({"shape": a.shape, "type": a.type, "n_gen": a.n, "threads": a.t, "pairs": a.rounds,
                      "ratio_median": round(statistics.median(ratios), 4),
                      "tg_at_load_median": statistics.median(samples["at_load"]),
                      "tg_gguf_median": statistics.median(samples["gguf"]),
                      "ratio_max": round(max(samples["at_load"]) / max(samples["gguf"]), 4),
                      "samples": samples}, indent=1))


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
    ap.add_argument("-r", "--reps", type=int, default=5, help="vt-bench repetitions per load")
    ap.add_argument("--interleaved", action="store_true", help="one process, both models, paired timings")
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
    if a.interleaved:
        interleaved(folder, qgguf, a)
        return
    at_load, by_llama, load_s = [], [], []
    for i in range(a.rounds):
        r = bench(a.vt_bench, folder, ["--quantize", a.type], a.n, a.t, a.reps)
        g = bench(a.vt_bench, qgguf, [], a.n, a.t, a.reps)
        at_load += r["tg_samples"]
        by_llama += g["tg_samples"]
        load_s.append(r["quantize_seconds"])
        print(f"round {i + 1}: at load {r['tg_tps']:.2f} tok/s, llama.cpp GGUF {g['tg_tps']:.2f} "
              f"(means of {a.reps})", file=sys.stderr)
    # On a shared machine other work only ever slows a sample down: the
    # fastest samples are the least disturbed, so their ratio is reported
    # beside the medians'.
    m_load, m_llama = statistics.median(at_load), statistics.median(by_llama)
    print(json.dumps({"shape": a.shape, "type": a.type, "n_gen": a.n, "threads": a.t, "rounds": a.rounds,
                      "tg_at_load_median": round(m_load, 3), "tg_gguf_median": round(m_llama, 3),
                      "ratio_median": round(m_load / m_llama, 4),
                      "tg_at_load_max": max(at_load), "tg_gguf_max": max(by_llama),
                      "ratio_max": round(max(at_load) / max(by_llama), 4), "quantize_seconds": load_s,
                      "tg_at_load_samples": at_load, "tg_gguf_samples": by_llama}, indent=1))

if __name__ == "__main__":
    main()
