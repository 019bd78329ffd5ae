#!/usr/bin/env python3
"""Side by side on one Vulkan driver: vt-bench --device vulkan0 vs llama.cpp's
llama-bench built with its Vulkan backend.

Same GGUF, same machine, same run, same thread count, same driver: both
engines are pinned to Mesa's lavapipe (llvmpipe, a Vulkan implementation that
runs on the CPU) with VK_DRIVER_FILES, so what is compared is the two engines'
Vulkan paths (shaders, uploads, graph submission), not two GPUs. For every
model it measures, per engine:

  load s    seconds from the start of the engine's process to the moment it
            says the model is loaded: a timestamp is taken for every line of
            its stderr as it arrives (both write stderr unbuffered). vt: the
            "vt-bench: weights on vulkan0 ...: X MiB uploaded in Y s" line,
            printed when vt_model_load returns. llama.cpp: the first
            "llama_context:" line of llama-bench -v, printed when
            llama_model_load_from_file has returned and the context is being
            made. Both thus include process start, Vulkan instance and device
            set-up, reading the file and uploading the weights; neither
            includes a context or an eval (both engines create their compute
            pipelines on first use, which falls in the untimed warmups).
            (llama.cpp's own "load time" of llama_perf is not used: it is
            re-taken at the end of the first eval, so it includes a warmup
            prefill.) vt's own figure for the upload alone ("uploaded in Y s")
            is given beside it.
  MiB to device
            bytes moved to the device at load: vt's uploaded_bytes (the same
            line); llama.cpp's "load_tensors: Vulkan0 model buffer size" lines
            (the weights it places on the device; the CPU_Mapped buffer, the
            token embedding llama.cpp keeps on the host, is not moved and not
            counted; KV cache and compute buffers are allocated, not moved).
  pp t/s    prefill tokens/s of a -p token prompt, and
  tg t/s    decode tokens/s of -n tokens (llama-bench's and vt-bench's own
            tests, which match: random token ids, an untimed warmup, then
            the timed run; vt-bench's tg warmup is all -n steps, llama-bench's
            one token).

Every repetition is its own invocation of each engine (-r 1), alternating
vt, llama.cpp, vt, ..., and the table gives the MEDIAN of the repetitions and
the ratio vt / llama.cpp of the medians, plus "paired": the median of the
per-round ratios. lavapipe is some 40-70x slower than native CPU code (llama.cpp
ran SmolLM2-135M Q4_1 at about 9 t/s pp128 and 2 t/s tg32 here), hence the
small defaults: -p 64 -n 16, 3 repetitions, the random-weight smollm2-135m
shape (make-random-gguf.py) in Q4_1 and Q8_0: on 2 cores, some 30-60 s per
invocation and 3-6 minutes a model. --real adds the real default model (vt_models "smollm2",
SmolLM2-135M-Instruct Q4_1); -m any GGUF instead.

vt's stderr is searched for warnings (an op the device lacks falls back to
the CPU, with a warning on its first use); the distinct lines are listed
under the table.

llama-bench is built from the llama.cpp that llama-cpp-python's sdist vendors
(the version compare-llama-bench.py pins), outside the repository, and reused:
    source: ~/.cache/vt/llama.cpp-src (shared with compare-llama-bench.py)
    copy:   ~/.cache/vt/llama.cpp-src-vulkan (patched: below)
    build:  ~/.cache/vt/llama.cpp-build-vulkan (GGML_VULKAN=ON, GGML_NATIVE=ON,
            Release; needs cmake, glslc, libvulkan-dev and spirv-headers)
Its ggml-vulkan.cpp does not compile against Debian 12's Vulkan headers
(1.3.239, no vk::LayerSettingEXT), so the copy creates its Vulkan instance
without the layer-settings struct, which only turns on the validation
layer's best-practice checks in GGML_VULKAN_VALIDATE builds. llama.cpp skips
CPU-type Vulkan devices unless GGML_VK_VISIBLE_DEVICES names them, so it runs
with GGML_VK_VISIBLE_DEVICES=0; -ngl is llama-bench's default (all layers).

Usage (from the repository root; vt-bench from a meson build with the Vulkan module):
    python3 examples/bench/compare-llama-vulkan.py                     # random Q4_1, Q8_0
    python3 examples/bench/compare-llama-vulkan.py --real --types Q4_1 -p 128 -n 32
    python3 examples/bench/compare-llama-vulkan.py -m model.gguf -r 5 --json
    python3 examples/bench/compare-llama-vulkan.py --vt-device cpu     # vt's half, no module
    python3 examples/bench/compare-llama-vulkan.py --build-only --jobs 2
    python3 examples/bench/compare-llama-vulkan.py --skip-vt           # llama.cpp only
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The shared helpers (pinned llama.cpp version, random models, GGUF reader)
# live in compare-llama-bench.py, a script: load it by path.
_spec = importlib.util.spec_from_file_location(
    "compare_llama_bench", REPO / "examples" / "bench" / "compare-llama-bench.py")
cl = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cl)

LVP_ICD = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
ENGINES = ("vt", "llama.cpp")


def log(msg: str) -> None:
    print(f"compare-llama-vulkan: {msg}", file=sys.stderr, flush=True)


cl.log = log  # the helpers' messages (cl.run, cl.random_models) under this script's name


# --- llama.cpp with its Vulkan backend ---

# Debian 12's Vulkan headers (1.3.239) have no vk::LayerSettingEXT, which the
# instance creation of this llama.cpp uses to turn on the validation layer's
# best-practice checks (only with GGML_VULKAN_VALIDATE, off here). The copy
# built here creates its instance without that chained struct.
LAYER_SETTINGS_BLOCK = re.compile(
    r"    VkBool32 enable_best_practice = layer_settings;\n.*?"
    r"(vk::InstanceCreateInfo instance_create_info\([^;]*?), &layer_setting_info\);",
    re.S)


def llama_source(cache: Path) -> Path:
    """The llama.cpp that the pinned llama-cpp-python sdist vendors (the same
    tree compare-llama-bench.py builds), fetched and extracted on first use."""
    src_root = cache / "llama.cpp-src"
    top = src_root / f"llama_cpp_python-{cl.LLAMA_CPP_PYTHON_VERSION}"
    tree = top / "vendor" / "llama.cpp"
    if (tree / "CMakeLists.txt").is_file():
        return tree
    sdist = top.with_name(top.name + ".tar.gz")
    if not sdist.is_file():
        src_root.mkdir(parents=True, exist_ok=True)
        if cl.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                "--disable-pip-version-check", f"llama-cpp-python=={cl.LLAMA_CPP_PYTHON_VERSION}",
                "-d", str(src_root)]).returncode != 0 or not sdist.is_file():
            sys.exit(f"could not download {sdist.name}")
    log(f"extracting {sdist.name}")
    with tarfile.open(sdist) as tf:
        kw = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        tf.extractall(src_root, **kw)
    if not (tree / "CMakeLists.txt").is_file():
        sys.exit(f"{tree} has no CMakeLists.txt")
    return tree


def patched_copy(tree: Path, dest: Path) -> Path:
    """dest: a copy of the llama.cpp tree (without its models/ and docs/) whose
    ggml-vulkan.cpp has the layer-settings block taken out; the shared tree
    is left as it is."""
    vk_cpp = dest / "ggml" / "src" / "ggml-vulkan" / "ggml-vulkan.cpp"
    if vk_cpp.is_file() and "LayerSettingEXT" not in vk_cpp.read_text():
        return dest
    shutil.rmtree(dest, ignore_errors=True)
    # The top-level models/ (vocab files for tests) and docs/ are 110 MB the build does not read.
    shutil.copytree(tree, dest, ignore=lambda d, names: [n for n in ("models", "docs")
                                                          if Path(d) == tree and n in names])
    text = vk_cpp.read_text()
    text, n = LAYER_SETTINGS_BLOCK.subn(r"    \1);", text)
    if n != 1 or "LayerSettingEXT" in text:
        sys.exit(f"{vk_cpp}: the layer-settings block to take out was not found (another llama.cpp?)")
    vk_cpp.write_text(text)
    log(f"{vk_cpp}: instance created without VK_EXT_layer_settings' struct")
    return dest


def ensure_llama_bench_vulkan(cache: Path, jobs: int, nice: int) -> Path:
    build = cache / "llama.cpp-build-vulkan"
    exe = build / "bin" / "llama-bench"
    if exe.is_file() and os.access(exe, os.X_OK):
        return exe
    for tool in ("cmake", "glslc"):  # and SPIRV-Headers (cmake finds them)
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is not installed "
                     "(Debian: apt-get install cmake glslc libvulkan-dev spirv-headers)")
    src = patched_copy(llama_source(cache), cache / "llama.cpp-src-vulkan")
    nice_cmd = ["nice", "-n", str(nice)] if nice and shutil.which("nice") else []
    cfg = ["cmake", "-S", str(src), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
           "-DGGML_VULKAN=ON", "-DGGML_NATIVE=ON", "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF",
           "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_SERVER=OFF"]
    if cl.run(nice_cmd + cfg).returncode != 0:
        sys.exit("cmake configure of llama.cpp (Vulkan) failed")
    if cl.run(nice_cmd + ["cmake", "--build", str(build), "--target", "llama-bench",
                       "-j", str(jobs)]).returncode != 0:
        sys.exit("building llama-bench (Vulkan) failed")
    if not exe.is_file():
        sys.exit(f"built, but {exe} is missing")
    return exe


# --- one invocation of an engine, its stderr lines timestamped ---

def timed_run(cmd: list, env: dict, timeout: float | None) -> tuple[str, list[tuple[float, str]]]:
    """stdout, and each stderr line with the seconds since the process was
    started at which it arrived."""
    log("$ " + " ".join(str(c) for c in cmd))
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    out: list[str] = []
    err: list[tuple[float, str]] = []

    def read_err() -> None:
        for line in proc.stderr:
            err.append((time.monotonic() - t0, line.rstrip("\n")))

    readers = [threading.Thread(target=lambda: out.append(proc.stdout.read())),
               threading.Thread(target=read_err)]
    for r in readers:
        r.start()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise cl.BenchError(f"{Path(cmd[0]).name} timed out after {timeout} s") from None
    finally:
        for r in readers:
            r.join()
    if proc.returncode != 0:
        tail = "\n".join(line for _, line in err[-15:])
        raise cl.BenchError(f"{Path(cmd[0]).name} failed (rc {proc.returncode}): {tail}")
    return "".join(out), err


def parse_json(stdout: str, what: str):
    try:
        return json.loads(stdout)
    except json.JSONDecodeError:
        raise cl.BenchError(f"{what} printed no JSON: {stdout[-1000:]}") from None


VT_PLACEMENT = re.compile(r"^vt-bench: weights on (\S+) \((\d+) of (\d+) layers\): "
                          r"([0-9.]+) MiB uploaded in ([0-9.]+) s")


def vt_once(exe: Path, model: Path, device: str, p: int, n: int, t: int, env: dict,
            timeout: float | None) -> tuple[dict, list[str]]:
    """One vt-bench run (-r 1): its measurements and its stderr lines."""
    cmd = [str(exe), "-m", str(model), "--device", device, "-p", str(p), "-n", str(n),
           "-t", str(t), "-r", "1", "--json"]
    stdout, err = timed_run(cmd, env, timeout)
    obj = parse_json(stdout, "vt-bench --json")
    res = {"pp": obj.get("pp_tps") if p else None, "tg": obj.get("tg_tps") if n else None,
           "device": obj.get("device")}
    for at, line in err:
        m = VT_PLACEMENT.match(line)
        if m:
            res.update(load_s=at, mib_up=float(m[4]), upload_s=float(m[5]),
                       layers=f"{m[2]}/{m[3]}")
            break
    return res, [line for _, line in err]


LLAMA_DEVICE_BUFFER = re.compile(r"load_tensors:\s+(\S+) model buffer size =\s+([0-9.]+) MiB")


def on_host(buffer: str) -> bool:
    """A ggml buffer type in host memory: CPU, CPU_Mapped, CPU_REPACK, Vulkan_Host."""
    return buffer.startswith("CPU") or buffer.endswith("_Host")


def llama_once(exe: Path, model: Path, p: int, n: int, t: int, env: dict,
               timeout: float | None) -> tuple[dict, list[str]]:
    """One llama-bench -v run (-r 1): its measurements and its stderr lines."""
    cmd = [str(exe), "-m", str(model), "-p", str(p), "-n", str(n), "-t", str(t),
           "-r", "1", "-o", "json", "-v"]
    stdout, err = timed_run(cmd, env, timeout)
    res: dict = {"pp": None, "tg": None, "mib_up": 0.0, "buffers": {}}
    for row in parse_json(stdout, "llama-bench"):
        kind = "pp" if row.get("n_gen", 0) == 0 else "tg" if row.get("n_prompt", 0) == 0 else None
        if kind:
            res[kind] = float(row["avg_ts"])
        if row.get("build_commit") not in (None, "unknown"):  # the sdist has no git history
            res["commit"] = f"{row['build_commit']} (build {row.get('build_number', '?')}) "
        res["backend"] = row.get("backends") or row.get("backend")
        res["gpu_info"] = row.get("gpu_info")
    loaded = False
    for at, line in err:
        m = LLAMA_DEVICE_BUFFER.search(line)
        if m:
            loaded = True
            res["buffers"][m[1]] = float(m[2])
            if not on_host(m[1]):
                res["mib_up"] += float(m[2])
        elif loaded and line.startswith("llama_context:") and "load_s" not in res:
            res["load_s"] = at
    if all(on_host(b) for b in res["buffers"]):
        raise cl.BenchError("llama-bench placed no weights on a Vulkan device: "
                            + ", ".join(res["buffers"]) + " (GGML_VK_VISIBLE_DEVICES?)")
    return res, [line for _, line in err]


# --- the report ---

def median(xs: list) -> float | None:
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a and b else None


def vulkan_driver(env: dict) -> str:
    """lavapipe's name and Mesa version, as vulkaninfo reports them."""
    if shutil.which("vulkaninfo") is None:
        return "?"
    r = subprocess.run(["vulkaninfo", "--summary"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                       text=True, env=env)
    fields = dict(re.findall(r"^\s*(deviceName|driverInfo|apiVersion)\s*=\s*(.+)$", r.stdout, re.M))
    return (f"{fields.get('deviceName', '?')}, {fields.get('driverInfo', '?')}, "
            f"Vulkan {fields.get('apiVersion', '?')}")


def vt_version() -> str:
    r = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return r.stdout.strip() or "?"


def print_table(row: dict, p: int, n: int, vt_device: str) -> None:
    print(f"### {row['model']}\n\n`{row['file']}`, -t {row['threads']}, "
          f"{len(row['rounds'])} repetitions, medians\n")
    cols = ["load s", "MiB to device"] + ([f"pp{p} t/s"] if p else []) + ([f"tg{n} t/s"] if n else [])
    keys = ["load_s", "mib_up"] + (["pp"] if p else []) + (["tg"] if n else [])
    print("| engine | " + " | ".join(cols) + " |")
    print("|---|" + "---:|" * len(cols))
    med = {e: row.get(e + "_median", {}) for e in ENGINES}
    both = len(row["engines"]) == 2
    for e in row["engines"]:
        name = f"vt ({vt_device})" if e == "vt" else "llama.cpp (Vulkan0)"
        if row["errors"].get(e):
            print(f"| {name} | " + " | ".join(["ERR"] * len(cols)) + " |")
            continue
        print(f"| {name} | " + " | ".join(cl.fmt(med[e].get(k)) for k in keys) + " |")
    if both:
        print("| vt / llama.cpp | " + " | ".join(cl.fmt(ratio(med["vt"].get(k), med["llama.cpp"].get(k)))
                                                 for k in keys) + " |")
        paired = [median([ratio(r["vt"].get(k), r["llama.cpp"].get(k)) for r in row["rounds"]])
                  for k in keys]
        print("| paired ratio | " + " | ".join(cl.fmt(x) for x in paired) + " |")
    notes = []
    if med["vt"].get("upload_s") is not None:
        notes.append(f"vt's own upload time (\"uploaded in\"): {cl.fmt(med['vt']['upload_s'])} s, "
                     f"layers on the device {row['rounds'][0]['vt'].get('layers')}")
    elif not row["errors"].get("vt") and "vt" in row["engines"]:
        notes.append(f"vt on {vt_device} printed no upload line: no load time or bytes "
                     "(the weights stay on the host)")
    bufs = next((r["llama.cpp"].get("buffers") for r in row["rounds"] if r["llama.cpp"].get("buffers")), None)
    if bufs:
        notes.append("llama.cpp model buffers: " + ", ".join(f"{k} {v:.2f} MiB" for k, v in bufs.items()))
    for e in row["engines"]:
        for k in ("pp", "tg"):
            xs = [r[e][k] for r in row["rounds"] if r[e].get(k)]
            if len(xs) > 1 and max(xs) - min(xs) > 0.15 * statistics.median(xs):
                notes.append(f"{e} {k} samples spread over 15% of their median (a busy machine?): "
                             + ", ".join(f"{x:.2f}" for x in xs))
    for w in row["vt_warnings"]:
        notes.append(f"vt-bench stderr: `{w}`")
    for e in ENGINES:
        if row["errors"].get(e):
            notes.append(f"{e} error: {row['errors'][e]}")
    if notes:
        print()
    for x in notes:
        print(f"- {x}")
    print()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", action="append", help="GGUF path (repeatable; replaces the defaults)")
    ap.add_argument("--shapes", default="smollm2-135m", help="random shapes (comma-separated)")
    ap.add_argument("--types", default="Q4_1,Q8_0", help="random types (comma-separated; empty: none)")
    ap.add_argument("--real", action="store_true", help="also the vt_models --model-name file")
    ap.add_argument("--model-name", default="smollm2", help="vt_models name for --real")
    ap.add_argument("-p", "--n-prompt", type=int, default=64)
    ap.add_argument("-n", "--n-gen", type=int, default=16)
    ap.add_argument("-r", "--repetitions", type=int, default=3)
    ap.add_argument("-t", "--threads", type=int, default=os.cpu_count() or 1,
                    help="both engines' -t (default: all cores; lavapipe sizes its own pool)")
    ap.add_argument("--vt-device", default="vulkan0", help="vt-bench --device (cpu: test vt's half "
                    "without the Vulkan module)")
    ap.add_argument("--vt-bench", help="vt-bench binary (default: build/examples/bench/vt-bench)")
    ap.add_argument("--llama-bench", help="use this llama-bench (a Vulkan build) instead of building one")
    ap.add_argument("--icd", default=LVP_ICD, help="VK_DRIVER_FILES for both engines (default lavapipe)")
    ap.add_argument("--cache-dir", default=str(Path.home() / ".cache" / "vt"))
    ap.add_argument("--jobs", type=int, default=2, help="build parallelism")
    ap.add_argument("--nice", type=int, default=19, help="niceness of the llama.cpp build")
    ap.add_argument("--build-only", action="store_true", help="build llama-bench (Vulkan) and exit")
    ap.add_argument("--skip-vt", action="store_true")
    ap.add_argument("--skip-llama", action="store_true")
    ap.add_argument("--timeout", type=float, default=900, help="seconds allowed per engine invocation")
    ap.add_argument("--json", action="store_true", help="also print the results as JSON")
    a = ap.parse_args()

    lb = None
    if not a.skip_llama:
        lb = Path(a.llama_bench) if a.llama_bench else ensure_llama_bench_vulkan(
            Path(a.cache_dir).expanduser(), a.jobs, a.nice)
    if a.build_only:
        print(lb)
        return 0
    if not Path(a.icd).is_file():
        sys.exit(f"{a.icd} not found (Debian: apt-get install mesa-vulkan-drivers)")
    env = dict(os.environ, VK_DRIVER_FILES=a.icd, GGML_VK_VISIBLE_DEVICES="0")
    env.pop("VK_ICD_FILENAMES", None)  # the older name; VK_DRIVER_FILES wins, but keep one story
    vt_exe = Path(a.vt_bench) if a.vt_bench else REPO / "build" / "examples" / "bench" / "vt-bench"
    if not a.skip_vt:
        if not vt_exe.is_file():
            sys.exit(f"{vt_exe} not found: meson compile -C build, or --vt-bench, or --skip-vt")
        r = subprocess.run([str(vt_exe), "--list-devices"], stdout=subprocess.PIPE, text=True, env=env)
        names = [line.split()[0] for line in r.stdout.splitlines() if line.strip()]
        if a.vt_device not in names:
            sys.exit(f"vt-bench has no device {a.vt_device} (it lists: {', '.join(names) or 'none'}): "
                     "build vt with its Vulkan module, or --vt-device cpu to test vt's half")

    models: list[tuple[str, Path]] = [(Path(m).name, Path(m)) for m in a.model or []]
    if not a.model:
        types = [t for t in a.types.split(",") if t]
        if types:
            models += cl.random_models([s for s in a.shapes.split(",") if s], types)
        if a.real:
            path = cl.vt_models.model_path(a.model_name)
            models.append((f"{a.model_name} ({path.name})", path))
    if not models:
        sys.exit("no models (--types is empty and no --real or -m)")

    engines = [e for e in ENGINES
               if not (e == "vt" and a.skip_vt) and not (e == "llama.cpp" and a.skip_llama)]
    load_before, t_start, started = cl.loadavg(), time.monotonic(), time.strftime("%Y-%m-%d %H:%M %Z")
    rows = []
    for label, path in models:
        row = {"model": label, "file": str(path), "threads": a.threads, "engines": engines,
               "rounds": [], "errors": {}, "vt_warnings": []}
        for _ in range(a.repetitions):
            rnd = {"vt": {}, "llama.cpp": {}}
            for e in engines:
                if row["errors"].get(e):
                    continue
                try:
                    if e == "vt":
                        rnd[e], err = vt_once(vt_exe, path, a.vt_device, a.n_prompt, a.n_gen, a.threads,
                                              env, a.timeout)
                        for line in err:
                            if re.search(r"warn|fallback|not supported|unsupported", line, re.I) \
                                    and line not in row["vt_warnings"]:
                                row["vt_warnings"].append(line)
                    else:
                        rnd[e], _ = llama_once(lb, path, a.n_prompt, a.n_gen, a.threads, env, a.timeout)
                except cl.BenchError as ex:
                    row["errors"][e] = str(ex)
                    log(f"error: {e} on {path}: {ex}")
            row["rounds"].append(rnd)
        for e in engines:
            row[e + "_median"] = {k: median([r[e].get(k) for r in row["rounds"]])
                                  for k in ("load_s", "mib_up", "upload_s", "pp", "tg")}
        rows.append(row)
    env_prefix = f"VK_DRIVER_FILES={a.icd} GGML_VK_VISIBLE_DEVICES=0"
    commands = {e: f"{env_prefix} {vt_exe} -m MODEL --device {a.vt_device} -p {a.n_prompt} -n {a.n_gen} "
                   f"-t {a.threads} -r 1 --json" if e == "vt" else
                   f"{env_prefix} {lb} -m MODEL -p {a.n_prompt} -n {a.n_gen} -t {a.threads} -r 1 -o json -v"
                for e in engines}
    elapsed = time.monotonic() - t_start

    def first(key: str):  # a llama-bench fact, from its first run that had it
        return next((r["llama.cpp"][key] for row in rows for r in row["rounds"] if r["llama.cpp"].get(key)),
                    None)

    print(f"vt vs llama.cpp, both on Vulkan: median of {a.repetitions} repetitions, each its own "
          f"invocation, the engines alternating; ratio = vt / llama.cpp of the medians, "
          f"paired = median of the per-round ratios; load s = process start to \"model loaded\" "
          f"(see the script's docstring); MiB to device = weights moved to the device at load\n")
    print(f"- driver: {vulkan_driver(env)}; VK_DRIVER_FILES={a.icd}, GGML_VK_VISIBLE_DEVICES=0"
          + (f", LP_NUM_THREADS={env['LP_NUM_THREADS']}" if env.get("LP_NUM_THREADS") else ""))
    print(f"- vt {vt_version()} ({vt_exe}); llama.cpp {first('commit') or ''}from llama-cpp-python "
          f"{cl.LLAMA_CPP_PYTHON_VERSION}'s sdist ({lb}), backend {first('backend') or '?'} on "
          f"{first('gpu_info') or '?'}")
    for e in engines:
        print(f"- {e}: `{commands[e]}`")
    print(f"- load average before {load_before}, after {cl.loadavg()} ({os.cpu_count()} cores); "
          f"started {started}, {elapsed / 60:.1f} min\n")
    for row in rows:
        print_table(row, a.n_prompt, a.n_gen, a.vt_device)
    if a.json:
        print(json.dumps({"n_prompt": a.n_prompt, "n_gen": a.n_gen, "repetitions": a.repetitions,
                          "threads": a.threads, "vt_device": a.vt_device, "icd": a.icd,
                          "commands": commands, "statistic": "median", "rows": rows}))
    return 1 if any(row["errors"] for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
