#!/usr/bin/env python3
"""Where a batched decode step's time goes: perf samples per symbol.

Runs vt-batched-bench's decode phase (--skip-pp) twice under `perf record -e
cpu-clock` (software clock samples: no hardware counters needed, so it works
in VMs), once with 1 timed step and once with N + 1, and prints the symbols of
the difference: the samples of N decode steps at B sequences from depth P,
without the model load, the prompts and the warm-up both runs share.

Usage (from the repository root, after a build; needs `perf`, Debian's
linux-perf):
    .venv/bin/python examples/bench/profile-decode-step.py                 # smollm2, B=64, P=128, 2 threads
    .venv/bin/python examples/bench/profile-decode-step.py -B 16 --steps 128 --top 40
    .venv/bin/python examples/bench/profile-decode-step.py --preload OLD/libvt.so.1   # another libvt, same binary
"""
from __future__ import annotations

import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def symbol_samples(data: Path) -> collections.Counter:
    """perf report's samples per symbol of one recording."""
    out = subprocess.run(["perf", "report", "-i", str(data), "--no-children", "--sort", "symbol",
                          "-F", "sample,symbol", "--stdio"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, check=True).stdout
    counts: collections.Counter = collections.Counter()
    for line in out.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and parts[0].isdigit():
            name = parts[1].split("  ")[0]  # perf pads the symbol and adds empty "-" columns
            counts[name[:110]] += int(parts[0])
    return counts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", help="GGUF path (default: vt_models --model-name)")
    ap.add_argument("--model-name", default="smollm2")
    ap.add_argument("-B", "--sequences", type=int, default=64)
    ap.add_argument("-P", "--prompt", type=int, default=128, help="prompt tokens per sequence")
    ap.add_argument("--steps", type=int, default=64, help="decode steps profiled")
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--freq", type=int, default=4000, help="samples per second and thread")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--preload", help="LD_PRELOAD this libvt (compare builds with one binary)")
    ap.add_argument("--vt-batched-bench", default=str(REPO / "build" / "examples" / "bench" / "vt-batched-bench"))
    a = ap.parse_args()
    if not shutil.which("perf"):
        sys.exit("perf not found (Debian: apt install linux-perf)")
    bench = Path(a.vt_batched_bench)
    if not bench.is_file():
        sys.exit(f"{bench} not found: build it (meson compile -C build vt-batched-bench)")
    if a.model:
        model = Path(a.model)
    else:
        sys.path.insert(0, str(REPO / "examples" / "models"))
        import vt_models
        model = vt_models.model_path(a.model_name)
    if a.sequences < 1 or a.prompt < 1 or a.steps < 1:
        sys.exit("-B, -P and --steps must be >= 1")
    env = dict(os.environ, **({"LD_PRELOAD": a.preload} if a.preload else {}))
    counts = []
    with tempfile.TemporaryDirectory(prefix="decode-profile-") as tmp:
        for steps in (1, a.steps + 1):
            data = Path(tmp) / f"steps{steps}.data"
            cmd = ["perf", "record", "-q", "-e", "cpu-clock", "-F", str(a.freq), "-o", str(data), "--",
                   str(bench), "-m", str(model), "-t", str(a.threads), "--npp", str(a.prompt),
                   "--ntg", str(steps), "--npl", str(a.sequences), "--skip-pp"]
            r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if r.returncode != 0:
                sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr[-2000:]}")
            counts.append(symbol_samples(data))
    diff = {s: n - counts[0].get(s, 0) for s, n in counts[1].items()}
    total = sum(n for n in diff.values() if n > 0)
    if total == 0:
        sys.exit("no samples in the difference (too few steps?)")
    print(f"{model.name}: {a.steps} decode steps of {a.sequences} sequences from depth {a.prompt}, "
          f"{a.threads} threads; {total} samples (cpu-clock, {a.freq}/s)")
    for s, n in sorted(diff.items(), key=lambda x: -x[1])[:a.top]:
        print(f"{100 * n / total:6.1f}%  {n:7d}  {s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
