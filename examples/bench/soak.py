#!/usr/bin/env python3
"""Soak test of vt-server: sustained mixed load with cancels and disconnects,
then checks that nothing leaked and that /metrics agrees with the client.

Starts vt-server (the build dir's, as serve-bench.py finds it) on a free port
of 127.0.0.1 and runs --concurrency (32) closed-loop workers for --duration
(600 s). Each request draws, from a seeded RNG:
  API         /v1/chat/completions or /v1/completions (half each)
  mode        streaming (60%, with stream_options.include_usage) or not
  client      the official openai client or raw http.client (half each)
  action      normal (~75%); cancel (12%: a stream closed after 1-8 chunks,
              a non-streamed request given up after 0.3-4 s); disconnect (8%,
              raw socket closed with RST: halfway through sending the body,
              0-3 s after sending, or after the first streamed bytes); invalid
              (5%, a body vt-server must refuse with 400)
  prompt      85%: one of 6 shared system prompts/prefixes (20-500 words) plus
              a body of 1-750 words (log-uniform), so prompts run from a few
              dozen to ~1,500 tokens and share KV blocks through the prefix
              cache; 15%: a few words and no shared prefix
  max_tokens  1-48 (70%), 49-128 (25%) or 129-256 (5%); ignore_eos on a third;
              temperature 0 or 0.8
  lora        --lora-share (10%): "model" is a random rank-8 PEFT adapter on
              q_proj, v_proj and down_proj that the script writes for the
              model's shapes at start (vt-server --lora soak-lora=DIR), so
              steps mix adapter and base requests
  grammar     --grammar-share (10%, independently): a response_format, any
              JSON or one of three JSON schemas
The words are serve_load.py's passage, so every run sends the same bytes for
the same --seed. The server runs with -t --threads (2), --kv-cache-memory
(512MiB: ~23k tokens of SmolLM2, room for the 32 requests, so preemption is
rare) and --grace-period; --server-arg adds flags.

Before the load, every KV block is used once (long prompts, max_tokens 1,
until the computed prompt tokens exceed the pool by 10%; --no-fill skips it):
the pool's pages come from mmap and only become resident when a block is
first written, and free blocks are handed out in FIFO order, so without the
fill RSS grows by design (up to the pool's size) for as long as it takes the
load to cycle through the pool, and the RSS check would measure that.

Outcomes of a request: ok (a complete answer, finish_reason stop/length, the
stream ended with its usage chunk and [DONE]); cancelled / disconnected (this
script left early, on purpose); rejected (the 400 an invalid body asked
for); error (a clean error: a JSON error object, as HTTP 5xx, as the body of a
200, or as an SSE event followed by [DONE]); shutdown (503 "shutting down");
refused (connection refused); aborted (finish_reason "abort", which vt-server
sends only for requests it cancels at the end of a shutdown's grace period);
failed (anything else: a transport error this script did not cause, a stream
cut without [DONE], a malformed body, an unexpected status, a timeout).

Checks (the script exits 1 when one fails, 2 on a usage/start error):
  no_failed        no request "failed"
  no_5xx           no 5xx seen by the client, none counted by the server
                   (vt_requests_total{status=~"5.."}); no "error" outcomes
  drained          within --drain-timeout of the load's end:
                   vt_num_requests_running 0, vt_num_requests_waiting 0,
                   vt_kv_blocks_used 0
  rss_flat         VmRSS (/proc/PID/status, every --rss-interval s) over the
                   last 80% of the load: max <= 1.05 * min
  status_counts    per status, vt_requests_total's increase >= the client's
                   count, and the excess summed over statuses <= the requests
                   whose status the client never saw (disconnects before the
                   response headers, openai non-streamed requests given up:
                   the server may count those as 200, or 400 for a body cut
                   halfway, or not at all)
  finished         vt_requests_finished_total's increase == the increase of
                   vt_requests_total{status="200"} (plus status 500: a
                   non-streamed generation that failed, --fail-forward;
                   every request here has
                   n=1: each 200 is one engine request, and a cancelled one
                   is finished too, with reason cancelled), and it lies in
                   [client 200s, client 200s + statuses never seen]
  gen_tokens       vt_generation_tokens_total's increase lies in
                   [sum of usage.completion_tokens of the ok requests + content
                   chunks seen by the others, that sum + max_tokens of every
                   request that was not ok]: tokens a cancelled request
                   generated after the client left are counted by the server
                   and unknown to the client
  prompt_tokens    vt_prompt_tokens_total + vt_prefix_cache_hits_total
                   (computed + found in the cache) increase by at least the
                   ok requests' usage.prompt_tokens and at most that plus an
                   upper bound of the others' prompts (their UTF-8 bytes + 256:
                   a byte-level BPE token is at least one byte); only when
                   vt_preemptions_total did not move (a preempted request
                   computes its prompt again)
  prefix_hits      vt_prefix_cache_hits_total increased (prefixes are shared)
  monotonic        no *_total counter decreased
  exact            after the drain, 8 plain requests (both APIs, streamed and
                   not, both clients) move the counters by exactly what the
                   client computes: requests_total{200} +8, finished +8,
                   generation tokens = sum completion_tokens, prompt + hits =
                   prefix-cache queries = sum prompt_tokens (no preemption),
                   TTFT histogram count +8, ITL count = sum(completion - 1)
  clean_exit       SIGTERM to the idle server: exit status 0

--sigterm-at S: SIGTERM goes to the server S seconds into the load (the
requests in flight are left to run; the workers then start no new ones, and a
probe sends one fresh request every 0.3 s). What vt-server does today
(vt-server.cpp, SignalWatcher): new requests get 503 "the server is shutting
down" (and /health 503) until nothing is in flight, then the listener closes
(connection refused); requests in flight get --grace-period seconds to end,
then the engine cancels them: a stream then ends with finish_reason "abort",
its usage and [DONE], a non-streamed answer is a 200 whose choices say
"abort"; the process exits 0. So "clean" for a request in flight at the
signal is: ok, aborted, shutdown (its handler ran after the signal), refused,
or cancelled/disconnected by this script; for requests sent after it:
shutdown or refused. Checks then: sigterm_inflight_clean, sigterm_new_clean,
sigterm_exit (status 0 within --grace-period + --exit-slack seconds),
sigterm_preparing_clean (--sigterm-race N, default 3: N fresh servers, each
SIGTERMed 50 ms after one request arrived whose preparation, a grammar
compile, takes longer, with nothing else in flight; that request must end as
ok or 503 too, and the server exit 0), plus
no_failed and no_5xx for what came before the signal (metrics, drain and RSS
checks are skipped: the server is gone; so is the KV fill). A short
--grace-period (e.g. 3 s at c=32) makes the requests in flight end "aborted";
a long one lets them finish.

--fail-forward N: the server runs with VT_DEBUG_FAIL_FORWARD=N (every N-th
forward pass of the engine fails). The requests in that pass end with a clean
error (outcome "error": HTTP 500 with a JSON error, a 200 whose body is one,
or a streamed error event and [DONE]); they are expected, not failures. The
checks become: fault_seen (at least one error: the hook is there and on),
no_failed, still_serving (ok requests ended after the first error, and after
the drain at least one of 10 small requests succeeds), drained, status_counts,
finished, gen_tokens (errored requests count as not ok), monotonic, clean_exit
(prompt_tokens and prefix_hits are skipped: a failed pass starts the prefix
cache over). no_5xx becomes: every 5xx the client saw was a clean error, and
the server counted as many 5xx as the client saw plus at most the statuses
never seen. vt-server answers a failed pass with an error object,
"generation failed: ...": as the body of a 500 when not streamed, or as an
SSE event before [DONE] (the stream's 200 went out at admission). N should leave most passes
working (at c=32 a pass holds every running request, and all of them fail
with it): 20 or more.

Usage (from the repository root; --duration 60 for a quick run):
    .venv/bin/python examples/bench/soak.py                     # 10 min, c=32
    .venv/bin/python examples/bench/soak.py --duration 90 --sigterm-at 60 --grace-period 5
    .venv/bin/python examples/bench/soak.py --duration 120 --fail-forward 50
Prints a summary, then one JSON line (the last line of stdout); --records
FILE also writes every request as a JSON line. The report carries the kernel's
listen-queue counters over the run (/proc/net/netstat: ListenOverflows,
SyncookiesFailed, ...): a "Connection reset by peer" for a request the server
never read comes with SyncookiesFailed > 0 when the listen backlog overflowed
(httplib's default of 5 did, with 32 clients starting at once).
"""
from __future__ import annotations

