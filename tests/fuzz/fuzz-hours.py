#!/usr/bin/env python3
"""fuzz-hours: long libFuzzer runs of every fuzz target, in turn, niced, so
that they can run in the background while other work goes on; what they find
that adds coverage is merged, minimized, into the committed corpora.

For each target NAME (tests/fuzz/fuzz-NAME.cpp): builds fuzz-NAME and its
generated seeds in the clang build (-Dfuzz=true), runs it under `nice -n 19`
from a work directory that starts with the seeds and tests/fuzz/corpus/NAME,
in runs of at most 5 minutes until it has had `--cpu-minutes` of CPU time (a
niced run beside other work gets less CPU than wall time), then merges the work directory into a copy
of the seeds and the committed corpus (-merge=1, which keeps an input only
where it adds coverage) and copies at most `--keep` of the inputs that merge
added into tests/fuzz/corpus/NAME. A crash, leak, timeout or out-of-memory
input is kept in the work directory (crash-*, leak-*, timeout-*, oom-*) and
named at the end; the script then exits 1. (A slow-unit or timeout input is
first run again at normal priority: one that finishes within 2 s was slow
only because the machine was busy, and is set aside in artifacts/.)

Prints, per target, the CPU-minutes, the executions and their rate, the
corpus sizes and what was found, as a table for an issue note.

usage: fuzz-hours.py [--build build-fuzz] [--cpu-minutes 30] [--targets gguf,spm,...]
                     [--keep 50] [--no-merge]

  CC=clang CXX=clang++ meson setup build-fuzz -Dfuzz=true   # once
  nohup tests/fuzz/fuzz-hours.py > fuzz-hours.log 2>&1 &     # every target, in turn
Two at once (two cores): two of these with --targets splitting the list,
once the targets are built (two ninjas in one build directory collide):
  ninja -C build-fuzz $(for t in gguf spm ...; do echo tests/fuzz/fuzz-$t tests/fuzz/corpus-$t; done)
"""
from __future__ import annotations

import argparse
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
FINDINGS = ("crash-", "leak-", "timeout-", "oom-", "slow-unit-")


def targets() -> list[str]:
    return sorted(p.name[len("fuzz-"):-len(".cpp")] for p in HERE.glob("fuzz-*.cpp"))


