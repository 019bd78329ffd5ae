#!/usr/bin/env python3
"""Side-by-side prefill/decode throughput: vt-bench vs llama.cpp's llama-bench.

Same machine, same run, same GGUF file, same thread count and repetitions
(DESIGN.md, "Performance method"). For every (model, threads) it runs both
engines (pp512 and tg128 by default, 5 repetitions each) and reports the
MEDIAN tokens/s of the repetitions (llama-bench's per-repetition "samples_ts",
vt-bench's pp_samples/tg_samples), the ratio vt / llama.cpp, and, for
decode, the memory-bandwidth roofline (below). Each repetition is its own
invocation of the engine, after its own warmup, and the engines alternate
(vt, llama.cpp, vt, ...), so that a change in the machine's speed during a
row (the VM's bandwidth switches, below) falls on both alike;
--no-interleave runs each engine's repetitions in one invocation instead.
Beside the ratio of the medians, the table gives "paired": the median of the
ratios of each round's two runs, made a minute apart. Where the machine
switches state within a row, the two can differ, and paired is the one that
compares runs made in the same state.

    roofline t/s = read bandwidth (vt-membw, same thread count, the best of
                   the readings taken just before and just after that row's
                   runs; each reading the better of a plain and a software-
                   prefetching reader) / weight bytes read per token

The bandwidth is read next to each row, not once per run, because a VM's
bandwidth can change within a run: on the 2-vCPU VM this was developed on,
2 threads read either about 30 GB/s (the same as 1 thread: the two vCPUs
then seem to share one host core) or about 59 GB/s, switching over minutes.
A roofline read in the other state than its row's runs would say over 100%
or far too little.

Weight bytes per token = the sum of the GGUF's tensor sizes, which is what a
decode step streams from memory: every matrix is read once per token, the
tied token embedding included (it is the output matrix). When the file has a
separate output.weight, token_embd.weight is left out (decode reads one row of
it). In a mixture-of-experts file (<arch>.expert_used_count), a token reads
only the experts its router picks: of each per-expert tensor (a name with
"_exps." whose last dimension is <arch>.expert_count: the stacked matrices
blk.N.ffn_{gate,up,down,gate_up}_exps.weight, in any type, MXFP4 included
at 17 bytes per 32 weights; gpt-oss's expert biases ffn_*_exps.bias
(n_ff, n_expert); Gemma 4's per-expert scale ffn_down_exps.scale) it counts
n_expert_used / n_expert of the bytes, every other tensor whole (Gemma 4's
dense MLP beside the experts, the routers, gpt-oss's sinks). Gemma 4's
per-layer embedding table (per_layer_token_embd.weight, E2B/E4B) is, like
token_embd, a lookup of one row per token: left out.
The KV cache (a few MB at these contexts) is not counted, except with -d D
(both engines' --n-depth: the tests run on a context already D tokens deep),
where the f16 K and V of the decode steps' average context, D + n/2
positions, are added (in a hybrid file, only its attention layers have K
and V); a sliding-window layer reads at most its window of them
(<arch>.attention.sliding_window; which layers slide:
<arch>.attention.sliding_window_pattern, an array of bools (Gemma 4) or a
period P as llama.cpp reads it (layer il slides where il % P < P - 1),
else llama.cpp's default period for the arch: gpt-oss and Gemma 2 every
other layer from the first, Gemma 3 five of six, Cohere 2 and Muse Glimmer
three of four; another arch's layers count as full). Gemma 4's K = V
layers (no attn_v) still cache K and V apart (V is normed, K normed and
rotated), so they count as the others. In a hybrid with recurrent layers (the file has <arch>.ssm.* keys:
Gated DeltaNet in Qwen3.5, Qwen3.6-MoE, Qwen3-Next; Mamba-2 in NemotronH,
Granite 4.0-H, Falcon-H1), a decode step also reads and writes each
recurrent layer's per-sequence state, which is added:

    state bytes per token = sum over the recurrent layers (those with
                            blk.N.ssm_conv1d.weight) of
                            2 x (nv x dk x dv x 4      the f32 state, read
                                                       and written
                                 + (K - 1) x C x 4)    the conv tail, the last
                                                       K - 1 inputs of its C
                                                       channels, read and written

with nv = ssm.time_step_rank, dk = ssm.state_size, dv = ssm.inner_size / nv
and (K, C) ssm_conv1d's shape. In Gated DeltaNet that is the delta-rule
state, nv value heads of dk x dv (Qwen3.5-2B's shape: 18 layers x 2 x (1 MiB
+ 72 KiB) = 40.4 MB a token, 4% of its Q4_K weights); in Mamba-2 the same
keys give H x N x P (time_step_rank = H heads, state_size = N, inner_size =
H x P), the SSM state, with C = H x P + 2 G N (NemotronH-30B-A3B: 2 x (2 MiB
+ 72 KiB) = 4.3 MB per Mamba layer). LFM2's gated short conv (no ssm keys)
has only its conv tail: 2 x (L - 1) x n_embd x 4 per layer with
blk.N.shortconv.conv.weight (L, n_embd) (LFM2-2.6B: 22 x 32 KiB = 0.7 MB).
"vt %" and "llama %" are each engine's median tg as a percentage of that
roofline.

For files whose layer matrices are F16, prefill is bound by compute, not
memory: F16 is multiplied as f32 (Zen 4 and most Intel cores have no f16
arithmetic), so the script also prints

    F16 prefill roofline t/s = f32 FMA peak (vt-flops, same thread count)
                               / flops per prompt token

with flops per prompt token = 2 x (the layer matrices' elements + the output
matrix's / n_prompt (only the last token's logits) + causal attention's
multiply-adds), and each engine's pp as a percentage of it.

Models: by default the real default model (vt_models "smollm2",
SmolLM2-135M-Instruct Q4_1). --matrix adds the random-weight files of
make-random-gguf.py (smollm2-135m and llama-3.2-1b shapes x Q4_0 Q4_1 Q8_0
Q4_K Q6_K F16 BF16), written on first use into <model cache>/random/.
--moe adds its mixture-of-experts files (qwen3moe-a3b and olmoe-1b-7b shapes x
Q4_K Q8_0, 3.3-3.8 GB at Q8_0; --no-real leaves out the real model here too).
--hybrid adds its Gated DeltaNet hybrid files (qwen35-2b: Qwen3.5-2B, all 24
layers; qwen35moe-a3b: 3 of Qwen3.6-35B-A3B's layers; x Q4_K Q8_0, 1.1-3.8
GB), whose roofline counts the recurrent state (above). --mamba adds the
Mamba-2 hybrids and LFM2 (nemotronh-30b-a3b: 5 of Nemotron-3-Nano-30B-A3B's
layers; granite4-h-tiny: 10 of Granite-4.0-H-Tiny's; lfm2-2.6b: all of
LFM2-2.6B; x Q4_K Q8_0, 1.0-3.6 GB; examples/bench/ssm_shapes.py says what
each assumes), their roofline counting the SSM state and conv tails.
--swa-moe adds the sliding-window MoE files of issue 42 (gptoss-20b: 4 of
gpt-oss-20b's layers, MXFP4 experts, the other matrices BF16 or Q8_0;
gemma4-26b-a4b: 4 of Gemma-4-26B-A4B's, Q4_K and Q8_0; 2.4-4.3 GB;
examples/bench/swa_moe_shapes.py says what each assumes).

llama-bench is built from the llama.cpp that llama-cpp-python's sdist vendors
(pinned version below), outside the repository, and reused once built:
    source: ~/.cache/vt/llama.cpp-src   (pip download --no-deps --no-binary :all:)
    build:  ~/.cache/vt/llama.cpp-build-noamx (cmake, GGML_NATIVE=ON without AMX, Release)

--isa avx2 compares both engines as on a CPU without AVX-512 (most client
x86 CPUs): vt-bench runs with VT_CPU_ISA=avx2, llama-bench is a second build
(~/.cache/vt/llama.cpp-build-avx2) with GGML_NATIVE=OFF and AVX, AVX2, FMA,
F16C and BMI2 on, AVX-512 off.

Usage (from the repository root; vt-bench, vt-membw and vt-flops from a meson build):
    python3 examples/bench/compare-llama-bench.py                  # smollm2, all cores
    python3 examples/bench/compare-llama-bench.py --matrix --threads 1,2 --json
    python3 examples/bench/compare-llama-bench.py --matrix --shapes smollm2-135m --types Q4_0,Q8_0
    python3 examples/bench/compare-llama-bench.py --moe --no-real -t 2 -r 3
    python3 examples/bench/compare-llama-bench.py --hybrid --no-real -t 2 -r 3
    python3 examples/bench/compare-llama-bench.py --mamba --no-real -t 2 -r 3
    python3 examples/bench/compare-llama-bench.py --swa-moe --no-real -t 2 -r 3
    python3 examples/bench/compare-llama-bench.py -t 2 -r 3 --bin-dir build-lead/examples/bench
    python3 examples/bench/compare-llama-bench.py --build-only --jobs 1
    python3 examples/bench/compare-llama-bench.py --matrix --isa avx2 -t 2
    python3 examples/bench/compare-llama-bench.py -t 2 -p 512 -n 128 -d 4096  # long context
    python3 examples/bench/compare-llama-bench.py --skip-vt         # llama.cpp numbers only

The load average is printed before and after the run, and for each row (the
table's "load": the 1-minute load before and after its runs): on a busy
machine (load near or above the core count) multi-threaded numbers,
llama.cpp's especially (its OpenMP threads spin; see --omp-passive), are not
meaningful.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tarfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "examples" / "models"))
import vt_models  # noqa: E402

LLAMA_CPP_PYTHON_VERSION = "0.3.36"
# --moe: make-random-gguf.py's mixture-of-experts shapes and the types they are measured in
MOE_SHAPES = "qwen3moe-a3b,olmoe-1b-7b"
MOE_TYPES = "Q4_K,Q8_0"
# --hybrid: make-random-gguf.py's Gated DeltaNet hybrid shapes (Qwen3.5-2B, Qwen3.6-35B-A3B's layer)
HYBRID_SHAPES = "qwen35-2b,qwen35moe-a3b"
HYBRID_TYPES = "Q4_K,Q8_0"
# --mamba: its Mamba-2 hybrids (Nemotron-3-Nano-30B-A3B's layers, Granite-4.0-H-Tiny's) and LFM2-2.6B
MAMBA_SHAPES = "nemotronh-30b-a3b,granite4-h-tiny,lfm2-2.6b"
MAMBA_TYPES = "Q4_K,Q8_0"
# --swa-moe: gpt-oss-20b's and Gemma-4-26B-A4B's layers (issue 42), each in its own types
# (examples/bench/swa_moe_shapes.py's TYPES)
SWA_MOE_FILES = (("gptoss-20b", "BF16,Q8_0"), ("gemma4-26b-a4b", "Q4_K,Q8_0"))
# llama.cpp's sliding-window period for archs whose files may omit
# <arch>.attention.sliding_window_pattern (load_swa_pattern's default)
SWA_PERIOD = {"gpt-oss": 2, "gemma2": 2, "gemma3": 6, "cohere2": 4, "muse-glimmer": 4}


def log(msg: str) -> None:
    print(f"compare-llama-bench: {msg}", file=sys.stderr, flush=True)


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    log("$ " + " ".join(str(c) for c in cmd))
    return subprocess.run(cmd, **kw)


# llama.cpp's CPU feature flags per --isa (with GGML_NATIVE=OFF).
# Native without AMX: on CPUs with AMX (Sapphire Rapids VMs), llama-bench of
# this llama.cpp dies with SIGILL in ggml's AMX mul_mat (tilezero on worker
# threads that never asked for the tile state); vt has no AMX kernels either.
NO_AMX = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
LLAMA_ISA_FLAGS = {
    "native": ["-DGGML_NATIVE=ON", f"-DCMAKE_C_FLAGS={NO_AMX}", f"-DCMAKE_CXX_FLAGS={NO_AMX}"],
    "avx2": ["-DGGML_NATIVE=OFF", "-DGGML_AVX=ON", "-DGGML_AVX2=ON", "-DGGML_FMA=ON",
             "-DGGML_F16C=ON", "-DGGML_BMI2=ON", "-DGGML_AVX512=OFF"],
}


def ensure_llama_bench(cache: Path, jobs: int, nice: int, isa: str = "native",
                       target: str = "llama-bench") -> Path:
    """The llama.cpp tool `target` (llama-bench, llama-batched-bench), built once."""
    src_root = cache / "llama.cpp-src"
    build = cache / ("llama.cpp-build-noamx" if isa == "native" else f"llama.cpp-build-{isa}")
    exe = build / "bin" / target
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
           *LLAMA_ISA_FLAGS[isa], "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF",
           "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_SERVER=OFF"]
    if run(nice_cmd + cfg).returncode != 0:
        sys.exit("cmake configure of llama.cpp failed")
    if run(nice_cmd + ["cmake", "--build", str(build), "--target", target,
                       "-j", str(jobs)]).returncode != 0:
        sys.exit(f"building {target} failed")
    if not exe.is_file():
        sys.exit(f"built, but {exe} is missing")
    return exe


class BenchError(RuntimeError):
    pass


def tests_of(p: int, n: int) -> list[str]:
    return ([f"pp{p}"] if p > 0 else []) + ([f"tg{n}"] if n > 0 else [])


def run_llama_bench(exe: Path, model: Path, p: int, n: int, t: int, r: int,
                    omp_passive: bool = False, timeout: float | None = None, depth: int = 0) -> dict:
    cmd = [str(exe), "-m", str(model), "-p", str(p), "-n", str(n), "-t", str(t),
           "-r", str(r), "-o", "json"] + (["-d", str(depth)] if depth else [])
    env = dict(os.environ)
    if omp_passive:
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    try:
        res = run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                  timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BenchError(f"llama-bench timed out after {timeout} s") from None
    if res.returncode != 0:
        raise BenchError(f"llama-bench failed (rc {res.returncode}): {res.stderr.strip()[-1500:]}")
    try:
        rows = json.loads(res.stdout)
    except json.JSONDecodeError:
        raise BenchError(f"llama-bench printed no JSON: {res.stdout[-1000:]}") from None
    out: dict = {}
    for row in rows:
        if row.get("n_prompt", 0) > 0 and row.get("n_gen", 0) == 0:
            test = f"pp{row['n_prompt']}"
        elif row.get("n_gen", 0) > 0 and row.get("n_prompt", 0) == 0:
            test = f"tg{row['n_gen']}"
        else:
            continue
        samples = [float(x) for x in row.get("samples_ts", [])] or [float(row["avg_ts"])]
        out[test] = {"median": statistics.median(samples), "mean": float(row["avg_ts"]),
                     "stddev": float(row.get("stddev_ts", 0.0)), "samples": samples}
        if "build_commit" in row:
            out["_commit"] = row["build_commit"]
    return out


def run_vt_bench(exe: Path, model: Path, p: int, n: int, t: int, r: int,
                 timeout: float | None = None, isa: str = "native", depth: int = 0) -> dict:
    cmd = [str(exe), "-m", str(model), "-p", str(p), "-n", str(n), "-t", str(t),
           "-r", str(r), "--json"] + (["-d", str(depth)] if depth else [])
    env = dict(os.environ)
    if isa != "native":
        env["VT_CPU_ISA"] = isa
    try:
        res = run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout,
                  env=env)
    except subprocess.TimeoutExpired:
        raise BenchError(f"vt-bench timed out after {timeout} s") from None
    if res.returncode != 0:
        raise BenchError(f"vt-bench failed (rc {res.returncode}): {res.stderr.strip()[-1500:]}")
    try:
        obj = json.loads(res.stdout)
    except json.JSONDecodeError:
        raise BenchError(f"vt-bench --json printed no JSON: {res.stdout[-1000:]}") from None
    if isinstance(obj, list):  # tolerate a list of one object
        obj = obj[0] if obj else {}
    out: dict = {}
    for kind, test in (("pp", f"pp{p}"), ("tg", f"tg{n}")):
        if obj.get(f"{kind}_tps") is None:
            continue
        samples = [float(x) for x in obj.get(f"{kind}_samples") or []] or [float(obj[f"{kind}_tps"])]
        out[test] = {"median": statistics.median(samples), "mean": float(obj[f"{kind}_tps"]),
                     "stddev": float(obj.get(f"{kind}_stddev") or 0.0), "samples": samples}
    if obj.get("threads") not in (None, t):
        log(f"warning: vt-bench reports threads={obj.get('threads')}, asked for {t}")
    return out


def run_membw(exe: Path, t: int, mib: int, reps: int = 5) -> dict:
    res = run([str(exe), "-t", str(t), "-s", str(mib), "-r", str(reps), "--json"],
              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if res.returncode != 0:
        sys.exit(f"vt-membw failed (rc {res.returncode}): {res.stderr[-2000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def run_flops(exe: Path, t: int, isa: str) -> dict | None:
    """vt-flops' f32 FMA peak for t threads (None, with a note, where it is
    absent or cannot measure this CPU)."""
    if not exe.is_file():
        log(f"{exe} not found: no F16 prefill roofline")
        return None
    env = dict(os.environ)
    if isa != "native":
        env["VT_CPU_ISA"] = isa
    res = run([str(exe), "-t", str(t), "-r", "3", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
              text=True, env=env)
    if res.returncode != 0:
        log(f"vt-flops: {res.stderr.strip()}: no F16 prefill roofline")
        return None
    return json.loads(res.stdout.strip().splitlines()[-1])


# --- GGUF tensor sizes (a minimal reader: header, metadata but arrays, tensor infos) ---

# ggml type id -> (block elements, block bytes)
GGML_TYPE_SIZE = {
    0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34),
    9: (32, 36), 10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176),
    14: (256, 210), 15: (256, 292), 16: (256, 66), 17: (256, 74), 18: (256, 98),
    19: (256, 50), 20: (32, 18), 21: (256, 110), 22: (256, 82), 23: (256, 136),
    24: (1, 1), 25: (1, 2), 26: (1, 4), 27: (1, 8), 28: (1, 8), 29: (256, 56), 30: (1, 2),
    34: (256, 54), 35: (256, 66), 39: (32, 17), 40: (64, 36), 41: (128, 18), 42: (64, 18),
}


def gguf_tensors(path: Path) -> tuple[dict, list[tuple[str, int, int, tuple[int, ...]]]]:
    """The metadata's numbers, strings and short arrays of numbers ({key:
    value}, up to 4096 elements, as lists: per-layer keys; longer arrays and
    arrays of strings skipped) and (name, ggml type, bytes, shape) of every
    tensor in a GGUF file."""
    scalar = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    scalar_fmt = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
    with open(path, "rb") as f:
        def rd(fmt: str):
            return struct.unpack("<" + fmt, f.read(struct.calcsize("<" + fmt)))

        def rd_str() -> bytes:
            (n,) = rd("Q")
            return f.read(n)

        def skip(vtype: int) -> None:
            if vtype in scalar:
                f.seek(scalar[vtype], 1)
            elif vtype == 8:
                rd_str()
            elif vtype == 9:
                atype, n = rd("IQ")
                if atype in scalar:
                    f.seek(scalar[atype] * n, 1)
                else:
                    for _ in range(n):
                        skip(atype)
            else:
                raise ValueError(f"{path}: unknown GGUF value type {vtype}")

        magic, version, n_tensors, n_kv = rd("4sIQQ")
        if magic != b"GGUF" or version < 2:
            raise ValueError(f"{path} is not a GGUF v2+ file")
        kv = {}
        for _ in range(n_kv):
            key = rd_str().decode()
            (vtype,) = rd("I")
            if vtype in scalar_fmt:
                (kv[key],) = rd(scalar_fmt[vtype])
            elif vtype == 8:
                kv[key] = rd_str().decode(errors="replace")
            elif vtype == 9:
                atype, n = rd("IQ")
                if atype in scalar_fmt and n <= 4096:
                    kv[key] = list(rd(scalar_fmt[atype] * n))
                else:
                    f.seek(-12, 1)  # back to the array's header
                    skip(vtype)
            else:
                skip(vtype)
        out = []
        for _ in range(n_tensors):
            name = rd_str().decode()
            (n_dims,) = rd("I")
            ne = rd("Q" * n_dims)
            ttype, _offset = rd("IQ")
            if ttype not in GGML_TYPE_SIZE:
                raise ValueError(f"{path}: tensor {name} has a ggml type {ttype} this script does not know")
            be, bb = GGML_TYPE_SIZE[ttype]
            n_el = 1
            for d in ne:
                n_el *= d
            out.append((name, ttype, n_el // be * bb, tuple(ne)))
        return kv, out


def n_expert_used(kv: dict) -> int:
    """<arch>.expert_used_count of a mixture-of-experts file, else 0. kv: gguf_tensors()'s."""
    return int(kv.get(f"{kv.get('general.architecture', '')}.expert_used_count", 0) or 0)