import argparse
import http.client
import importlib.util
import json
import math
import os
import random
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
import serve_load  # noqa: E402

HOST = "127.0.0.1"
DEFAULT_MODEL = Path("/root/.cache/vt/models/SmolLM2-135M-Instruct.Q4_1.gguf")


def log(msg: str) -> None:
    print(f"soak: {msg}", file=sys.stderr, flush=True)


def _serve_bench():
    """serve-bench.py as a module (dashes in its name): its Server (own
    session, log file, /health wait) and find_vt_server are reused here."""
    spec = importlib.util.spec_from_file_location("serve_bench", HERE / "serve-bench.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


sb = _serve_bench()

# --------------------------------------------------------------------------
# Prompts

WORDS = serve_load._PASSAGE
PREFIX_WORDS = (20, 60, 120, 240, 400, 500)


def words(start: int, n: int) -> str:
    return " ".join(WORDS[(start + i) % len(WORDS)] for i in range(n))


# Shared system prompts / completion prefixes: each starts differently, so
# they share no cache blocks with each other, only with themselves.
PREFIXES = [f"You are archivist number {k} of the harbour town. Answer from these notes. "
            + words(k * 53, n) for k, n in enumerate(PREFIX_WORDS)]


@dataclass
class Prompt:
    system: str | None  # chat: the system message; completions: the prefix
    user: str
    key: str            # identifies the text (for the summary)

    def completion_text(self) -> str:
        return (self.system + "\n\n" if self.system else "") + self.user

    def n_bytes(self) -> int:
        return len(self.completion_text().encode())


def draw_prompt(rng: random.Random) -> Prompt:
    if rng.random() < 0.15:  # a few tokens, nothing shared
        start, n = rng.randrange(len(WORDS)), rng.randint(1, 6)
        return Prompt(None, words(start, n), f"short:{start}:{n}")
    k = rng.randrange(len(PREFIXES))
    start = rng.randrange(len(WORDS))
    n = max(1, int(math.exp(rng.uniform(0.0, math.log(750)))))
    return Prompt(PREFIXES[k], "Question: what happens next? " + words(start, n),
                  f"p{k}:{start}:{n}")


def draw_max_tokens(rng: random.Random, cap: int) -> int:
    r = rng.random()
    n = rng.randint(1, 48) if r < 0.70 else rng.randint(49, 128) if r < 0.95 else rng.randint(129, 256)
    return min(n, cap)


# --------------------------------------------------------------------------
# Requests


@dataclass
class Rec:
    """One request and what came of it. Times: seconds since the load began."""
    api: str                    # "chat" | "completions"
    stream: bool
    client: str                 # "openai" | "raw"
    action: str                 # "normal" | "cancel" | "disconnect:<phase>" | "invalid" | "probe"
    max_tokens: int
    prompt_key: str
    prompt_bytes: int
    t_start: float = 0.0
    t_end: float = 0.0
    status: int | None = None   # HTTP status, when the client saw one
    outcome: str = ""
    detail: str = ""
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    chunks: int = 0             # content chunks seen (streams)
    features: str = ""          # "lora", "grammar", "lora+grammar" or "" (--lora-share, --grammar-share)


class Cancelled(Exception):
    """Raised inside a request when this script gives up on purpose."""


# Structured outputs a --grammar-share of the requests carry: any JSON, and
# a few schemas (compiled once each, then served from the grammar cache).
SCHEMAS = [
    {"type": "object", "properties": {"answer": {"type": "string"}, "confidence": {"type": "number"}},
     "required": ["answer"]},
    {"type": "object", "properties": {"items": {"type": "array", "items": {"type": "integer"}, "maxItems": 8}},
     "required": ["items"]},
    {"type": "object", "properties": {"name": {"type": "string", "maxLength": 40},
                                      "kind": {"enum": ["harbour", "ship", "town"]}},
     "required": ["name", "kind"]},
]


def response_format(rng: random.Random) -> dict:
    k = rng.randrange(len(SCHEMAS) + 1)
    if k == len(SCHEMAS):
        return {"type": "json_object"}
    return {"type": "json_schema", "json_schema": {"name": f"soak{k}", "schema": SCHEMAS[k]}}


def body_for(model: str, api: str, prompt: Prompt, max_tokens: int, stream: bool, rng: random.Random,
             grammar: bool = False) -> dict:
    body: dict = {"model": model, "max_tokens": max_tokens,
                  "temperature": rng.choice((0.0, 0.8)), "seed": rng.randrange(1 << 30)}
    if grammar:
        body["response_format"] = response_format(rng)
    if api == "chat":
        msgs = [{"role": "system", "content": prompt.system}] if prompt.system else []
        body["messages"] = msgs + [{"role": "user", "content": prompt.user}]
    else:
        body["prompt"] = prompt.completion_text()
    if rng.random() < 1 / 3:
        body["ignore_eos"] = True
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def invalid_body(model: str, api: str, rng: random.Random) -> dict:
    """A body vt-server must answer with 400."""
    kind = rng.randrange(3)
    body: dict = {"model": model, "max_tokens": 8}
    if api == "chat":
        body["messages"] = [] if kind == 0 else [{"role": "user", "content": "hi"}]
    else:
        body["prompt"] = None if kind == 0 else "hi"
    if kind == 1:
        body["temperature"] = 7.5
    elif kind == 2:
        body["top_p"] = 0
    return body


def path_of(api: str) -> str:
    return "/v1/chat/completions" if api == "chat" else "/v1/completions"


def error_of(obj) -> dict | None:
    """The error object of a JSON body / SSE event, if it is one."""
    if isinstance(obj, dict) and isinstance(obj.get("error"), dict):
        return obj["error"]
    return None


def judge_answer(rec: Rec, obj: dict) -> None:
    """A complete non-streamed answer: ok or error; else failed."""
    err = error_of(obj)
    if err is not None:
        rec.outcome, rec.detail = "error", str(err.get("message"))[:200]
        return
    try:
        ch = obj["choices"][0]
        rec.finish_reason = ch.get("finish_reason")
        u = obj["usage"]
        rec.prompt_tokens, rec.completion_tokens = int(u["prompt_tokens"]), int(u["completion_tokens"])
    except (KeyError, IndexError, TypeError, ValueError) as e:
        rec.outcome, rec.detail = "failed", f"malformed answer ({e!r}): {json.dumps(obj)[:200]}"
        return
    finish(rec)


def finish(rec: Rec) -> None:
    """Sets ok/aborted/failed from the finish reason and usage."""
    if rec.finish_reason == "abort":
        rec.outcome = "aborted"
    elif rec.finish_reason not in ("stop", "length"):
        rec.outcome, rec.detail = "failed", f"finish_reason {rec.finish_reason!r}"
    elif rec.completion_tokens is None or rec.prompt_tokens is None:
        rec.outcome, rec.detail = "failed", "no usage"
    elif not 0 < rec.completion_tokens <= rec.max_tokens or (
            rec.finish_reason == "length" and rec.completion_tokens != rec.max_tokens):
        rec.outcome, rec.detail = "failed", (f"usage.completion_tokens {rec.completion_tokens} with max_tokens "
                                             f"{rec.max_tokens}, finish_reason {rec.finish_reason}")
    else:
        rec.outcome = "ok"


def judge_status_body(rec: Rec, status: int, raw: bytes) -> None:
    """A non-200 answer: rejected (400 asked for), shutdown (503), error
    (another status with a JSON error body) or failed (no JSON error)."""
    rec.status = status
    try:
        err = error_of(json.loads(raw))
    except ValueError:
        err = None
    if err is None:
        rec.outcome, rec.detail = "failed", f"HTTP {status} without a JSON error: {raw[:200]!r}"
    elif status == 400 and rec.action == "invalid":
        rec.outcome = "rejected"
    elif status == 503 and "shutting down" in str(err.get("message", "")):
        rec.outcome = "shutdown"
    elif status >= 500:
        rec.outcome = "error"
    else:
        rec.outcome = "failed"
    rec.detail = rec.detail or f"HTTP {status}: {str(err and err.get('message'))[:200]}"


def raw_request(port: int, rec: Rec, body: dict, timeout: float, cancel_chunks: int | None,
                cancel_after: float | None) -> None:
    """POST with http.client, one connection; fills rec."""
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        try:
            conn.request("POST", path_of(rec.api), body=json.dumps(body).encode(),
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
        except ConnectionRefusedError:
            rec.outcome = "refused"
            return
        rec.status = resp.status
        if resp.status != 200:
            judge_status_body(rec, resp.status, resp.read())
            return
        if not rec.stream:
            if cancel_after is not None:
                conn.sock.settimeout(cancel_after)
            try:
                data = resp.read()
            except TimeoutError:
                raise Cancelled() from None
            try:
                obj = json.loads(data)
            except ValueError:
                rec.outcome, rec.detail = "failed", f"200 with a body that is not JSON: {data[:200]!r}"
                return
            judge_answer(rec, obj)
            return
        done = usage_seen = False
        for data in serve_load.sse_data(resp):
            if data == b"[DONE]":
                done = True
                break
            try:
                obj = json.loads(data)
            except ValueError:
                rec.outcome, rec.detail = "failed", f"bad SSE data {data[:200]!r}"
                return
            err = error_of(obj)
            if err is not None:
                rec.outcome, rec.detail = "error", str(err.get("message"))[:200]
                # The error event is followed by [DONE]: read it, or it was cut.
                rest = resp.read()
                if b"[DONE]" not in rest:
                    rec.outcome, rec.detail = "failed", "error event without [DONE] after it"
                return
            if isinstance(obj.get("usage"), dict):
                usage_seen = True
                rec.prompt_tokens = int(obj["usage"]["prompt_tokens"])
                rec.completion_tokens = int(obj["usage"]["completion_tokens"])
            for ch in obj.get("choices") or []:
                if ch.get("finish_reason"):
                    rec.finish_reason = ch["finish_reason"]
                text = ch.get("text") if rec.api == "completions" else (ch.get("delta") or {}).get("content")
                if text:
                    rec.chunks += 1
                    if cancel_chunks is not None and rec.chunks >= cancel_chunks and not rec.finish_reason:
                        raise Cancelled()
        if not done or not usage_seen:
            rec.outcome, rec.detail = "failed", (f"stream ended without {'[DONE]' if not done else 'usage'} "
                                                 f"after {rec.chunks} chunks, finish_reason {rec.finish_reason}")
            return
        finish(rec)
    except Cancelled:
        rec.outcome = "cancelled"
    except (OSError, http.client.HTTPException) as e:
        rec.outcome, rec.detail = "failed", f"{type(e).__name__}: {e}"[:300]
    finally:
        conn.close()


def openai_request(client, rec: Rec, body: dict, cancel_chunks: int | None, cancel_after: float | None) -> None:
    """The same through the official client (max_retries 0)."""
    import openai
    args = dict(body)
    # Keys the client's create() does not take (completions has no
    # response_format in OpenAI's API; vLLM and vt-server read it there).
    extra = {k: args.pop(k) for k in ("ignore_eos",) + (("response_format",) if rec.api == "completions" else ())
             if k in args}
    if extra:
        args["extra_body"] = extra
    create = client.chat.completions.create if rec.api == "chat" else client.completions.create
    if cancel_after is not None:
        args["timeout"] = cancel_after
    try:
        if not rec.stream:
            resp = create(**args)
            rec.status = 200
            judge_answer(rec, resp.model_dump(exclude_unset=True))
            return
        stream = create(**args)
        rec.status = stream.response.status_code
        usage_seen = False
        try:
            for chunk in stream:
                if chunk.usage is not None:
                    usage_seen = True
                    rec.prompt_tokens = chunk.usage.prompt_tokens
                    rec.completion_tokens = chunk.usage.completion_tokens
                for ch in chunk.choices or []:
                    if ch.finish_reason:
                        rec.finish_reason = ch.finish_reason
                    text = ch.text if rec.api == "completions" else ch.delta.content
                    if text:
                        rec.chunks += 1
                        if cancel_chunks is not None and rec.chunks >= cancel_chunks and not rec.finish_reason:
                            raise Cancelled()
        finally:
            stream.close()
        # The client stops at [DONE] and does not say whether it saw one; the
        # usage chunk is written together with [DONE] (final_text), so it
        # stands for both; a cut chunked body raises APIConnectionError.
        if not usage_seen:
            rec.outcome, rec.detail = "failed", f"stream ended without usage after {rec.chunks} chunks"
            return
        finish(rec)
    except Cancelled:
        rec.outcome = "cancelled"
    except openai.APITimeoutError:
        if cancel_after is not None:
            rec.outcome = "cancelled"
        else:
            rec.outcome, rec.detail = "failed", "timeout"
    except openai.APIStatusError as e:
        judge_status_body(rec, e.status_code, e.response.content)
    except openai.APIConnectionError as e:
        cause = e.__cause__
        while cause is not None and not isinstance(cause, ConnectionRefusedError) and cause.__cause__:
            cause = cause.__cause__
        if isinstance(cause, ConnectionRefusedError) or "Connection refused" in repr(e.__cause__):
            rec.outcome = "refused"
        else:
            rec.outcome, rec.detail = "failed", f"APIConnectionError: {e.__cause__!r}"[:300]
    except openai.APIError as e:  # an error event in the stream (the client raises it)
        rec.outcome, rec.detail = "error", f"streamed error: {e.message}"[:200]


def raw_disconnect(port: int, rec: Rec, body: dict, phase: str, rng: random.Random) -> None:
    """Sends the request on a raw socket and resets the connection (SO_LINGER
    0: close() sends RST) at `phase`: "body" halfway through the body, "wait"
    0-3 s after the request, "stream" after the first body bytes."""
    payload = json.dumps(body).encode()
    head = (f"POST {path_of(rec.api)} HTTP/1.1\r\nHost: {HOST}:{port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n").encode()
    try:
        s = socket.create_connection((HOST, port), timeout=60)
    except ConnectionRefusedError:
        rec.outcome = "refused"
        return
    except OSError as e:
        rec.outcome, rec.detail = "failed", f"connect: {e}"
        return
    got = b""
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        if phase == "body":
            s.sendall(head + payload[: len(payload) // 2])
            time.sleep(rng.uniform(0.0, 0.5))
        else:
            s.sendall(head + payload)
            if phase == "wait":
                time.sleep(rng.uniform(0.0, 3.0))
            else:  # "stream": until a few body bytes past the headers came
                want = rng.randint(1, 2000)
                while len(got) < want or b"\r\n\r\n" not in got:
                    part = s.recv(4096)
                    if not part:
                        break
                    got += part
        s.setblocking(False)
        try:
            got += s.recv(65536)
        except (BlockingIOError, InterruptedError):
            pass
    except OSError as e:
        rec.detail = f"{type(e).__name__}: {e}"[:200]
    finally:
        s.close()
    m = re.match(rb"HTTP/1\.[01] (\d{3})", got)
    if m:
        rec.status = int(m.group(1))
    rec.outcome = "disconnected"


# --------------------------------------------------------------------------
# Load


class Load:
    def __init__(self, a, port: int, model_id: str, lora_name: str | None = None):
        self.a, self.port, self.model_id, self.lora_name = a, port, model_id, lora_name
        self.records: list[Rec] = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.t0 = time.monotonic()

    def now(self) -> float:
        return time.monotonic() - self.t0

    def add(self, rec: Rec) -> None:
        with self.lock:
            self.records.append(rec)

    def one(self, rng: random.Random, client, action: str | None = None, api: str | None = None,
            stream: bool | None = None, use: str | None = None, max_tokens: int | None = None) -> Rec:
        a = self.a
        api = api or rng.choice(("chat", "completions"))
        stream = rng.random() < 0.6 if stream is None else stream
        use = use or rng.choice(("openai", "raw"))
        if action is None:
            r = rng.random()
            action = ("cancel" if r < 0.12 else
                      "disconnect:" + rng.choice(("body", "wait", "stream" if stream else "wait"))
                      if r < 0.20 else "invalid" if r < 0.25 else "normal")
        if action.startswith("disconnect") or action == "invalid":
            use = "raw"
        prompt = draw_prompt(rng)
        mt = max_tokens or draw_max_tokens(rng, a.max_tokens)
        rec = Rec(api, stream, use, action, mt, prompt.key, prompt.n_bytes())
        # Features mixed in (never into the plain requests the exact phase
        # counts: those pass max_tokens).
        lora = self.lora_name is not None and max_tokens is None and rng.random() < a.lora_share
        grammar = max_tokens is None and rng.random() < a.grammar_share
        rec.features = "+".join(f for f, on in (("lora", lora), ("grammar", grammar)) if on)
        model = self.lora_name if lora else self.model_id
        body = (invalid_body(model, api, rng) if action == "invalid"
                else body_for(model, api, prompt, mt, stream, rng, grammar))
        cancel_chunks = rng.randint(1, 8) if action == "cancel" and stream else None
        cancel_after = rng.uniform(0.3, 4.0) if action == "cancel" and not stream else None
        rec.t_start = self.now()
        if action.startswith("disconnect"):
            raw_disconnect(self.port, rec, body, action.split(":")[1], rng)
        elif use == "raw":
            raw_request(self.port, rec, body, a.request_timeout, cancel_chunks, cancel_after)
        else:
            openai_request(client, rec, body, cancel_chunks, cancel_after)
        rec.t_end = self.now()
        if not rec.outcome:
            rec.outcome, rec.detail = "failed", "no outcome (a bug of this script)"
        if rec.outcome == "failed" and a.verbose:
            log(f"failed: {rec.api} stream={rec.stream} {rec.client} {rec.action}: {rec.detail}")
        self.add(rec)
        return rec

    def worker(self, i: int) -> None:
        import openai
        rng = random.Random(self.a.seed * 1000 + i)
        client = openai.OpenAI(base_url=f"http://{HOST}:{self.port}/v1", api_key="none", max_retries=0,
                               timeout=self.a.request_timeout)
        try:
            while not self.stop.is_set():
                self.one(rng, client)
        finally:
            client.close()


TCP_EXT = ("ListenOverflows", "ListenDrops", "TCPReqQFullDoCookies", "SyncookiesFailed")


def tcp_ext() -> dict[str, int]:
    """The kernel's listen-queue counters (/proc/net/netstat, the whole
    machine's). A connection burst larger than the server's listen backlog
    overflows it; connections answered with SYN cookies then may be reset
    (SyncookiesFailed), which the client sees as "Connection reset by peer"
    for a request the server never read."""
    out: dict[str, int] = {}
    try:
        lines = Path("/proc/net/netstat").read_text().splitlines()
    except OSError:
        return out
    for head, vals in zip(lines[::2], lines[1::2]):
        out.update({k: int(v) for k, v in zip(head.split()[1:], vals.split()[1:]) if k in TCP_EXT})
    return out


def read_rss_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text -> {'name{labels}': value} (as tests/server/conftest.py)."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})?) (\S+)$", line)
        if m:
            out[m.group(1)] = float(m.group(3))
    return out


def get_metrics(port: int) -> dict[str, float]:
    conn = http.client.HTTPConnection(HOST, port, timeout=30)
    try:
        conn.request("GET", "/metrics")
        r = conn.getresponse()
        body = r.read()
        if r.status != 200:
            raise RuntimeError(f"/metrics: HTTP {r.status}")
        return parse_metrics(body.decode())
    finally:
        conn.close()


def statuses_of(m: dict[str, float]) -> dict[int, float]:
    out = {}
    for k, v in m.items():
        mm = re.match(r'^vt_requests_total\{status="(\d+)"\}$', k)
        if mm:
            out[int(mm.group(1))] = v
    return out


def delta(before: dict, after: dict, key: str) -> float:
    return after.get(key, 0.0) - before.get(key, 0.0)


def wait_idle(port: int, timeout: float) -> tuple[dict | None, float, dict]:
    """Polls /metrics until nothing runs or waits and no KV block is held,
    twice 0.5 s apart with the same counters: a handler whose client reset
    the connection may still be on its way to the engine when the first idle
    reading comes. Returns (metrics when idle or None, seconds until the
    first idle reading, last metrics)."""
    t0 = time.monotonic()
    last: dict = {}
    first: dict | None = None
    first_s = 0.0
    while True:
        try:
            last = get_metrics(port)
            idle = (last.get("vt_num_requests_running") == 0 and last.get("vt_num_requests_waiting") == 0
                    and last.get("vt_kv_blocks_used") == 0)
            if idle and first is not None and all(last.get(k) == v for k, v in first.items()
                                                  if k.endswith("_total") or "_total{" in k):
                return last, first_s, last
            if idle:
                if first is None:
                    first_s = time.monotonic() - t0
                first = last
                time.sleep(0.5)
                continue
            first = None
        except (OSError, RuntimeError, http.client.HTTPException):
            pass
        if time.monotonic() - t0 > timeout:
            return None, time.monotonic() - t0, last
        time.sleep(0.2)


class Checks:
    def __init__(self):
        self.results: dict[str, dict] = {}

    def add(self, name: str, ok: bool, detail: str) -> None:
        self.results[name] = {"ok": bool(ok), "detail": detail}
        log(f"check {name}: {'ok' if ok else 'FAILED'}: {detail}")

    @property
    def ok(self) -> bool:
        return all(r["ok"] for r in self.results.values())


# --------------------------------------------------------------------------
# The run


LORA_NAME = "soak-lora"


def write_random_lora(model: Path, out: Path, rank: int, seed: int) -> None:
    """A random PEFT adapter (rank `rank` on q_proj, v_proj and down_proj of
    every layer, alpha 2 rank) for the model's shapes, read from its GGUF
    metadata or its config.json: what --lora-share's requests ask for."""
    import numpy as np
    from safetensors.numpy import save_file
    if model.is_dir():
        cfg = json.loads((model / "config.json").read_text())
        cfg = cfg.get("text_config", cfg)
        E, L, H = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"]
        HK, F = cfg.get("num_key_value_heads", H), cfg["intermediate_size"]
        D = cfg.get("head_dim") or E // H
    else:
        import gguf
        r = gguf.GGUFReader(str(model))

        def key(name):
            f = r.fields[name]
            return f.parts[f.data[0]].tolist()[0] if f.types[0] != gguf.GGUFValueType.STRING else \
                bytes(f.parts[f.data[0]]).decode()
        arch = key("general.architecture")
        E, L, H = key(f"{arch}.embedding_length"), key(f"{arch}.block_count"), key(f"{arch}.attention.head_count")
        HK, F = key(f"{arch}.attention.head_count_kv"), key(f"{arch}.feed_forward_length")
        D = E // H
    rng = np.random.default_rng(seed)
    shapes = {"self_attn.q_proj": (E, H * D), "self_attn.v_proj": (E, HK * D), "mlp.down_proj": (F, E)}
    tensors = {}
    for il in range(L):
        for mod, (n_in, n_out) in shapes.items():
            pre = f"base_model.model.model.layers.{il}.{mod}"
            tensors[pre + ".lora_A.weight"] = (rng.standard_normal((rank, n_in)) / math.sqrt(n_in)).astype(np.float32)
            tensors[pre + ".lora_B.weight"] = (rng.standard_normal((n_out, rank)) * 0.02).astype(np.float32)
    out.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(out / "adapter_model.safetensors"))
    (out / "adapter_config.json").write_text(json.dumps({
        "peft_type": "LORA", "r": rank, "lora_alpha": 2 * rank, "lora_dropout": 0.0, "bias": "none",
        "target_modules": ["q_proj", "v_proj", "down_proj"], "use_rslora": False, "task_type": "CAUSAL_LM"}))


def start_cmd(a, port: int) -> list[str]:
    exe = sb.find_vt_server(a.vt_server)
    if exe is None or not exe.is_file():
        sys.exit("no vt-server: build it (ninja -C build examples/server/vt-server) or pass --vt-server")
    if not a.model.is_file():
        sys.exit(f"no model at {a.model} (--model)")
    cmd = [str(exe), "-m", str(a.model), "--host", HOST, "--port", str(port), "-t", str(a.threads),
           "--grace-period", str(a.grace_period)]
    if a.kv_cache_memory:
        cmd += ["--kv-cache-memory", a.kv_cache_memory]
    if a.lora_dir:
        cmd += ["--lora", f"{LORA_NAME}={a.lora_dir}"]
    if a.keep_alive_timeout:
        cmd += ["--keep-alive-timeout", str(a.keep_alive_timeout)]
    return cmd + a.server_arg


def start_server(a, port: int, logs: Path):
    cmd = start_cmd(a, port)
    env = dict(os.environ)
    if a.fail_forward:
        env["VT_DEBUG_FAIL_FORWARD"] = str(a.fail_forward)
    srv = sb.Server("vt-server", cmd, port, logs, env)
    srv.start()
    srv.wait_healthy(a.start_timeout)
    return srv


def exact_phase(load: Load, checks: Checks) -> dict:
    """8 plain requests after the drain; the counters must move by exactly
    what the client computes."""
    import openai
    port = load.port
    before = get_metrics(port)
    rng = random.Random(load.a.seed + 77)
    client = openai.OpenAI(base_url=f"http://{HOST}:{port}/v1", api_key="none", max_retries=0,
                           timeout=load.a.request_timeout)
    combos = [(api, stream, use) for api in ("chat", "completions") for stream in (True, False)
              for use in ("openai", "raw")]
    recs: list[Rec] = []
    threads = []

    def go(combo):
        api, stream, use = combo
        recs.append(load.one(random.Random(rng.random()), client, "normal", api, stream, use, max_tokens=24))

    for c in combos:
        threads.append(threading.Thread(target=go, args=(c,)))
        threads[-1].start()
    for t in threads:
        t.join()
    client.close()
    after, _, last = wait_idle(port, 60)
    after = after or last
    bad = [r for r in recs if r.outcome != "ok"]
    n = len(recs)
    gen = sum(r.completion_tokens or 0 for r in recs)
    prompt = sum(r.prompt_tokens or 0 for r in recs)
    got = {
        "requests_200": delta(before, after, 'vt_requests_total{status="200"}'),
        "requests_all": sum(statuses_of(after).values()) - sum(statuses_of(before).values()),
        "finished": delta(before, after, "vt_requests_finished_total"),
        "generation_tokens": delta(before, after, "vt_generation_tokens_total"),
        "prompt_plus_hits": delta(before, after, "vt_prompt_tokens_total")
        + delta(before, after, "vt_prefix_cache_hits_total"),
        "prefix_queries": delta(before, after, "vt_prefix_cache_queries_total"),
        "ttft_count": delta(before, after, "vt_time_to_first_token_seconds_count"),
        "itl_count": delta(before, after, "vt_inter_token_latency_seconds_count"),
        "preemptions": delta(before, after, "vt_preemptions_total"),
    }
    want = {"requests_200": n, "requests_all": n, "finished": n, "generation_tokens": gen,
            "prompt_plus_hits": prompt, "prefix_queries": prompt, "ttft_count": n,
            "itl_count": sum((r.completion_tokens or 1) - 1 for r in recs), "preemptions": 0}
    if got["preemptions"]:
        for k in ("prompt_plus_hits", "prefix_queries"):
            want.pop(k)
    diff = {k: (got[k], v) for k, v in want.items() if got[k] != v}
    checks.add("exact", not bad and not diff,
               (f"{len(bad)} of {n} requests not ok: {[r.detail for r in bad][:3]}; " if bad else "")
               + (f"counter (got, want): {diff}" if diff else f"{n} requests, counters moved exactly: {got}"))
    return {"got": got, "want": want}


def fill_kv_pool(load: Load, limit_s: float) -> dict:
    """Uses every KV block once before the measured load. The pool's pages
    come from mmap and become resident when a block is first written
    (paged-kv.cpp), and the block pool hands out free blocks in FIFO order:
    without this, RSS grows by design until the whole pool has been cycled
    through, and the RSS check would measure that. Long prompts that share
    no prefix, max_tokens 1, 8 at a time, until the computed prompt tokens
    exceed the pool's tokens by 10%."""
    m = get_metrics(load.port)
    target = 1.1 * m.get("vt_kv_blocks_total", 0) * m.get("vt_kv_block_size", 16)
    start = m.get("vt_prompt_tokens_total", 0.0)
    t0 = time.monotonic()
    done = [0.0]
    counter = iter(range(1 << 30))
    lock = threading.Lock()

    def filler(k: int) -> None:
        rng = random.Random(load.a.seed * 7919 + k)
        while done[0] < target and time.monotonic() - t0 < limit_s:
            with lock:
                i = next(counter)
            body = {"model": load.model_id, "max_tokens": 1, "temperature": 0,
                    "prompt": f"Fill {i} {rng.randrange(1 << 40):x}. " + words(rng.randrange(len(WORDS)), 700)}
            rec = Rec("completions", False, "raw", "fill", 1, f"fill:{i}", len(body["prompt"]))
            raw_request(load.port, rec, body, load.a.request_timeout, None, None)
            if rec.outcome not in ("ok", "error"):
                log(f"fill request failed: {rec.detail}")
                return
            try:
                done[0] = get_metrics(load.port).get("vt_prompt_tokens_total", 0.0) - start
            except (OSError, RuntimeError, http.client.HTTPException):
                return

    threads = [threading.Thread(target=filler, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out = {"target_tokens": target, "prompt_tokens": done[0], "seconds": time.monotonic() - t0,
           "rss_kib": None}
    log(f"KV pool filled: {done[0]:.0f} prompt tokens computed for {target:.0f} in {out['seconds']:.0f} s")
    return out


def still_serving(load: Load) -> tuple[int, int]:
    """Up to 10 small sequential requests; (ok, sent)."""
    rng = random.Random(load.a.seed + 99)
    ok = sent = 0
    for _ in range(10):
        r = load.one(rng, None, "normal", "completions", False, "raw", max_tokens=4)
        sent += 1
        ok += r.outcome == "ok"
        if ok:
            break
    return ok, sent


def probe_after_sigterm(load: Load, done: threading.Event) -> None:
    """One fresh request every 0.3 s until the server is gone."""
    rng = random.Random(load.a.seed + 5)
    # Sent a moment after the signal, so that the server has taken it.
    done.wait(0.1)
    while not done.is_set():
        load.one(rng, None, "probe", "completions", False, "raw", max_tokens=4)
        done.wait(0.3)


def summarize_records(recs: list[Rec]) -> dict:
    out = Counter(r.outcome for r in recs)
    return {
        "requests": len(recs),
        "outcomes": dict(sorted(out.items())),
        "statuses": dict(sorted(Counter(str(r.status) for r in recs).items())),
        "by_action": {k: dict(sorted(Counter(r.outcome for r in recs if r.action.split(":")[0] == k).items()))
                      for k in sorted({r.action.split(":")[0] for r in recs})},
        "by_feature": {k or "plain": dict(sorted(Counter(r.outcome for r in recs if r.features == k).items()))
                       for k in sorted({r.features for r in recs})},
        "ok_prompt_tokens_max": max((r.prompt_tokens or 0 for r in recs if r.outcome == "ok"), default=0),
        "ok_prompt_tokens_min": min((r.prompt_tokens for r in recs if r.outcome == "ok" and r.prompt_tokens),
                                    default=0),
        "ok_completion_tokens": sum(r.completion_tokens or 0 for r in recs if r.outcome == "ok"),
        "failed_examples": [f"{r.api} stream={r.stream} {r.client} {r.action} at {r.t_start:.1f}s: {r.detail}"
                            for r in recs if r.outcome == "failed"][:10],
        "error_examples": sorted({r.detail for r in recs if r.outcome == "error"})[:5],
    }


def counter_checks(a, recs: list[Rec], before: dict, after: dict, checks: Checks) -> dict:
    """The whole run's counters against the client's counts (see the module doc)."""
    cli = Counter(r.status for r in recs if r.status is not None)
    unseen = sum(1 for r in recs if r.status is None and r.outcome not in ("refused",))
    srv = {s: after_v - statuses_of(before).get(s, 0.0) for s, after_v in statuses_of(after).items()}
    per = {s: (srv.get(s, 0.0), cli.get(s, 0)) for s in sorted(set(srv) | set(cli))}
    short = {s: v for s, v in per.items() if v[0] < v[1]}
    excess = sum(v[0] - v[1] for v in per.values())
    checks.add("status_counts", not short and 0 <= excess <= unseen,
               f"server vs client by status {per}; server's excess {excess:g} (<= {unseen} statuses never seen)"
               + (f"; server short at {short}" if short else ""))

    fin = delta(before, after, "vt_requests_finished_total")
    # A non-streamed request whose generation failed (--fail-forward) ran in
    # the engine and is answered 500; every other 5xx fails no_5xx.
    s200 = srv.get(200, 0.0) + srv.get(500, 0.0)
    c200 = cli.get(200, 0) + cli.get(500, 0)
    checks.add("finished", fin == s200 and c200 <= fin <= c200 + unseen,
               f"vt_requests_finished_total +{fin:g}, vt_requests_total{{200,500}} +{s200:g}, "
               f"client 200s and 500s {c200} (+ up to {unseen} never seen)")

    ok = [r for r in recs if r.outcome == "ok"]
    # Requests that may have run in the engine without the client knowing
    # their token counts: every one that is not ok and not refused before
    # admission (4xx/503/refused never reach the engine).
    open_ = [r for r in recs if r.outcome not in ("ok", "rejected", "shutdown", "refused")
             and (r.status is None or r.status == 200)]
    gen_lo = sum(r.completion_tokens for r in ok) + sum(r.chunks for r in open_)
    gen_hi = sum(r.completion_tokens for r in ok) + sum(r.max_tokens for r in open_)
    gen = delta(before, after, "vt_generation_tokens_total")
    checks.add("gen_tokens", gen_lo <= gen <= gen_hi,
               f"vt_generation_tokens_total +{gen:g} in [{gen_lo}, {gen_hi}] ({len(ok)} ok, "
               f"{len(open_)} left early or failed)")

    pre = delta(before, after, "vt_preemptions_total")
    p_lo = sum(r.prompt_tokens for r in ok)
    p_hi = p_lo + sum(r.prompt_bytes + 256 for r in open_)
    p = delta(before, after, "vt_prompt_tokens_total") + delta(before, after, "vt_prefix_cache_hits_total")
    if a.fail_forward:
        checks.add("prompt_tokens", True,
                   f"skipped with --fail-forward (a failed pass restarts the prefix cache); +{p:g}")
    elif pre:
        checks.add("prompt_tokens", p >= p_lo,
                   f"prompt + prefix hits +{p:g} >= {p_lo} (upper bound not checked: {pre:g} preemptions)")
    else:
        checks.add("prompt_tokens", p_lo <= p <= p_hi, f"prompt + prefix hits +{p:g} in [{p_lo}, {p_hi}]")

    hits = delta(before, after, "vt_prefix_cache_hits_total")
    queries = delta(before, after, "vt_prefix_cache_queries_total")
    if not a.fail_forward:
        checks.add("prefix_hits", hits > 0,
                   f"+{hits:g} of +{queries:g} prompt tokens found in the prefix cache "
                   f"({hits / queries:.0%})" if queries else "no queries")
    back = {k: (before[k], after.get(k)) for k in before
            if (k.endswith("_total") or "_total{" in k or k.endswith("_count")) and after.get(k, 0) < before[k]}
    checks.add("monotonic", not back, f"counters that went down: {back}" if back else "no counter went down")
    return {"server_by_status": {str(s): v for s, v in per.items()}, "finished": fin,
            "generation_tokens": gen, "gen_bounds": [gen_lo, gen_hi], "prompt_plus_hits": p,
            "prompt_bounds": [p_lo, p_hi], "preemptions": pre, "prefix_hits": hits, "prefix_queries": queries}


def rss_check(a, samples: list[tuple[float, int]], t_end: float, checks: Checks) -> dict:
    lo_t = 0.2 * t_end
    win = [kib for t, kib in samples if lo_t <= t <= t_end]
    allv = [kib for _, kib in samples]
    out = {"samples": len(samples), "window_s": [round(lo_t, 1), round(t_end, 1)]}
    if not win:
        checks.add("rss_flat", False, "no RSS samples in the window")
        return out
    out.update({"min_kib": min(win), "max_kib": max(win), "first_kib": win[0], "last_kib": win[-1],
                "start_kib": allv[0], "growth": max(win) / min(win) - 1})
    checks.add("rss_flat", max(win) <= 1.05 * min(win),
               f"VmRSS over {out['window_s'][0]}-{out['window_s'][1]} s ({len(win)} samples): min "
               f"{min(win) / 1024:.1f} MiB, max {max(win) / 1024:.1f} MiB (+{out['growth']:.1%}), first "
               f"{win[0] / 1024:.1f}, last {win[-1] / 1024:.1f} MiB (at start {allv[0] / 1024:.1f} MiB)")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--vt-server", help="the vt-server binary (default: build*/examples/server/vt-server)")
    ap.add_argument("--model", type=Path,
                    default=Path(os.environ.get("VT_TEST_MODEL") or DEFAULT_MODEL))
    ap.add_argument("--duration", type=float, default=600.0, help="seconds of load (default 600)")
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2, help="vt-server -t")
    ap.add_argument("--kv-cache-memory", default="512MiB", help="vt-server --kv-cache-memory ('' = its default)")
    ap.add_argument("--max-tokens", type=int, default=256, help="the largest max_tokens drawn")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-fill", dest="fill", action="store_false",
                    help="skip using every KV block once before the load (then RSS grows while it does)")
    ap.add_argument("--fill-timeout", type=float, default=600.0)
    ap.add_argument("--rss-interval", type=float, default=2.0)
    ap.add_argument("--request-timeout", type=float, default=600.0,
                    help="a request not done by then (and not cancelled on purpose) fails")
    ap.add_argument("--drain-timeout", type=float, default=60.0)
    ap.add_argument("--start-timeout", type=float, default=180.0)
    ap.add_argument("--grace-period", type=float, default=30.0, help="vt-server --grace-period")
    ap.add_argument("--sigterm-at", type=float, help="SIGTERM the server this many seconds into the load")
    ap.add_argument("--sigterm-race", type=int, default=3, metavar="N",
                    help="with --sigterm-at, then N times: a fresh server, one request with a slow-to-compile "
                         "grammar, SIGTERM 50 ms after it (0: skip)")
    ap.add_argument("--exit-slack", type=float, default=10.0,
                    help="seconds past the grace period the server may take to exit after SIGTERM")
    ap.add_argument("--fail-forward", type=int, default=0, metavar="N",
                    help="run the server with VT_DEBUG_FAIL_FORWARD=N (every N-th forward pass fails)")
    ap.add_argument("--lora-share", type=float, default=0.1,
                    help="share of the requests that ask for a random rank-8 LoRA adapter (vt-server --lora; "
                         "written for the model at start; 0: none)")
    ap.add_argument("--grammar-share", type=float, default=0.1,
                    help="share of the requests with a response_format (any JSON or one of a few JSON schemas)")
    # This client is one Python process: at c=64, after an injected failure
    # ends every running request at once, a worker thread can wait more than
    # 5 s for the GIL between its connect() and its send(), and vt-server
    # closes a connection that has sent nothing for --keep-alive-timeout (5 s
    # by default, as documented; tests/server/test_hostile.py checks that
    # policy): the worker then sees BrokenPipe or "Server disconnected without
    # sending a response". The soak is about the engine and the streams, so
    # its server waits longer.
    ap.add_argument("--keep-alive-timeout", type=int, default=30,
                    help="vt-server --keep-alive-timeout (default 30; 0: the server's own default)")
    ap.add_argument("--server-arg", action="append", default=[], help="extra vt-server flag (repeatable)")
    ap.add_argument("--log-dir", help="keep the server log here (default: a temporary directory)")
    ap.add_argument("--records", help="write every request (Rec) as a JSON line to this file")
    ap.add_argument("--verbose", action="store_true", help="log every failed request as it happens")
    a = ap.parse_args()
    if a.sigterm_at is not None and a.fail_forward:
        ap.error("--sigterm-at and --fail-forward are separate runs")
    try:
        import openai  # noqa: F401
    except ImportError:
        sys.exit("the openai client is not installed (tests/run.sh pins it into .venv)")

    logs = Path(a.log_dir) if a.log_dir else Path(tempfile.mkdtemp(prefix="vt-soak-"))
    logs.mkdir(parents=True, exist_ok=True)
    a.lora_dir = None
    if a.lora_share > 0:
        a.lora_dir = logs / "lora"
        write_random_lora(a.model, a.lora_dir, 8, a.seed)
    port = sb.free_port()
    try:
        srv = start_server(a, port, logs)
    except RuntimeError as e:
        log(str(e))
        return 2
    checks = Checks()
    load = None
    report: dict = {"duration_s": a.duration, "concurrency": a.concurrency, "seed": a.seed,
                    "model": str(a.model), "server_cmd": srv.cmd, "server_log": str(srv.log_path),
                    "fail_forward": a.fail_forward, "sigterm_at": a.sigterm_at, "lora_share": a.lora_share,
                    "grammar_share": a.grammar_share}
    try:
        model_id = srv.model_id(a.model.name)
        load = Load(a, port, model_id, LORA_NAME if a.lora_dir else None)
        warm = load.one(random.Random(1), None, "normal", "completions", False, "raw", max_tokens=4)
        load.records.clear()
        if warm.outcome != "ok" and not a.fail_forward:
            raise RuntimeError(f"the warm-up request failed: {warm.detail}\n{srv.log_tail()}")
        if a.fill and a.sigterm_at is None:  # RSS is not checked in a SIGTERM run
            report["fill"] = fill_kv_pool(load, a.fill_timeout)
            report["fill"]["rss_kib"] = read_rss_kib(srv.proc.pid)
        idle, _, _ = wait_idle(port, 60)
        before = get_metrics(port)
        samples: list[tuple[float, int]] = []
        sampler_stop = threading.Event()

        def sampler():
            while not sampler_stop.is_set():
                kib = read_rss_kib(srv.proc.pid)
                if kib is None:
                    return
                samples.append((load.now(), kib))
                sampler_stop.wait(a.rss_interval)

        load.t0 = time.monotonic()
        report["tcp_ext_before"] = tcp_ext()
        st = threading.Thread(target=sampler, daemon=True)
        st.start()
        workers = [threading.Thread(target=load.worker, args=(i,), daemon=True) for i in range(a.concurrency)]
        for w in workers:
            w.start()
        log(f"load: {a.concurrency} workers for {a.duration:g} s on port {port}, server log {srv.log_path}")
        end_at = a.sigterm_at if a.sigterm_at is not None else a.duration
        next_note = 30.0
        while load.now() < end_at:
            time.sleep(min(0.2, max(0.0, end_at - load.now())))
            if load.now() >= next_note:
                with load.lock:
                    c = Counter(r.outcome for r in load.records)
                log(f"{load.now():.0f} s: {dict(c)}; RSS {samples[-1][1] / 1024 if samples else 0:.1f} MiB")
                next_note += 30.0
            if srv.proc.poll() is not None:
                raise RuntimeError(f"vt-server exited with {srv.proc.returncode} during the load:\n"
                                   + srv.log_tail())

        if a.sigterm_at is not None:
            return sigterm_run(a, srv, load, workers, samples, sampler_stop, checks, report, before)

        load.stop.set()
        t_end = load.now()
        for w in workers:
            w.join(a.request_timeout + 30)
        sampler_stop.set()
        log(f"load over at {t_end:.0f} s ({load.now() - t_end:.1f} s for the last requests to end); draining")
        recs = list(load.records)
        idle, waited, last = wait_idle(port, a.drain_timeout)
        checks.add("drained", idle is not None,
                   f"idle {waited:.1f} s after the last request ended" if idle else
                   f"not idle after {waited:.0f} s: running {last.get('vt_num_requests_running')}, waiting "
                   f"{last.get('vt_num_requests_waiting')}, KV blocks used {last.get('vt_kv_blocks_used')}")
        after = idle or last
        report["rss"] = rss_check(a, samples, t_end, checks)
        summary = summarize_records(recs)
        report["client"] = summary
        outc = summary["outcomes"]
        checks.add("no_failed", outc.get("failed", 0) == 0,
                   f"{outc.get('failed', 0)} failed of {len(recs)}: {summary['failed_examples'][:3]}")
        srv5 = {s: v for s, v in ((s, delta(before, after, f'vt_requests_total{{status="{s}"}}'))
                                  for s in statuses_of(after)) if s >= 500 and v}
        cli5 = Counter(r.status for r in recs if r.status and r.status >= 500)
        if a.fail_forward:
            # A request this script left on purpose after its status came
            # (cancel, disconnect) has no body to judge.
            unclean5 = [r for r in recs if r.status and r.status >= 500
                        and r.outcome not in ("error", "cancelled", "disconnected")]
            unseen = sum(1 for r in recs if r.status is None)
            n5 = sum(srv5.values())
            checks.add("no_5xx", not unclean5 and sum(cli5.values()) <= n5 <= sum(cli5.values()) + unseen,
                       f"client 5xx {dict(cli5)} (all clean errors: {not unclean5}), server 5xx {srv5}")
            errs = [r for r in recs if r.outcome == "error"]
            checks.add("fault_seen", bool(errs),
                       f"{len(errs)} requests ended with a clean error, e.g. {summary['error_examples'][:2]}"
                       if errs else "no request saw an error: is VT_DEBUG_FAIL_FORWARD implemented in this libvt?")
            first_err = min((r.t_end for r in errs), default=None)
            ok_after = sum(1 for r in recs if r.outcome == "ok" and first_err is not None and r.t_end > first_err)
            ok_n, sent = still_serving(load)
            checks.add("still_serving", ok_after > 0 and ok_n > 0,
                       f"{ok_after} ok requests ended after the first error; after the drain {ok_n} of {sent} "
                       "small requests ok")
            idle2, waited2, last2 = wait_idle(port, a.drain_timeout)
            if idle2 is None:
                checks.add("drained", False, f"not idle again after the last probes: {last2}")
        else:
            checks.add("no_5xx", not cli5 and not srv5 and not outc.get("error"),
                       f"client 5xx {dict(cli5)}, server 5xx {srv5}, error outcomes {outc.get('error', 0)}"
                       + (f": {summary['error_examples'][:3]}" if outc.get("error") else ""))
        report["counters"] = counter_checks(a, recs, before, after, checks)
        report["metrics_before"] = pick(before)
        report["metrics_after"] = pick(after)
        if not a.fail_forward and idle is not None:
            report["exact"] = exact_phase(load, checks)
        code = stop_server(srv, a.grace_period + a.exit_slack)
        checks.add("clean_exit", code == 0, f"SIGTERM to the idle server: exit status {code}")
    except RuntimeError as e:
        log(f"error: {e}")
        checks.add("run", False, str(e)[:500])
    except KeyboardInterrupt:
        log("interrupted")
        checks.add("run", False, "interrupted")
    finally:
        if srv.proc.poll() is None:
            srv.stop()
    return finish_report(report, checks, load, a.records)


def pick(m: dict) -> dict:
    """The metrics worth keeping in the report."""
    keep = ("vt_num_requests", "vt_kv_blocks", "vt_requests_total", "vt_requests_finished_total",
            "vt_prompt_tokens_total", "vt_generation_tokens_total", "vt_prefix_cache", "vt_preemptions_total",
            "vt_engine_steps_total", "vt_time_to_first_token_seconds_count",
            "vt_inter_token_latency_seconds_count")
    return {k: v for k, v in m.items() if k.startswith(keep)}


def stop_server(srv, wait: float) -> int | None:
    srv.proc.send_signal(signal.SIGTERM)
    try:
        return srv.proc.wait(wait)
    except subprocess.TimeoutExpired:
        return None


def sigterm_run(a, srv, load: Load, workers, samples, sampler_stop, checks: Checks, report: dict,
                before: dict) -> int:
    t_sig = load.now()
    with load.lock:
        n_before = len(load.records)
    log(f"SIGTERM at {t_sig:.1f} s")
    srv.proc.send_signal(signal.SIGTERM)
    load.stop.set()
    gone = threading.Event()
    probe = threading.Thread(target=probe_after_sigterm, args=(load, gone), daemon=True)
    probe.start()
    limit = a.grace_period + a.exit_slack
    try:
        code = srv.proc.wait(limit + 60)  # past the limit only to tell slow from hung
    except subprocess.TimeoutExpired:
        code = None
    exit_s = load.now() - t_sig
    gone.set()
    sampler_stop.set()
    for w in workers:
        w.join(a.request_timeout + 30)
    probe.join(60)
    recs = list(load.records)
    report["client"] = summarize_records(recs)
    report["rss"] = {"samples": len(samples), "min_kib": min((k for _, k in samples), default=None),
                     "max_kib": max((k for _, k in samples), default=None),
                     "first_kib": samples[0][1] if samples else None,
                     "last_kib": samples[-1][1] if samples else None}
    checks.add("sigterm_exit", code == 0 and exit_s <= limit,
               f"exit status {code} {exit_s:.1f} s after SIGTERM (limit: grace {a.grace_period:g} s + "
               f"{a.exit_slack:g} s)" + ("" if code is not None else "; killed: it hung") + "\n"
               + ("" if code == 0 else srv.log_tail(1500)))
    pre = [r for r in recs if r.t_end < t_sig]
    inflight = [r for r in recs if r.t_start < t_sig <= r.t_end and r.action != "probe"]
    new = [r for r in recs if r.t_start >= t_sig or r.action == "probe"]
    clean_in = ("ok", "aborted", "shutdown", "refused", "cancelled", "disconnected", "rejected")
    bad_in = [r for r in inflight if r.outcome not in clean_in]
    bad_new = [r for r in new if r.outcome not in ("shutdown", "refused", "cancelled", "disconnected",
                                                   "rejected")]
    c_in = dict(Counter(r.outcome for r in inflight))
    checks.add("sigterm_inflight_clean", not bad_in and inflight,
               f"{len(inflight)} requests in flight at SIGTERM: {c_in}"
               + (f"; not clean: {[f'{r.api} {r.client} {r.action}: {r.outcome} {r.detail}' for r in bad_in][:5]}"
                  if bad_in else ""))
    checks.add("sigterm_new_clean", not bad_new and bool(new),
               f"{len(new)} requests sent after SIGTERM: {dict(Counter(r.outcome for r in new))}"
               + (f"; not clean: {[f'{r.outcome} {r.detail}' for r in bad_new][:5]}" if bad_new else ""))
    failed_pre = [r for r in pre if r.outcome in ("failed", "error", "aborted", "shutdown")]
    checks.add("no_failed", not failed_pre,
               f"{len(failed_pre)} of {len(pre)} requests ended before SIGTERM failed or erred: "
               f"{[r.detail for r in failed_pre][:3]}")
    s5 = [r for r in pre if r.status and r.status >= 500]
    checks.add("no_5xx", not s5, f"{len(s5)} 5xx before SIGTERM")
    report["sigterm"] = {"at_s": t_sig, "exit_status": code, "exit_after_s": exit_s,
                         "inflight": c_in, "new": dict(Counter(r.outcome for r in new)),
                         "records_before_signal": n_before}
    if a.sigterm_race:
        report["sigterm_race"] = sigterm_race(a, srv.log_path.parent, a.sigterm_race, checks)
    return finish_report(report, checks, load, a.records)


def slow_schema(tag: str) -> dict:
    """A JSON schema vt-server takes a while to compile (0.5 s for 40
    patterned properties on a busy 2-core VM; ~30 ms for a plain request),
    different for every tag so that its grammar cache never has it."""
    props = {f"{tag}_{i}": {"type": "string", "pattern": "[a-z]{1,%d}" % (5 + i)} for i in range(40)}
    return {"type": "json_schema",
            "json_schema": {"name": "slow", "schema": {"type": "object", "properties": props,
                                                       "required": list(props)}}}


def sigterm_race(a, logs: Path, tries: int, checks: Checks) -> dict:
    """SIGTERM to an otherwise idle server 50 ms after a request arrived
    whose preparation (parse, grammar compile, tokenization) takes longer:
    it passed the "shutting down" check, the engine has nothing in flight.
    It must still end cleanly (its answer, or a 503): the soak's SIGTERM
    never sees this, since it always has requests in flight."""
    outcomes = []
    for t in range(tries):
        port = sb.free_port()
        srv = sb.Server(f"vt-server-race{t}", [*start_cmd(a, port)], port, logs, dict(os.environ))
        try:
            srv.start()
            srv.wait_healthy(a.start_timeout)
        except RuntimeError as e:
            checks.add("sigterm_preparing_clean", False, f"race server {t}: {e}")
            return {"outcomes": outcomes}
        rec = Rec("completions", True, "raw", "race", 8, "race", 0)
        body = {"model": srv.model_id(a.model.name), "prompt": "Name five ships.", "max_tokens": 8,
                "stream": True, "stream_options": {"include_usage": True},
                "response_format": slow_schema(f"r{a.seed}_{t}_{time.time_ns()}")}
        th = threading.Thread(target=raw_request, args=(port, rec, body, a.request_timeout, None, None))
        th.start()
        time.sleep(0.05)
        srv.proc.send_signal(signal.SIGTERM)
        th.join(a.grace_period + a.exit_slack + 60)
        try:
            code = srv.proc.wait(a.grace_period + a.exit_slack)
        except subprocess.TimeoutExpired:
            code = None
        srv.stop()
        outcomes.append({"outcome": rec.outcome or "hung", "status": rec.status, "detail": rec.detail,
                         "exit": code})
    bad = [o for o in outcomes if o["outcome"] not in ("ok", "shutdown", "refused") or o["exit"] != 0]
    checks.add("sigterm_preparing_clean", not bad,
               f"{tries} requests being prepared at SIGTERM (idle server): "
               f"{dict(Counter(o['outcome'] for o in outcomes))}"
               + (f"; not clean: {bad[:3]}" if bad else ""))
    return {"outcomes": outcomes}


def finish_report(report: dict, checks: Checks, load: Load | None = None, path: str | None = None) -> int:
    if load is not None and path:
        with open(path, "w") as f:
            for r in load.records:
                f.write(json.dumps(asdict(r)) + "\n")
    if "tcp_ext_before" in report:
        after = tcp_ext()
        report["tcp_ext"] = {k: after.get(k, 0) - v for k, v in report.pop("tcp_ext_before").items()}
        bad = [n for n, r in checks.results.items() if not r["ok"] and "reset by peer" in r["detail"]]
        if bad and report["tcp_ext"].get("SyncookiesFailed"):
            for n in bad:
                checks.results[n]["detail"] += (
                    f" (the kernel reset {report['tcp_ext']['SyncookiesFailed']} SYN-cookie connections during "
                    f"the run, listen queue overflows {report['tcp_ext'].get('ListenOverflows')}: the "
                    "server's listen backlog overflowed)")
    report["checks"] = checks.results
    report["ok"] = checks.ok
    c = report.get("client", {})
    print(f"soak: {c.get('requests', 0)} requests, outcomes {c.get('outcomes')}, statuses {c.get('statuses')}")
    if "by_action" in c:
        print(f"soak: by action {c['by_action']}")
    r = report.get("rss") or {}
    if r.get("min_kib"):
        print(f"soak: RSS MiB min {r['min_kib'] / 1024:.1f} max {r['max_kib'] / 1024:.1f} first "
              f"{r['first_kib'] / 1024:.1f} last {r['last_kib'] / 1024:.1f}")
    for name, res in checks.results.items():
        print(f"soak: {'PASS' if res['ok'] else 'FAIL'} {name}: {res['detail'].splitlines()[0][:400]}")
    print(f"soak: {'all checks passed' if checks.ok else 'CHECKS FAILED'}; server log {report.get('server_log')}")
    print(json.dumps(report, default=str))
    return 0 if checks.ok else 1


if __name__ == "__main__":
    sys.exit(main())
