#!/usr/bin/env python3
"""Multi-turn chat through vt-server: time to first token per turn with the
prefix cache on and off.

A chat client sends the whole conversation again at every turn: turn k's
prompt is turn k-1's prompt, the answer it got and a new user message. With
the prefix cache, the server finds turn k-1's prompt (up to its last full KV
block, and for a hybrid model up to the last recurrent-state snapshot, which
is the prompt's last full block) and computes only the rest; without it,
every turn computes its whole prompt. This script measures what that saves
in time to first token (TTFT), turn by turn.

For each mode (default: "cache", then "nocache"), vt-server is started on a
free port of 127.0.0.1 (its own process group; stopped at the end of the
mode), waited for on /health and warmed up with one short chat request of
another conversation. Then --conversations conversations of --turns turns
each are sent one request at a time, streaming /v1/chat/completions with
temperature 0, max_tokens --max-tokens and ignore_eos (so every answer has
that many tokens). The first mode's answers go into the history; the later
modes replay those recorded answers, so every mode sends byte for byte the
same prompts. Conversation c starts with its own number, so conversations
share no prefix beyond a few tokens (and the warmup none).

Per turn the table gives the prompt tokens (the server's usage.prompt_tokens),
TTFT in each mode (request sent -> first non-empty content delta; median over
the conversations), the speedup nocache / cache, and from GET /metrics, read
before and after every request, the cache mode's prefix-cache hit tokens
(vt_prefix_cache_hits_total) and computed prompt tokens
(vt_prompt_tokens_total) for that turn (medians). A server that does not
export these metrics gets "-".

The model's chat template is used when it has one and --chat-template is not
given; the random-weight files of make-random-gguf.py have none, so by
default the script passes a plain ChatML template (--chat-template builtin),
whose <|im_start|>/<|im_end|> markers such a vocabulary tokenizes as text.
With random weights the answers are random tokens whose text may tokenize
into more tokens when the next turn sends it back; the prompt column shows
the real counts.

Requests are bounded: (--turns x --conversations + 1) per mode, 4-6 turns
expected. Standard library only.

Usage (from the repository root, after `meson compile -C build`):
    python3 examples/bench/chat-turns-bench.py -m ~/.cache/vt/models/random/qwen35-2b-Q4_K.gguf
    python3 examples/bench/chat-turns-bench.py -m model.gguf --turns 6 --conversations 2 -t 2 --json
    python3 examples/bench/chat-turns-bench.py -m model.gguf --modes cache      # one mode only
"""
from __future__ import annotations

import argparse
import http.client
import importlib.util
import json
import statistics
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"

CHATML = ("{%- for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] "
          "+ '<|im_end|>\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
          "{%- endif %}")

# Text the messages are cut from (written for this script).
PASSAGE = (
    "The survey ship reached the outer islands in late spring, when the fog lifted for a few hours each "
    "morning and the crew could see the cliffs they had come to map. The captain kept a careful log: the "
    "depth at every mooring, the set of the current, the colour of the water over the sandbanks. Two "
    "naturalists came ashore every day with boxes for samples and notebooks for the birds, and in the "
    "evenings they argued over whether the grey petrels on the northern rocks were the same species as "
    "those seen on the mainland. The engineer repaired the winch for the third time and declared that it "
    "would outlast the ship. On the twelfth day a storm came in from the west and the ship sheltered in a "
    "narrow bay, where the crew found the ruins of a stone hut, a rusted kettle and a child's wooden boat. "
    "Nobody on the islands remembered who had lived there. The cook made soup from the last of the onions "
    "and the youngest sailor played the accordion badly until the captain asked him to stop. When the "
    "weather cleared they charted the bay, named it after the kettle and sailed on towards the southern "
    "reefs, where the old charts showed a channel that might no longer exist."
).split()


def log(msg: str) -> None:
    print(f"chat-turns-bench: {msg}", file=sys.stderr, flush=True)


def words(start: int, n: int) -> str:
    return " ".join(PASSAGE[(start + i) % len(PASSAGE)] for i in range(n))


def conversation_messages(conv: int, turns: int, first_words: int, message_words: int) -> tuple[str, list[str]]:
    """The system message and the user message of every turn of conversation `conv`."""
    system = f"Conversation {conv}. You are a ship's log assistant. Background: " + words(conv * 41, first_words)
    users = [f"Question {t + 1}: " + words(conv * 41 + 97 * (t + 1), message_words) + " What happened next?"
             for t in range(turns)]
    return system, users