def n_expert(kv: dict) -> int:
    """<arch>.expert_count of a mixture-of-experts file, else 0. kv: gguf_tensors()'s."""
    return int(kv.get(f"{kv.get('general.architecture', '')}.expert_count", 0) or 0)


def swa_window(kv: dict) -> tuple[int, list[bool]]:
    """(sliding window, which layers slide) of a file with
    <arch>.attention.sliding_window, else (0, []): the layers from
    <arch>.attention.sliding_window_pattern (bools, or a period P: layer il
    slides where il % P < P - 1, every layer where P = 0, as llama.cpp's
    set_swa_pattern), else from llama.cpp's default period for the arch
    (SWA_PERIOD); none for an arch it does not list. kv: gguf_tensors()'s."""
    arch = kv.get("general.architecture", "")
    n_swa = int(kv.get(f"{arch}.attention.sliding_window", 0) or 0)
    n_layer = int(kv.get(f"{arch}.block_count", 0) or 0)
    if not n_swa or not n_layer:
        return 0, []
    pattern = kv.get(f"{arch}.attention.sliding_window_pattern", SWA_PERIOD.get(arch))
    if pattern is None:
        return n_swa, [False] * n_layer
    if isinstance(pattern, list):
        return n_swa, [bool(x) for x in pattern[:n_layer]]
    period = int(pattern)  # 0: every layer slides, as in llama.cpp
    return n_swa, [period == 0 or il % period < period - 1 for il in range(n_layer)]


