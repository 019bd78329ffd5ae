#!/usr/bin/env python3
"""Batched throughput side by side: vt-batched-bench vs llama.cpp's llama-batched-bench.

Same machine, same run, same GGUF file and thread count. For each B of --npl,
both engines compute B sequences of P prompt tokens in one context (pp:
aggregate prompt tokens/s) and then N decode steps of all B at once (tg:
aggregate generated tokens/s); see vt-batched-bench.cpp's header for how vt's
engine is timed. The engines alternate per (repetition, B): vt, llama.cpp,
vt, ..., so a change of the machine's speed during the run falls on both;
the table shows the medians of --repetitions runs and the ratios vt /
llama.cpp.

It also measures the model's single-sequence pp512 rate (vt-batched-bench,
B = 1, P = 512: one step of 512 prompt tokens), interleaved the same way, so
that decode at B can be read as a share of the prompt rate: a step of B
decodes reads the weights once, as a prompt step does, so on a perfect engine
batched decode approaches the prefill rate as B grows (less the per-token LM
head and the attention over each sequence's KV, which prefill amortizes).

llama-batched-bench runs with its defaults (-b 2048 -ub 512, flash attention
"auto", prompts not shared: -pps off) and -c B * (P + N) + 256; --llama-arg
adds flags (e.g. --llama-arg=-fa --llama-arg=off). vt runs with n_batch 512
(its default); its pp phase computes every prompt (prefix caching off), its
tg phase starts the sequences from prompts it computed just before.

Usage (from the repository root, after `meson compile -C build`):
    python3 examples/bench/compare-batched-bench.py                     # SmolLM2 Q4_1, 2 threads
    python3 examples/bench/compare-batched-bench.py -m model.gguf --npl 16,64 -r 3 --json
    python3 examples/bench/compare-batched-bench.py -m ~/.cache/vt/models/random/qwen35-2b-Q4_K.gguf --npl 1,16,64

Hybrid (Gated DeltaNet) files run as any other: llama-batched-bench gives
each of the B sequences its own recurrent state (n_seq_max = the largest B),
and vt's tg phase starts the sequences from the prefix cache's snapshots of
their states at the prompts' last full block. A decode step then reads and
writes B sequences' states (Qwen3.5-2B: 40 MB each), which batching does not
amortize as it does the weights.

llama-batched-bench is built (once) from the llama.cpp that llama-cpp-python's
sdist vendors, as compare-llama-bench.py builds llama-bench (same cache dir).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def load_compare_llama_bench():
    spec = importlib.util.spec_from_file_location("compare_llama_bench", HERE / "compare-llama-bench.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


clb = load_compare_llama_bench()


def log(msg: str) -> None:
    print(f"compare-batched-bench: {msg}", file=sys.stderr, flush=True)


class BenchError(RuntimeError):
    pass


def run_tool(name: str, cmd: list[str], timeout: float) -> str:
    """The tool's stdout; BenchError when it fails or runs past timeout."""
    log("$ " + " ".join(cmd))
    try:
        res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BenchError(f"{name} timed out after {timeout} s") from None
    if res.returncode != 0:
        raise BenchError(f"{name} failed (rc {res.returncode}): {res.stderr.strip()[-1500:]}")
    return res.stdout


def run_vt(exe: Path, model: Path, p: int, n: int, b: int, t: int, timeout: float) -> tuple[float, float]:
    cmd = [str(exe), "-m", str(model), "--npp", str(p), "--ntg", str(n), "--npl", str(b), "-t", str(t), "--json"]
    out = run_tool("vt-batched-bench", cmd, timeout)
    try:
        row = json.loads(out.strip().splitlines()[-1])["rows"][0]
    except (ValueError, IndexError, KeyError):
        raise BenchError(f"vt-batched-bench printed no JSON: {out[-800:]}") from None
    return float(row["pp_tps"]), float(row["tg_tps"])


def run_llama(exe: Path, model: Path, p: int, n: int, b: int, t: int, extra: list[str],
              timeout: float) -> tuple[float, float]:
    cmd = [str(exe), "-m", str(model), "-npp", str(p), "-ntg", str(n), "-npl", str(b), "-t", str(t),
           "-c", str(b * (p + n) + 256), "--output-format", "jsonl", *extra]
    out = run_tool("llama-batched-bench", cmd, timeout)
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("{"):
            obj = json.loads(line)
            if "speed_pp" in obj:
                return float(obj["speed_pp"]), float(obj["speed_tg"])
    raise BenchError(f"llama-batched-bench printed no result line: {out[-800:]}")


def med(v: list[float]) -> float | None:
    return statistics.median(v) if v else None


