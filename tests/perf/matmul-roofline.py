#!/usr/bin/env python3
"""BF16 / F16 matmul against its rooflines: perf-matmul --cold over SmolLM2-135M's
and a 1B model's weight shapes and token counts m, each row's weight bytes per
CPU-second against vt-membw and its GFLOP/s against vt-flops' bf16 dot peak
(BF16) or f32 FMA peak (F16, multiplied as f32), and which of the two binds.

    tests/perf/matmul-roofline.py [--build build] [--threads 1] [--types BF16,F16]
                                  [--m 1,2,4,...] [--shapes smol,1b]

The binding roofline at m tokens is the smaller of membw / (2 bytes per weight)
x 2 m flops and the dot peak, each divided by the threads (the rates are per
CPU-second: per thread); "% roof" is the measured GFLOP/s over it. Rates
are per CPU-second (perf-matmul's), so a loaded machine lowers them less than
wall-clock rates; so are the dot peaks (vt-flops --cpu-time); vt-membw's is a
wall-clock best, which others' load lowers: run it on a quiet machine.
"""
import argparse, json, re, subprocess, sys
from pathlib import Path

SHAPES = {  # name: (n rows, k)
    "smol": [("attn 576x576", 576, 576), ("K/V 192x576", 192, 576), ("gate/up 1536x576", 1536, 576),
             ("down 576x1536", 576, 1536), ("output 49152x576", 49152, 576)],
    "1b": [("1B 2048x2048", 2048, 2048), ("1B 8192x2048", 8192, 2048)],
}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--types", default="BF16,F16")
    ap.add_argument("--m", default="1,2,4,8,16,32,64,128,512")
    ap.add_argument("--shapes", default="smol,1b")
    ap.add_argument("--membw", type=float, help="GB/s for the bandwidth roofline instead of vt-membw's "
                    "(a quiet machine's figure, where others load this one)")
    a = ap.parse_args()
    b = Path(a.build)
    t = str(a.threads)
    fl = json.loads(subprocess.run([b / "examples/bench/vt-flops", "-t", t, "-r", "3", "--json", "--cpu-time"], check=True,
                                   capture_output=True, text=True).stdout)
    bw = a.membw or json.loads(subprocess.run([b / "examples/bench/vt-membw", "-t", t, "-r", "3", "-s", "512", "--json"],
                                   check=True, capture_output=True, text=True).stdout.splitlines()[-1])["best_gbs"]
    # (vt-membw times wall seconds: on a loaded machine the m = 1 rows' rates
    # per CPU-second can pass it.)
    print(f"threads {t}: vt-membw {bw:.1f} GB/s, f32 FMA {fl['best_gflops']:.0f} GFLOP/s, "
          f"bf16 dot {fl['bf16_best_gflops'] or 0:.0f} GFLOP/s")
    print("| type | shape | m | us/call (CPU) | GB/s weights | GFLOP/s | binds | % roof |")
    print("|---|---|---:|---:|---:|---:|---|---:|")
    for ty in a.types.split(","):
        peak = fl["bf16_best_gflops"] if ty == "BF16" and fl["bf16_best_gflops"] else fl["best_gflops"]
        for sh in a.shapes.split(","):
            for name, n, k in SHAPES[sh]:
                for m in map(int, a.m.split(",")):
                    graph_flops = 2.0 * max(n * k, 48 << 20) * m  # --cold fills 96 MB
                    reps = max(3, min(30, int(0.5 / (graph_flops / (peak * 1e9) + 96e6 / (bw * 1e9)))))
                    out = subprocess.run([b / "tests/perf/perf-matmul", "--type", ty, "--k", str(k), "--n", str(n),
                                          "--m", str(m), "--threads", t, "--reps", str(reps), "--cold"],
                                         check=True, capture_output=True, text=True).stdout
                    us = float(re.search(r"([\d.]+) us CPU", out).group(1))
                    gbs = float(re.search(r"([\d.]+) GB/s", out).group(1))
                    gf = float(re.search(r"([\d.]+) GFLOP/s", out).group(1))
                    # perf-matmul's rates are per CPU-second, i.e. per thread:
                    # against each thread's share of both rooflines.
                    mem_roof = bw / a.threads / 2 * 2 * m  # GFLOP/s when the weight bytes bind
                    dot_roof = peak / a.threads
                    binds = "mem" if mem_roof < dot_roof else "dot"
                    roof = min(mem_roof, dot_roof)
                    print(f"| {ty} | {name} | {m} | {us:.1f} | {gbs:.1f} | {gf:.1f} | {binds} | {100 * gf / roof:.0f} |",
                          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