def recurrent_state_bytes_per_token(kv: dict, ts: list) -> int:
    """Bytes of recurrent state one decode step of one sequence reads and
    writes (0 for a file without recurrent layers): per recurrent layer of a
    Gated DeltaNet or Mamba-2 hybrid (<arch>.ssm.* keys; a layer that has
    blk.N.ssm_conv1d.weight, ne (K, C)), the f32 state nv x dk x dv (nv =
    ssm.time_step_rank, dk = ssm.state_size, dv = ssm.inner_size / nv:
    Mamba-2's H x N x P) read and written, and the conv tail, the last K - 1
    of the C conv channels' inputs (f32), read and written; per LFM2 short
    conv layer (blk.N.shortconv.conv.weight, ne (L, n_embd)) its conv tail
    alone. kv, ts: gguf_tensors()'s."""
    arch = kv.get("general.architecture", "")
    nv, dk, inner = (int(kv.get(f"{arch}.ssm.{k}", 0) or 0) for k in ("time_step_rank", "state_size", "inner_size"))
    state = nv * dk * (inner // nv) * 4 if nv and dk and inner else 0
    total = 0
    for name, _, _, ne in ts:
        if len(ne) != 2:
            continue
        if name.endswith(".ssm_conv1d.weight") and state:
            total += 2 * (state + (ne[0] - 1) * ne[1] * 4)
        elif name.endswith(".shortconv.conv.weight"):
            total += 2 * (ne[0] - 1) * ne[1] * 4
    return total


def decode_bytes_per_token(ts: list, kv_tokens: float = 0, n_used: int = 0, state_bytes: int = 0,
                           n_exp: int = 0, swa: tuple[int, list[bool]] = (0, [])) -> int:
    """Bytes one decode step reads: all tensors, token_embd.weight only when it
    doubles as the output matrix (no output.weight), per_layer_token_embd
    never (a lookup); of the per-expert tensors (a name with "_exps." whose
    last dimension is n_exp, the file's expert count: stacked matrices,
    gpt-oss's expert biases, Gemma 4's per-expert scale; without n_exp, the
    3-D ones) n_used / n_expert where n_used (the file's experts per token)
    is given; plus, with kv_tokens (the average context of the decode steps;
    left out at depth 0), the f16 K and V of that many positions in every
    layer that has attn_k (a hybrid's attention layers only), of at most
    swa[0] positions in a layer swa[1] marks sliding (swa_window()); plus
    state_bytes (a hybrid's recurrent state, recurrent_state_bytes_per_token()).
    ts: gguf_tensors()'s tensors."""
    names = {t[0] for t in ts}

    def share(name: str, ne: tuple) -> float:
        if not n_used or "_exps." not in name:
            return 1.0
        if n_exp:
            return n_used / n_exp if ne[-1] == n_exp else 1.0
        return n_used / ne[-1] if len(ne) == 3 else 1.0
    weights = sum(b * share(name, ne) for name, _, b, ne in ts
                  if not (name == "token_embd.weight" and "output.weight" in names)
                  and name != "per_layer_token_embd.weight")
    n_swa, sliding = swa
    kv_bytes = 0.0
    for name, _, _, ne in ts:
        if name.endswith(".attn_k.weight") and len(ne) == 2:
            il = int(name.split(".")[1])
            slides = n_swa and il < len(sliding) and sliding[il]
            kv_bytes += 2 * 2 * ne[1] * (min(kv_tokens, n_swa) if slides else kv_tokens)
    return int(weights + kv_bytes + state_bytes)


GGML_F16 = 1


def f16_prefill_flops_per_token(ts: list, n_prompt: int, depth: int = 0) -> float | None:
    """Flops per prompt token of a file whose layer matrices are F16, else
    None: 2 x (the layers' matrix elements, the output matrix's / n_prompt
    (only the last token's logits are computed) and causal attention's
    multiply-adds, q_dim x (2 depth + n_prompt + 1) per layer for scores and
    values). ts: gguf_tensors()."""
    names = {t[0] for t in ts}
    out_name = "output.weight" if "output.weight" in names else "token_embd.weight"
    macs = 0.0
    for name, ttype, _, ne in ts:
        if name.startswith("blk.") and len(ne) == 2 and ne[1] > 1:
            if ttype != GGML_F16:
                return None
            macs += ne[0] * ne[1]
            if name.endswith(".attn_q.weight"):
                macs += ne[1] * (2 * depth + n_prompt + 1)
        elif name == out_name:
            macs += ne[0] * ne[1] / n_prompt
    return 2 * macs if macs else None


# --- models ---

def gguf_python() -> str:
    """An interpreter that has the PyPI gguf package (this one or the project venv)."""
    try:
        import gguf  # noqa: F401
        return sys.executable
    except ImportError:
        venv = REPO / ".venv" / "bin" / "python"
        if venv.is_file():
            return str(venv)
        sys.exit("make-random-gguf.py needs the PyPI gguf package: pip install gguf "
                 "(or create the project venv .venv)")


def random_models(shapes: list[str], types: list[str]) -> list[tuple[str, Path]]:
    cmd = [gguf_python(), str(REPO / "examples" / "bench" / "make-random-gguf.py")]
    for s in shapes:
        cmd += ["--shape", s]
    for t in types:
        cmd += ["--type", t]
    res = run(cmd, stdout=subprocess.PIPE, text=True)
    if res.returncode != 0:
        sys.exit("make-random-gguf.py failed")
    paths = [Path(line) for line in res.stdout.split("\n") if line.strip()]
    labels = [f"random {s} {t}" for s in shapes for t in types]
    if len(paths) != len(labels):
        sys.exit(f"make-random-gguf.py printed {len(paths)} paths for {len(labels)} files")
    return list(zip(labels, paths))


def loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def fmt(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", action="append",
                    help="GGUF path (repeatable; default: the --model-name from vt_models)")
    ap.add_argument("--model-name", default="smollm2", help="vt_models name (default smollm2)")
    ap.add_argument("--matrix", action="store_true",
                    help="also every random shape x type from make-random-gguf.py")
    ap.add_argument("--shapes", default="smollm2-135m,llama-3.2-1b",
                    help="random shapes for --matrix (comma-separated; also qwen3-0.6b, qwen2.5-1.5b)")
    ap.add_argument("--types", default="Q4_0,Q4_1,Q8_0,Q4_K,Q6_K,F16,BF16",
                    help="random types for --matrix (comma-separated)")
    ap.add_argument("--moe", action="store_true",
                    help="also the random mixture-of-experts files (shapes " + MOE_SHAPES + " x " + MOE_TYPES + ")")
    ap.add_argument("--hybrid", action="store_true",
                    help="also the random Gated DeltaNet hybrid files (shapes " + HYBRID_SHAPES + " x " + HYBRID_TYPES
                         + "); their decode roofline counts the recurrent state read and written")
    ap.add_argument("--mamba", action="store_true",
                    help="also the random Mamba-2 hybrid and LFM2 files (shapes " + MAMBA_SHAPES + " x " + MAMBA_TYPES
                         + "); their decode roofline counts the SSM state and conv tails read and written")
    ap.add_argument("--swa-moe", action="store_true",
                    help="also the random sliding-window MoE files of issue 42 ("
                         + "; ".join(f"{sh} x {ty}" for sh, ty in SWA_MOE_FILES)
                         + "): gpt-oss-20b's layers with MXFP4 experts, Gemma-4-26B-A4B's")
    ap.add_argument("--no-real", action="store_true",
                    help="with --matrix, --moe, --hybrid, --mamba or --swa-moe: leave out the real model")
    ap.add_argument("-t", "--threads", default=str(os.cpu_count() or 1),
                    help="thread counts, comma-separated, e.g. 1,2 (default: all cores)")
    ap.add_argument("-r", "--repetitions", type=int, default=5)
    ap.add_argument("--no-interleave", action="store_true",
                    help="run each engine's repetitions in one invocation, not alternating")
    ap.add_argument("-p", "--n-prompt", type=int, default=512)
    ap.add_argument("-n", "--n-gen", type=int, default=128)
    ap.add_argument("-d", "--n-depth", type=int, default=0,
                    help="tokens already in the context before each test (both engines' -d); the decode "
                         "roofline then counts the KV cache read per token")
    ap.add_argument("--bin-dir", help="directory holding vt-bench, vt-membw and vt-flops "
                    "(default: build/examples/bench)")
    ap.add_argument("--vt-bench", help="vt-bench binary (default: BIN_DIR/vt-bench)")
    ap.add_argument("--vt-membw", help="vt-membw binary (default: BIN_DIR/vt-membw)")
    ap.add_argument("--membw-mib", type=int, default=1024, help="vt-membw buffer size (MiB)")
    ap.add_argument("--llama-bench", help="use this llama-bench instead of building one")
    ap.add_argument("--cache-dir", default=str(Path.home() / ".cache" / "vt"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="build parallelism")
    ap.add_argument("--nice", type=int, default=10, help="niceness of the llama.cpp build")
    ap.add_argument("--build-only", action="store_true", help="build llama-bench and exit")
    ap.add_argument("--skip-vt", action="store_true", help="run llama-bench only")
    ap.add_argument("--skip-llama", action="store_true", help="run vt-bench only")
    ap.add_argument("--timeout", type=float, default=None,
                    help="seconds allowed per engine invocation (default: no limit)")
    ap.add_argument("--isa", choices=sorted(LLAMA_ISA_FLAGS), default="native",
                    help="avx2: both engines as on a CPU without AVX-512 (VT_CPU_ISA=avx2 and "
                         "a llama.cpp built for AVX2)")
    ap.add_argument("--json", action="store_true", help="also print the results as JSON")
    ap.add_argument("--omp-passive", action="store_true",
                    help="run llama-bench with OMP_WAIT_POLICY=PASSIVE (its OpenMP threads "
                         "spin by default, which collapses on an oversubscribed machine)")
    a = ap.parse_args()

    lb = None
    if not a.skip_llama:
        lb = Path(a.llama_bench) if a.llama_bench else ensure_llama_bench(
            Path(a.cache_dir).expanduser(), a.jobs, a.nice, a.isa)
    if a.build_only:
        print(lb)
        return 0
    threads = [int(x) for x in str(a.threads).split(",") if x.strip()]
    if not threads or min(threads) < 1:
        sys.exit(f"bad --threads {a.threads!r}")
    bin_dir = Path(a.bin_dir) if a.bin_dir else REPO / "build" / "examples" / "bench"
    vt_exe = Path(a.vt_bench) if a.vt_bench else bin_dir / "vt-bench"
    membw_exe = Path(a.vt_membw) if a.vt_membw else vt_exe.parent / "vt-membw"
    flops_exe = vt_exe.parent / "vt-flops"
    if not a.skip_vt and not vt_exe.is_file():
        sys.exit(f"{vt_exe} not found: build vt (meson compile -C build) or pass --bin-dir/--vt-bench, "
                 "or --skip-vt")
    if not membw_exe.is_file():
        sys.exit(f"{membw_exe} not found: meson compile -C build vt-membw, or pass --vt-membw")

    models: list[tuple[str, Path]] = []
    if a.model:
        models += [(Path(m).name, Path(m)) for m in a.model]
    elif not ((a.matrix or a.moe or a.hybrid or a.mamba or a.swa_moe) and a.no_real):
        path = vt_models.model_path(a.model_name)
        models.append((f"{a.model_name} ({path.name})", path))
    if a.matrix:
        models += random_models([s for s in a.shapes.split(",") if s],
                                [t for t in a.types.split(",") if t])
    if a.moe:
        models += random_models(MOE_SHAPES.split(","), MOE_TYPES.split(","))
    if a.hybrid:
        models += random_models(HYBRID_SHAPES.split(","), HYBRID_TYPES.split(","))
    if a.mamba:
        models += random_models(MAMBA_SHAPES.split(","), MAMBA_TYPES.split(","))
    if a.swa_moe:
        for shape, types in SWA_MOE_FILES:
            models += random_models([shape], types.split(","))

    tests = tests_of(a.n_prompt, a.n_gen)
    tg = f"tg{a.n_gen}" if a.n_gen > 0 else None
    load_before = loadavg()
    t_start = time.monotonic()
    # One reading per thread count between rows (see the top); row i uses the
    # best of the readings before and after it.
    readings = {t: [run_membw(membw_exe, t, a.membw_mib, reps=3)] for t in threads}
    peaks = {t: run_flops(flops_exe, t, a.isa) for t in threads} if a.n_prompt > 0 else {}
    rows = []
    errors = []
    commit = None
    for label, path in models:
        kv, tensors = gguf_tensors(path)
        n_used = n_expert_used(kv)
        sbt = recurrent_state_bytes_per_token(kv, tensors)
        bpt = decode_bytes_per_token(tensors, a.n_depth + a.n_gen / 2 if a.n_depth else 0, n_used, sbt,
                                     n_expert(kv), swa_window(kv))
        fpt = f16_prefill_flops_per_token(tensors, a.n_prompt, a.n_depth) if peaks else None
        for t in threads:
            row = {"model": label, "file": str(path), "threads": t, "bytes_per_token": bpt,
                   "state_bytes_per_token": sbt, "n_expert_used": n_used, "loadavg": [os.getloadavg()[0]],
                   "vt": {}, "llama.cpp": {}}
            engines = [e for e in ("vt", "llama.cpp")
                       if not (e == "vt" and a.skip_vt) and not (e == "llama.cpp" and a.skip_llama)]
            rounds, per_call = (1, a.repetitions) if a.no_interleave else (a.repetitions, 1)
            for _ in range(rounds):
                for engine in engines:
                    if "error" in row[engine]:
                        continue
                    try:
                        if engine == "vt":
                            res = run_vt_bench(vt_exe, path, a.n_prompt, a.n_gen, t, per_call,
                                               timeout=a.timeout, isa=a.isa, depth=a.n_depth)
                        else:
                            res = run_llama_bench(lb, path, a.n_prompt, a.n_gen, t, per_call,
                                                  omp_passive=a.omp_passive, timeout=a.timeout,
                                                  depth=a.n_depth)
                            commit = res.pop("_commit", commit)
                        for test, v in res.items():
                            row[engine].setdefault(test, {"samples": []})["samples"] += v["samples"]
                    except BenchError as e:
                        row[engine] = {"error": str(e)}
                        errors.append(f"{engine} on {path} (-t {t}): {e}")
                        log(f"error: {engine} on {path}: {e}")
            for engine in engines:
                for v in (row[engine].values() if "error" not in row[engine] else []):
                    v["median"] = statistics.median(v["samples"])
                    v["mean"] = statistics.fmean(v["samples"])
                    v["stddev"] = statistics.stdev(v["samples"]) if len(v["samples"]) > 1 else 0.0
            for test in tests:
                v = row["vt"].get(test, {}).get("median")
                l = row["llama.cpp"].get(test, {}).get("median")
                row[test + "_ratio"] = v / l if v and l else None
                # Interleaved, sample i of each engine comes from round i: the
                # median of the per-round ratios compares runs made a minute
                # apart, in the same state of the machine where it switches.
                vs = row["vt"].get(test, {}).get("samples", [])
                ls = row["llama.cpp"].get(test, {}).get("samples", [])
                paired = not a.no_interleave and vs and len(vs) == len(ls) and min(ls) > 0
                row[test + "_paired_ratio"] = statistics.median(x / y for x, y in zip(vs, ls)) if paired else None
            readings[t].append(run_membw(membw_exe, t, a.membw_mib, reps=3))
            row["membw_gbs"] = max(r["best_gbs"] for r in readings[t][-2:])
            row["roofline_tps"] = row["membw_gbs"] * 1e9 / bpt
            if fpt and peaks.get(t):
                row["prefill_flops_per_token"] = fpt
                row["prefill_roofline_tps"] = peaks[t]["best_gflops"] * 1e9 / fpt
            row["loadavg"].append(os.getloadavg()[0])
            rows.append(row)
    load_after = loadavg()
    elapsed = time.monotonic() - t_start

    # --- report ---
    ncpu = os.cpu_count() or 1
    print(f"vt vs llama.cpp{' ' + commit if commit else ''}: median tokens/s of {a.repetitions} "
          f"repetitions{'' if a.no_interleave else ' (one per invocation, the engines alternating)'}; "
          f"ratio = vt / llama.cpp of the medians; paired = median of the per-round ratios"
          + (" (llama-bench with OMP_WAIT_POLICY=PASSIVE)" if a.omp_passive else "")
          + (f"; both engines limited to {a.isa} (VT_CPU_ISA, llama.cpp build flags)"
             if a.isa != "native" else ""))
    print(f"read bandwidth (vt-membw, {a.membw_mib} MiB, best of 3 per reading, read between rows): "
          + "; ".join(f"{t} thread{'s' if t > 1 else ''} "
                      f"{min(r['best_gbs'] for r in readings[t]):.1f}-"
                      f"{max(r['best_gbs'] for r in readings[t]):.1f} GB/s" for t in threads))
    print(f"load average before {load_before}, after {load_after} ({ncpu} cores; \"load\": a row's "
          f"1-minute load before-after its runs); "
          f"{elapsed / 60:.1f} min")
    if tg:
        print(f"roofline = bandwidth next to the row (GB/s) / "
              f"{'weight + KV cache' if a.n_depth else 'weight'} MB per token; "
              f"vt %, llama % = median {tg} / roofline")
        if any(row["n_expert_used"] for row in rows):
            print("mixture-of-experts rows: MB per token counts of each *_exps tensor only the "
                  "n_expert_used / n_expert share one token reads")
        hybrid = {row["model"]: row["state_bytes_per_token"] for row in rows if row["state_bytes_per_token"]}
        if hybrid:
            print("hybrid rows: MB per token includes the recurrent state a token reads and writes (f32 "
                  "state and conv tail of every recurrent layer): "
                  + "; ".join(f"{m} {b / 1e6:.1f} MB" for m, b in hybrid.items()))
    print()
    hdr = ["model", "t", "load"]
    for test in tests:
        at = f" @ d{a.n_depth}" if a.n_depth else ""  # llama-bench's label
        hdr += [f"vt {test}{at}", f"llama {test}{at}", "ratio", "paired"]
    if tg:
        hdr += ["MB/tok", "GB/s", "roofline", "vt %", "llama %"]
    print("| " + " | ".join(hdr) + " |")
    print("|" + "|".join(["---"] + ["---:"] * (len(hdr) - 1)) + "|")
    noisy = []
    for row in rows:
        cells = [row["model"], str(row["threads"]), "-".join(f"{x:.1f}" for x in row["loadavg"])]
        for test in tests:
            for engine in ("vt", "llama.cpp"):
                r = row[engine]
                if "error" in r:
                    cells.append("ERR")
                    continue
                m = r.get(test, {}).get("median")
                cells.append(fmt(m))
                s = r.get(test, {}).get("samples", [])
                if m and len(s) > 1 and (max(s) - min(s)) > 0.15 * m:
                    noisy.append(f"{engine} {test} {row['model']} -t {row['threads']}")
            cells += [fmt(row[test + "_ratio"]), fmt(row[test + "_paired_ratio"])]
        if tg:
            cells += [f"{row['bytes_per_token'] / 1e6:.0f}", fmt(row["membw_gbs"], 1), fmt(row["roofline_tps"], 1)]
            for engine in ("vt", "llama.cpp"):
                m = row[engine].get(tg, {}).get("median") if "error" not in row[engine] else None
                cells.append(f"{100 * m / row['roofline_tps']:.0f}%" if m else "-")
        print("| " + " | ".join(cells) + " |")
    f16_rows = [row for row in rows if "prefill_roofline_tps" in row]
    if f16_rows:
        pp = f"pp{a.n_prompt}"
        at = f" @ d{a.n_depth}" if a.n_depth else ""
        print(f"\nF16 {pp}{at} against the f32 FMA peak (vt-flops; F16 weights are multiplied as f32 "
              f"on these CPUs): roofline = peak / flops per prompt token")
        for row in f16_rows:
            t = row["threads"]
            shares = []
            for engine in ("vt", "llama.cpp"):
                m = row[engine].get(pp, {}).get("median") if "error" not in row[engine] else None
                shares.append(f"{engine} {100 * m / row['prefill_roofline_tps']:.0f}%" if m else f"{engine} -")
            print(f"- {row['model']} -t {t}: {peaks[t]['best_gflops']:.0f} GFLOP/s ({peaks[t]['isa']}) / "
                  f"{row['prefill_flops_per_token'] / 1e9:.2f} GFLOP = {row['prefill_roofline_tps']:.1f} tok/s; "
                  + ", ".join(shares))
    if noisy:
        print(f"\nwarning: samples spread over 15% of the median (busy machine?): {'; '.join(noisy)}")
    if errors:
        print("\nerrors:")
        for e in errors:
            print(f"- {e}")
    if a.json:
        print(json.dumps({"repetitions": a.repetitions, "n_prompt": a.n_prompt, "n_gen": a.n_gen,
                          "n_depth": a.n_depth,
                          "statistic": "median", "llama_cpp_commit": commit,
                          "omp_passive": a.omp_passive, "isa": a.isa, "interleaved": not a.no_interleave,
                          "membw": {str(t): readings[t] for t in threads},
                          "flops": {str(t): peaks.get(t) for t in threads},
                          "loadavg_before": load_before, "loadavg_after": load_after,
                          "rows": rows}))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