def confirm_slow(exe: Path, work: Path, findings: list[str]) -> list[str]:
    """libFuzzer times its inputs by the clock: a niced run on a busy machine
    (the point of this script) can see an input take 20 s that takes
    milliseconds. Each slow-unit or timeout input runs again at normal
    priority; one that finishes within 2 s is an artifact of the load, moved
    to artifacts/ and not counted (crashes, leaks and OOMs always count)."""
    kept = []
    for f in findings:
        if not f.startswith(("slow-unit-", "timeout-")):
            kept.append(f)
            continue
        r = subprocess.run([str(exe), str(work / f), "-timeout=2", "-rss_limit_mb=2048"], cwd=work,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if r.returncode == 0:
            (work / "artifacts").mkdir(exist_ok=True)
            shutil.move(str(work / f), str(work / "artifacts" / f))
        else:
            kept.append(f)
    return kept


def run_target(a, build: Path, name: str) -> dict:
    fuzz_dir = build / "tests" / "fuzz"
    subprocess.run(["ninja", "-C", str(build), f"tests/fuzz/fuzz-{name}", f"tests/fuzz/corpus-{name}"],
                   check=True, stdout=subprocess.DEVNULL)
    exe, seeds, dictionary = fuzz_dir / f"fuzz-{name}", fuzz_dir / f"corpus-{name}", fuzz_dir / f"{name}.dict"
    committed = HERE / "corpus" / name
    work = build / "fuzz-hours" / name
    shutil.rmtree(work, ignore_errors=True)
    corpus = work / "corpus"
    corpus.mkdir(parents=True)
    for src in (seeds, committed):
        if src.is_dir():
            for f in src.iterdir():
                if f.is_file():
                    shutil.copy(f, corpus / f.name)
    n_start = sum(1 for _ in corpus.iterdir())
    cpu = wall = 0.0
    execs = 0
    findings: list[str] = []
    run = 0
    while cpu < a.cpu_minutes * 60 and not findings:
        # The CPU time still owed, as wall time: a niced run may get less.
        chunk = max(10, min(300, int(a.cpu_minutes * 60 - cpu)))
        cmd = ["nice", "-n", "19", str(exe), str(corpus), f"-dict={dictionary}", f"-max_total_time={chunk}",
               "-rss_limit_mb=2048", "-timeout=20", "-print_final_stats=1", f"-artifact_prefix={work}/"]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.time()
        with open(work / f"log-{run}.txt", "w") as log:
            subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=work)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall += time.time() - t0
        cpu += (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        text = (work / f"log-{run}.txt").read_text(errors="replace")
        execs += sum(int(x) for x in re.findall(r"stat::number_of_executed_units:\s*(\d+)", text))
        findings = sorted(p.name for p in work.iterdir() if p.name.startswith(FINDINGS))
        findings = confirm_slow(exe, work, findings)
        run += 1
    added = 0
    if not a.no_merge:
        # The inputs of the long run that cover what the seeds and the
        # committed corpus do not.
        base = work / "merge-base"
        merged = work / "merged"
        base.mkdir()
        merged.mkdir()
        for src in (seeds, committed):
            if src.is_dir():
                for f in src.iterdir():
                    if f.is_file():
                        shutil.copy(f, base / f.name)
                        shutil.copy(f, merged / f.name)
        subprocess.run(["nice", "-n", "19", str(exe), "-merge=1", str(merged), str(corpus), "-rss_limit_mb=2048",
                        "-timeout=20"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=work)
        new = sorted(f for f in merged.iterdir() if not (base / f.name).exists())
        committed.mkdir(parents=True, exist_ok=True)
        for f in new[:a.keep]:
            shutil.copy(f, committed / f.name)
            added += 1
    return {"name": name, "cpu_min": cpu / 60, "wall_min": wall / 60, "execs": execs, "rate": execs / max(cpu, 1e-9),
            "corpus": (n_start, sum(1 for _ in corpus.iterdir())), "added": added, "findings": findings,
            "work": work}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=str(ROOT / "build-fuzz"), help="the clang build with -Dfuzz=true")
    ap.add_argument("--cpu-minutes", type=float, default=30.0, help="CPU minutes per target")
    ap.add_argument("--targets", default=",".join(targets()))
    ap.add_argument("--keep", type=int, default=50, help="most new inputs committed per target")
    ap.add_argument("--no-merge", action="store_true", help="leave tests/fuzz/corpus as it is")
    a = ap.parse_args()
    build = Path(a.build)
    if not (build / "build.ninja").exists():
        ap.error(f"{build} is not a meson build: CC=clang CXX=clang++ meson setup {build} -Dfuzz=true")
    unknown = set(a.targets.split(",")) - set(targets())
    if unknown:
        ap.error(f"no such targets: {', '.join(sorted(unknown))} (known: {', '.join(targets())})")
    rows = []
    for name in a.targets.split(","):
        r = run_target(a, build, name)
        rows.append(r)
        print(f"{name}: {r['cpu_min']:.1f} CPU-min, {r['execs']} runs, {len(r['findings'])} findings",
              file=sys.stderr, flush=True)
    print("| target | CPU-minutes (wall) | executions | exec per CPU-s | corpus start -> end | inputs committed | findings |")
    print("|---|---:|---:|---:|---|---:|---|")
    for r in rows:
        print(f"| {r['name']} | {r['cpu_min']:.1f} ({r['wall_min']:.1f}) | {r['execs']} | {r['rate']:.0f} | {r['corpus'][0]} -> "
              f"{r['corpus'][1]} | {r['added']} | {', '.join(r['findings']) or 'none'} |")
    bad = [r for r in rows if r["findings"]]
    for r in bad:
        print(f"{r['name']}: findings in {r['work']}: {', '.join(r['findings'])}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