def fmt(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or not b else f"{a / b:.2f}x"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", help="GGUF file (default: vt_models' smollm2)")
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--npp", type=int, default=128, help="prompt tokens per sequence")
    ap.add_argument("--ntg", type=int, default=128, help="decode steps")
    ap.add_argument("--npl", default="1,4,16,32,64", help="sequences per batch, comma-separated")
    ap.add_argument("-r", "--repetitions", type=int, default=3)
    ap.add_argument("--skip-llama", action="store_true", help="vt only")
    ap.add_argument("--llama-arg", action="append", default=[], help="extra llama-batched-bench flag")
    ap.add_argument("--vt-batched-bench", help="default: build/examples/bench/vt-batched-bench")
    ap.add_argument("--llama-batched-bench", help="use this binary instead of building one")
    ap.add_argument("--cache-dir", default=str(Path.home() / ".cache" / "vt"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--nice", type=int, default=10, help="niceness of the llama.cpp build")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per engine run")
    ap.add_argument("--json", action="store_true", help="also print the results as JSON")
    a = ap.parse_args()

    model = Path(a.model) if a.model else clb.vt_models.model_path("smollm2")
    vt_exe = Path(a.vt_batched_bench) if a.vt_batched_bench else REPO / "build" / "examples" / "bench" / "vt-batched-bench"
    if not vt_exe.is_file():
        sys.exit(f"{vt_exe} is missing: build vt first (meson compile -C build)")
    llama_exe = None
    if not a.skip_llama:
        llama_exe = (Path(a.llama_batched_bench) if a.llama_batched_bench
                     else clb.ensure_llama_bench(Path(a.cache_dir), a.jobs, a.nice, target="llama-batched-bench"))
    bs = [int(x) for x in a.npl.split(",") if x.strip()]
    if not bs or min(bs) < 1 or a.npp < 1 or a.ntg < 1 or a.repetitions < 1:
        sys.exit("--npl, --npp, --ntg and --repetitions must be positive")

    vt: dict[int, dict[str, list[float]]] = {b: {"pp": [], "tg": []} for b in bs}
    ll: dict[int, dict[str, list[float]]] = {b: {"pp": [], "tg": []} for b in bs}
    pp512: dict[str, list[float]] = {"vt": [], "llama": []}
    try:
        for rep in range(a.repetitions):
            log(f"repetition {rep + 1} of {a.repetitions}")
            pp512["vt"].append(run_vt(vt_exe, model, 512, 1, 1, a.threads, a.timeout)[0])
            if llama_exe:
                pp512["llama"].append(run_llama(llama_exe, model, 512, 1, 1, a.threads, a.llama_arg, a.timeout)[0])
            for b in bs:
                pp, tg = run_vt(vt_exe, model, a.npp, a.ntg, b, a.threads, a.timeout)
                vt[b]["pp"].append(pp)
                vt[b]["tg"].append(tg)
                if llama_exe:
                    pp, tg = run_llama(llama_exe, model, a.npp, a.ntg, b, a.threads, a.llama_arg, a.timeout)
                    ll[b]["pp"].append(pp)
                    ll[b]["tg"].append(tg)
    except BenchError as e:
        sys.exit(f"compare-batched-bench: {e}")

    vt512, ll512 = med(pp512["vt"]), med(pp512["llama"])
    print(f"\n{model.name}, {a.threads} threads, P={a.npp}, N={a.ntg}, median of {a.repetitions}; "
          f"pp512 (1 sequence): vt {fmt(vt512)}, llama.cpp {fmt(ll512)} t/s ({ratio(vt512, ll512)})\n")
    print("| B | vt pp t/s | llama.cpp pp t/s | pp ratio | vt tg t/s | llama.cpp tg t/s | tg ratio | vt tg / vt pp512 "
          "| per round |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    rows = []
    for b in bs:
        vp, vg, lp, lg = med(vt[b]["pp"]), med(vt[b]["tg"]), med(ll[b]["pp"]), med(ll[b]["tg"])
        share = f"{100 * vg / vt512:.0f}%" if vg and vt512 else "-"
        # The share within each repetition (its pp512 and its tg ran minutes
        # apart at most): the spread says how much the machine moved.
        rounds = sorted(100 * g / p for g, p in zip(vt[b]["tg"], pp512["vt"]) if p)
        spread = f"{rounds[0]:.0f}-{rounds[-1]:.0f}%" if rounds else "-"
        print(f"| {b} | {fmt(vp)} | {fmt(lp)} | {ratio(vp, lp)} | {fmt(vg)} | {fmt(lg)} | {ratio(vg, lg)} | {share} "
              f"| {spread} |")
        rows.append({"B": b, "vt": vt[b], "llama": ll[b], "vt_pp": vp, "vt_tg": vg, "llama_pp": lp, "llama_tg": lg,
                     "vt_tg_share_per_round": rounds})
    if a.json:
        print(json.dumps({"model": str(model), "threads": a.threads, "npp": a.npp, "ntg": a.ntg,
                          "pp512": pp512, "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
