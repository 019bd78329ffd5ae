#!/usr/bin/env python3
"""Side-by-side prefill/decode throughput: vt-bench vs llama.cpp's llama-bench.

Same machine, same run, same GGUF file, same thread count and repetitions
(DESIGN.md, "Performance method"). Prints:

    test  | vt t/s | llama.cpp t/s | ratio (vt / llama.cpp)
    pp512 |  ...
    tg128 |  ...

llama-bench is built from the llama.cpp that llama-cpp-python's sdist vendors
(pinned version below), outside the repository, and reused once built:
    source: ~/.cache/vt/llama.cpp-src   (pip download --no-deps --no-binary :all:)
    build:  ~/.cache/vt/llama.cpp-build (cmake, GGML_NATIVE=ON, Release)

Usage (from the repository root):
    python3 examples/bench/compare-llama-bench.py                  # smollm2, all cores
    python3 examples/bench/compare-llama-bench.py -t 2 -r 3 --vt-bench build/examples/bench/vt-bench
    python3 examples/bench/compare-llama-bench.py --build-only --jobs 1
    python3 examples/bench/compare-llama-bench.py --skip-vt         # llama.cpp numbers only
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
sys.path.insert(0, str(REPO / "examples" / "models"))
import vt_models  # noqa: E402

LLAMA_CPP_PYTHON_VERSION = "0.3.36"


def log(msg: str) -> None:
    print(f"compare-llama-bench: {msg}", file=sys.stderr, flush=True)


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    log("$ " + " ".join(str(c) for c in cmd))
    return subprocess.run(cmd, **kw)


def llama_bench_binary(build: Path) -> Path:
    return build / "bin" / "llama-bench"


def ensure_llama_bench(cache: Path, jobs: int, nice: int) -> Path:
    src_root = cache / "llama.cpp-src"
    build = cache / "llama.cpp-build"
    exe = llama_bench_binary(build)
    if exe.is_file() and os.access(exe, os.X_OK):
        return exe
    src_root.mkdir(parents=True, exist_ok=True)
    sdist = src_root / f"llama_cpp_python-{LLAMA_CPP_PYTHON_VERSION}.tar.gz"
    if not sdist.is_file():
        r = run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                 "--disable-pip-version-check", f"llama-cpp-python=={LLAMA_CPP_PYTHON_VERSION}",
                 "-d", str(src_root)])
        if r.returncode != 0 or not sdist.is_file():
            sys.exit(f"pip download of the llama-cpp-python {LLAMA_CPP_PYTHON_VERSION} sdist failed")
    top = src_root / f"llama_cpp_python-{LLAMA_CPP_PYTHON_VERSION}"
    llama_src = top / "vendor" / "llama.cpp"
    if not (llama_src / "CMakeLists.txt").is_file():
        log(f"extracting {sdist.name}")
        with tarfile.open(sdist) as tf:
            if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4 / 3.12
                tf.extractall(src_root, filter="data")
            else:
                tf.extractall(src_root)
    if not (llama_src / "CMakeLists.txt").is_file():
        sys.exit(f"{llama_src} has no CMakeLists.txt")
    if shutil.which("cmake") is None:
        sys.exit("cmake is not installed (apt-get install cmake)")
    nice_cmd = ["nice", "-n", str(nice)] if nice and shutil.which("nice") else []
    cfg = ["cmake", "-S", str(llama_src), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
           "-DGGML_NATIVE=ON", "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF",
           "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_SERVER=OFF"]
    if run(nice_cmd + cfg).returncode != 0:
        sys.exit("cmake configure of llama.cpp failed")
    if run(nice_cmd + ["cmake", "--build", str(build), "--target", "llama-bench",
                       "-j", str(jobs)]).returncode != 0:
        sys.exit("building llama-bench failed")
    if not exe.is_file():
        sys.exit(f"built, but {exe} is missing")
    return exe


def run_llama_bench(exe: Path, model: Path, p: int, n: int, t: int, r: int,
                    omp_passive: bool = False) -> dict[str, float]:
    cmd = [str(exe), "-m", str(model), "-p", str(p), "-n", str(n), "-t", str(t),
           "-r", str(r), "-o", "json"]
    env = dict(os.environ)
    if omp_passive:
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    res = run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if res.returncode != 0:
        sys.exit(f"llama-bench failed (rc {res.returncode}):\n{res.stderr[-3000:]}")
    rows = json.loads(res.stdout)
    out: dict[str, float] = {}
    for row in rows:
        if row.get("n_prompt", 0) > 0 and row.get("n_gen", 0) == 0:
            test = f"pp{row['n_prompt']}"
        elif row.get("n_gen", 0) > 0 and row.get("n_prompt", 0) == 0:
            test = f"tg{row['n_gen']}"
        else:
            continue
        out[test] = float(row["avg_ts"])
        out[test + "_sd"] = float(row.get("stddev_ts", 0.0))
        out[test + "_samples"] = row.get("samples_ts", [])  # type: ignore[assignment]
        if "build_commit" in row:
            out["_commit"] = row["build_commit"]  # type: ignore[assignment]
    return out


def run_vt_bench(exe: Path, model: Path, p: int, n: int, t: int, r: int) -> dict[str, float]:
    cmd = [str(exe), "-m", str(model), "-p", str(p), "-n", str(n), "-t", str(t),
           "-r", str(r), "--json"]
    res = run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if res.returncode != 0:
        sys.exit(f"vt-bench failed (rc {res.returncode}):\n{res.stderr[-3000:]}")
    try:
        obj = json.loads(res.stdout)
    except json.JSONDecodeError:
        sys.exit(f"vt-bench --json printed no JSON:\n{res.stdout[-2000:]}")
    if isinstance(obj, list):  # tolerate a list of one object
        obj = obj[0] if obj else {}
    out: dict[str, float] = {}
    for kind, test in (("pp", f"pp{p}"), ("tg", f"tg{n}")):
        if obj.get(f"{kind}_tps") is not None:
            out[test] = float(obj[f"{kind}_tps"])
            if obj.get(f"{kind}_stddev") is not None:
                out[test + "_sd"] = float(obj[f"{kind}_stddev"])
            out[test + "_samples"] = obj.get(f"{kind}_samples", [])  # type: ignore[assignment]
    if obj.get("threads") not in (None, t):
        log(f"warning: vt-bench reports threads={obj.get('threads')}, asked for {t}")
    return out


def fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", help="GGUF path (default: the --model-name from vt_models)")
    ap.add_argument("--model-name", default="smollm2", help="vt_models name (default smollm2)")
    ap.add_argument("-t", "--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("-r", "--repetitions", type=int, default=3)
    ap.add_argument("-p", "--n-prompt", type=int, default=512)
    ap.add_argument("-n", "--n-gen", type=int, default=128)
    ap.add_argument("--vt-bench", default=str(REPO / "build" / "examples" / "bench" / "vt-bench"))
    ap.add_argument("--llama-bench", help="use this llama-bench instead of building one")
    ap.add_argument("--cache-dir", default=str(Path.home() / ".cache" / "vt"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="build parallelism")
    ap.add_argument("--nice", type=int, default=10, help="niceness of the llama.cpp build")
    ap.add_argument("--build-only", action="store_true", help="build llama-bench and exit")
    ap.add_argument("--skip-vt", action="store_true", help="run llama-bench only")
    ap.add_argument("--json", action="store_true", help="also print the results as JSON")
    ap.add_argument("--omp-passive", action="store_true",
                    help="run llama-bench with OMP_WAIT_POLICY=PASSIVE (its OpenMP threads "
                         "spin by default, which collapses on an oversubscribed machine)")
    a = ap.parse_args()

    lb = Path(a.llama_bench) if a.llama_bench else ensure_llama_bench(
        Path(a.cache_dir).expanduser(), a.jobs, a.nice)
    if a.build_only:
        print(lb)
        return 0
    model = Path(a.model) if a.model else vt_models.model_path(a.model_name)
    vt_exe = Path(a.vt_bench)
    if not a.skip_vt and not vt_exe.is_file():
        sys.exit(f"{vt_exe} not found: build vt (meson compile -C build) or pass --vt-bench PATH, "
                 "or --skip-vt")

    args = (model, a.n_prompt, a.n_gen, a.threads, a.repetitions)
    llama = run_llama_bench(lb, *args, omp_passive=a.omp_passive)
    vt = {} if a.skip_vt else run_vt_bench(vt_exe, *args)

    tests = [f"pp{a.n_prompt}", f"tg{a.n_gen}"]
    print(f"model {model.name}, {a.threads} threads, {a.repetitions} repetitions"
          + (f", llama.cpp {llama['_commit']}" if "_commit" in llama else "")
          + (" (OMP_WAIT_POLICY=PASSIVE)" if a.omp_passive else ""))
    print(f"| {'test':6s} | {'vt t/s':>14s} | {'llama.cpp t/s':>14s} | {'ratio':>6s} |")
    print("|" + "-" * 8 + "|" + "-" * 16 + "|" + "-" * 16 + "|" + "-" * 8 + "|")
    noisy = []
    for test in tests:
        v, l = vt.get(test), llama.get(test)
        ratio = "-" if (v is None or not l) else f"{v / l:.2f}"
        cols = []
        for res, val in ((vt, v), (llama, l)):
            sd = res.get(test + "_sd")
            cols.append(fmt(val) + (f" ± {sd:.1f}" if val is not None and sd is not None else ""))
            if val and sd is not None and sd > 0.15 * val:
                noisy.append(test)
        print(f"| {test:6s} | {cols[0]:>14s} | {cols[1]:>14s} | {ratio:>6s} |")
    # Decode is memory-bound: each token reads every weight once.
    size = model.stat().st_size
    tg = f"tg{a.n_gen}"
    parts = [f"{name} {res[tg] * size / 1e9:.1f} GB/s" for name, res in (("vt", vt), ("llama.cpp", llama))
             if res.get(tg)]
    if parts:
        print(f"decode weight traffic ({size / 1e6:.0f} MB/token): " + ", ".join(parts))
    if noisy:
        print(f"warning: stddev > 15% of the mean for {', '.join(sorted(set(noisy)))}: "
              "the machine is probably busy; compare samples (--json) or rerun")
    if a.json:
        print(json.dumps({"model": str(model), "threads": a.threads, "repetitions": a.repetitions,
                          "vt": vt, "llama.cpp": {k: v for k, v in llama.items()}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