def _serve_bench():
    """serve-bench.py as a module (dashes in its name): its Server (own
    session, log file, /health wait, stop) and free_port, as soak.py uses them."""
    spec = importlib.util.spec_from_file_location("serve_bench", Path(__file__).resolve().parent / "serve-bench.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


sb = _serve_bench()


def metrics(port: int) -> dict[str, float]:
    """GET /metrics: {name: value} of the unlabelled samples (empty when unreachable)."""
    out: dict[str, float] = {}
    try:
        with urllib.request.urlopen(f"http://{HOST}:{port}/metrics", timeout=10) as r:
            text = r.read().decode(errors="replace")
    except (urllib.error.URLError, OSError):
        return out
    for line in text.splitlines():
        if not line or line.startswith("#") or "{" in line:
            continue
        parts = line.split()
        if len(parts) >= 2:
            try:
                out[parts[0]] = float(parts[1])
            except ValueError:
                pass
    return out


def chat(port: int, messages: list[dict], max_tokens: int, timeout: float) -> dict:
    """One streamed chat completion: {ttft, total, text, prompt_tokens, completion_tokens}. Raises on errors."""
    body = {"messages": messages, "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True,
            "stream": True, "stream_options": {"include_usage": True}}
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    t0 = time.perf_counter()
    res = {"ttft": None, "text": "", "prompt_tokens": None, "completion_tokens": None}
    try:
        conn.request("POST", "/v1/chat/completions", body=json.dumps(body).encode(),
                     headers={"Content-Type": "application/json", "Accept": "text/event-stream"})
        resp = conn.getresponse()
        if resp.status != 200:
            raise RuntimeError(f"HTTP {resp.status}: {resp.read(500).decode(errors='replace')}")
        while True:
            line = resp.readline()
            if not line:
                break
            line = line.strip()
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                break
            obj = json.loads(data)
            if "error" in obj:
                raise RuntimeError(f"server error: {json.dumps(obj['error'])[:300]}")
            if isinstance(obj.get("usage"), dict):
                res["prompt_tokens"] = obj["usage"].get("prompt_tokens")
                res["completion_tokens"] = obj["usage"].get("completion_tokens")
            for choice in obj.get("choices") or []:
                content = (choice.get("delta") or {}).get("content")
                if content:
                    if res["ttft"] is None:
                        res["ttft"] = time.perf_counter() - t0
                    res["text"] += content
    finally:
        conn.close()
    res["total"] = time.perf_counter() - t0
    if res["ttft"] is None:
        raise RuntimeError("the stream ended without any content")
    return res


def run_mode(a, mode: str, template_path: Path | None, answers: dict, log_dir: Path) -> list[list[dict]]:
    """One server, every conversation; returns [conversation][turn] records. In
    the first mode, answers (conv, turn) -> text is filled; later modes replay it."""
    port = sb.free_port()
    cmd = [str(a.vt_server), "-m", str(a.model), "-t", str(a.threads), "--host", HOST, "--port", str(port),
           "--max-num-seqs", str(a.max_num_seqs), "--max-model-len", str(a.max_model_len)]
    if template_path:
        cmd += ["--chat-template", str(template_path)]
    if mode == "nocache":
        cmd += ["--no-prefix-caching"]
    cmd += a.vt_arg
    srv = sb.Server(f"vt-server-{mode}", cmd, port, log_dir)
    records: list[list[dict]] = []
    try:
        srv.start()
        srv.wait_healthy(a.start_timeout)
        chat(port, [{"role": "system", "content": "Warmup."}, {"role": "user", "content": "Say something."}],
             4, a.timeout)
        for conv in range(a.conversations):
            system, users = conversation_messages(conv, a.turns, a.first_words, a.message_words)
            history = [{"role": "system", "content": system}]
            turns: list[dict] = []
            for t, user in enumerate(users):
                history.append({"role": "user", "content": user})
                before = metrics(port)
                r = chat(port, history, a.max_tokens, a.timeout)
                after = metrics(port)

                def delta(name: str):
                    return after[name] - before[name] if name in after and name in before else None
                rec = {"turn": t + 1, "ttft": r["ttft"], "total": r["total"], "prompt_tokens": r["prompt_tokens"],
                       "completion_tokens": r["completion_tokens"],
                       "hit_tokens": delta("vt_prefix_cache_hits_total"),
                       "query_tokens": delta("vt_prefix_cache_queries_total"),
                       "computed_tokens": delta("vt_prompt_tokens_total")}
                turns.append(rec)
                log(f"{mode} conversation {conv} turn {t + 1}: {r['prompt_tokens']} prompt tokens, "
                    f"TTFT {r['ttft'] * 1000:.0f} ms, hits {rec['hit_tokens']}, computed {rec['computed_tokens']}")
                if (conv, t) not in answers:
                    answers[(conv, t)] = r["text"]
                history.append({"role": "assistant", "content": answers[(conv, t)]})
            records.append(turns)
    except Exception:
        log(f"vt-server ({mode}) log tail:\n{srv.log_tail()}")
        raise
    finally:
        srv.stop()
    return records


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("-m", "--model", required=True, help="GGUF file (or model folder) for vt-server")
    ap.add_argument("--vt-server", default=str(REPO / "build" / "examples" / "server" / "vt-server"))
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--turns", type=int, default=5, help="turns per conversation (4-6 expected)")
    ap.add_argument("--conversations", type=int, default=1, help="conversations per mode (medians over them)")
    ap.add_argument("--max-tokens", type=int, default=16, help="answer length in tokens")
    ap.add_argument("--first-words", type=int, default=60, help="words of the system message's background")
    ap.add_argument("--message-words", type=int, default=24, help="words of each user message")
    ap.add_argument("--modes", default="cache,nocache",
                    help="comma-separated, in order: cache (prefix caching on, the server's default), "
                         "nocache (--no-prefix-caching); the first one's answers are replayed by the others")
    ap.add_argument("--chat-template", default="builtin",
                    help="'builtin' (a plain ChatML template, the default), 'model' (the model's own), or a "
                         "Jinja file passed to vt-server --chat-template")
    ap.add_argument("--max-num-seqs", type=int, default=4)
    ap.add_argument("--max-model-len", type=int, default=8192)
    ap.add_argument("--vt-arg", action="append", default=[], help="extra vt-server flag (repeatable)")
    ap.add_argument("--start-timeout", type=float, default=300, help="seconds to wait for /health")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per request")
    ap.add_argument("--json", action="store_true", help="also print the records as JSON")
    a = ap.parse_args()
    modes = [m for m in a.modes.split(",") if m]
    if not modes or any(m not in ("cache", "nocache") for m in modes):
        sys.exit(f"bad --modes {a.modes!r}")
    if not (1 <= a.turns <= 16 and 1 <= a.conversations <= 8 and a.max_tokens >= 1):
        sys.exit("--turns must be 1..16, --conversations 1..8, --max-tokens >= 1")
    if not Path(a.vt_server).is_file():
        sys.exit(f"{a.vt_server} is missing: build vt first (meson compile -C build)")

    load_before = sb.loadavg()
    t0 = time.monotonic()
    answers: dict = {}
    results: dict[str, list[list[dict]]] = {}
    with tempfile.TemporaryDirectory(prefix="chat-turns-bench-") as tmp:
        tmpdir = Path(tmp)
        template = None
        if a.chat_template == "builtin":
            template = tmpdir / "chatml.jinja"
            template.write_text(CHATML)
        elif a.chat_template != "model":
            template = Path(a.chat_template)
        for mode in modes:
            try:
                results[mode] = run_mode(a, mode, template, answers, tmpdir)
            except (RuntimeError, OSError, ValueError) as e:
                sys.exit(f"chat-turns-bench: {mode}: {e}")
    elapsed = time.monotonic() - t0

    print(f"{Path(a.model).name}, vt-server -t {a.threads}, {a.conversations} conversation(s) x {a.turns} turns, "
          f"answers of {a.max_tokens} tokens; TTFT medians over the conversations; load average before "
          f"{load_before}, after {sb.loadavg()}; {elapsed / 60:.1f} min")
    print()
    hdr = ["turn", "prompt tok"] + [f"TTFT {m} ms" for m in modes]
    both = "cache" in modes and "nocache" in modes
    if both:
        hdr.append("nocache / cache")
    if "cache" in modes:
        hdr += ["hit tok", "computed tok"]
    print("| " + " | ".join(hdr) + " |")
    print("|" + "|".join(["---:"] * len(hdr)) + "|")
    first = results[modes[0]]
    for t in range(a.turns):
        cells = [str(t + 1), fmt(med([c[t]["prompt_tokens"] for c in first]), ".0f")]
        ttft = {m: med([c[t]["ttft"] for c in results[m]]) for m in modes}
        cells += [fmt(None if ttft[m] is None else ttft[m] * 1000, ".0f") for m in modes]
        if both:
            cells.append(fmt(ttft["nocache"] / ttft["cache"] if ttft["cache"] else None, ".2f") + "x")
        if "cache" in modes:
            cells += [fmt(med([c[t]["hit_tokens"] for c in results["cache"]]), ".0f"),
                      fmt(med([c[t]["computed_tokens"] for c in results["cache"]]), ".0f")]
        print("| " + " | ".join(cells) + " |")
    if both:
        later = range(1, a.turns)
        tot = {m: sum(med([c[t]["ttft"] for c in results[m]]) or 0 for t in later) for m in modes}
        if tot["cache"]:
            print(f"\nturns 2-{a.turns}: TTFT summed {tot['nocache']:.2f} s without the prefix cache, "
                  f"{tot['cache']:.2f} s with it ({tot['nocache'] / tot['cache']:.2f}x)")
    if a.json:
        print(json.dumps({"model": str(a.model), "threads": a.threads, "turns": a.turns,
                          "conversations": a.conversations, "max_tokens": a.max_tokens,
                          "loadavg_before": load_before, "results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
