#!/usr/bin/env python3
"""Decode and prefill under a competing load: libvt builds side by side.

Runs vt-bench (tg and pp) with each given libvt (LD_PRELOAD, one binary),
alternating builds round by round, in three settings: as the machine is;
with `nice -n 19` busy loops beside it (one per core by default: a process
that should cost a 2-thread decode almost nothing); and with more threads
than cores (-t 2x cores: the pool must still make progress). Prints the best
and the median of the rounds per build and setting, and the load average
before each setting. llama-bench runs beside them when --llama-bench is given.

Usage (from the repository root, after a build):
    .venv/bin/python examples/bench/contention-bench.py --lib old=/tmp/old/libvt.so.1 --lib new=build/libvt.so.1
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def vt_bench(bench: str, lib: str, model: str, threads: int, p: int, n: int, reps: int) -> tuple[float, float]:
    cmd = [bench, "-m", model, "-p", str(p), "-n", str(n), "-r", str(reps), "--json"]
    if threads:
        cmd += ["-t", str(threads)]
    out = subprocess.run(cmd, env=dict(os.environ, LD_PRELOAD=lib), stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, check=True).stdout
    j = json.loads(out.strip().splitlines()[-1])
    return j["pp_tps"], j["tg_tps"]


def llama_bench(bin_: str, model: str, threads: int, p: int, n: int, reps: int) -> tuple[float, float]:
    out = subprocess.run([bin_, "-m", model, "-p", str(p), "-n", str(n), "-r", str(reps), "-t", str(threads),
                          "-o", "json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         check=True).stdout
    rows = json.loads(out)
    pp = next(r["avg_ts"] for r in rows if r["n_prompt"] > 0)
    tg = next(r["avg_ts"] for r in rows if r["n_gen"] > 0)
    return pp, tg


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", action="append", required=True, metavar="NAME=PATH", help="a libvt to compare")
    ap.add_argument("-m", "--model", default=str(Path.home() / ".cache/vt/models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("-r", "--reps", type=int, default=3, help="vt-bench repetitions per round")
    ap.add_argument("-p", type=int, default=512)
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("--busy", type=int, default=os.cpu_count(), help="nice 19 busy loops in the 'busy' setting")
    ap.add_argument("--settings", default="quiet,busy,oversub")
    ap.add_argument("--llama-bench", help="llama-bench binary to run beside (quiet and busy settings)")
    ap.add_argument("--vt-bench", default=str(REPO / "build/examples/bench/vt-bench"))
    a = ap.parse_args()
    libs = [tuple(x.split("=", 1)) for x in a.lib]
    cores = os.cpu_count() or 1
    for setting in a.settings.split(","):
        busy = []
        if setting == "busy":
            busy = [subprocess.Popen(["nice", "-n", "19", "sh", "-c", "while :; do :; done"]) for _ in range(a.busy)]
        threads = 2 * cores if setting == "oversub" else 0
        try:
            print(f"== {setting} (threads {threads or 'default'}, {len(busy)} nice-19 loops); "
                  f"loadavg {open('/proc/loadavg').read().split()[0]}", flush=True)
            res: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in libs}
            if a.llama_bench and setting != "oversub":
                res["llama.cpp"] = []
            for _ in range(a.rounds):
                for name, lib in libs:
                    res[name].append(vt_bench(a.vt_bench, lib, a.model, threads, a.p, a.n, a.reps))
                if "llama.cpp" in res:
                    res["llama.cpp"].append(llama_bench(a.llama_bench, a.model, cores, a.p, a.n, a.reps))
            for name, r in res.items():
                pp, tg = [x[0] for x in r], [x[1] for x in r]
                print(f"  {name:10s} pp{a.p} best {max(pp):8.1f} median {statistics.median(pp):8.1f} | "
                      f"tg{a.n} best {max(tg):7.1f} median {statistics.median(tg):7.1f}  tok/s", flush=True)
        finally:
            for b in busy:
                b.kill()
                b.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
