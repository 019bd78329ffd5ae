"""Load generation for serve-bench.py: streaming /v1/completions clients and
latency statistics. Standard library only (threads + http.client), so the
benchmark runs on a bare Python without httpx/aiohttp.

NOTE: one thread per in-flight request. Each thread only blocks on its socket
and timestamps lines as they arrive, so the GIL adds well under a
millisecond of jitter at these request rates (tens of SSE events per second
per stream), far below the inter-token latencies being measured.
"""
from __future__ import annotations

import http.client
import json
import math
import threading
import time
from dataclasses import dataclass, field

# Plain English filler the prompts are cut from. The text is ours (written
# for this script), so both servers tokenize exactly the same bytes.
_PASSAGE = (
    "The harbour town woke slowly. Fishing boats came in one by one, their decks "
    "stacked with crates of silver fish, and the gulls followed them in wide, noisy "
    "circles. On the quay an old woman sold bread from a wooden cart, calling out "
    "prices that had not changed in twenty years. Children ran between the nets "
    "while their parents argued about the weather, the price of diesel and the new "
    "road that the council had promised and never built. Up on the hill the "
    "lighthouse keeper climbed the spiral stairs for the last time that season, "
    "wiped the great lens with a soft cloth and wrote a short line in the log: calm "
    "sea, light wind from the west, three ships seen before noon. In the library "
    "the teacher sorted a box of donated books, most of them about sailing, a few "
    "about astronomy and one, strangely, about the chemistry of bread. She read "
    "the first page standing up and then sat down to read the rest. By evening the "
    "wind had turned, the boats were tied up two deep along the wall, and the town "
    "gathered in the square to hear the band practise the same four songs it "
    "played every summer, a little faster each year. Nobody minded. The mayor gave "
    "a speech that was shorter than usual, and the baker handed out what was left "
    "of the day's loaves to anyone who asked. Later, when the square was empty, "
    "the keeper's light swept slowly over the roofs and out across the water, "
    "where a single late boat was still making its way home."
).split()

# Prompt lengths in words, cycled: short chat-like turns to long documents
# (roughly 1.3 tokens per word for a BPE vocabulary, so up to ~400 tokens).
PROMPT_WORDS = (12, 40, 96, 200, 24, 300, 64, 150)


def make_prompt(index: int) -> str:
    """Deterministic prompt number `index` (>= 0).

    Every prompt starts with its own number, so no two requests share a
    prefix beyond the first token or two and prefix caches cannot turn a
    later request into a cache hit; the body is a rotated slice of the
    passage so the texts also differ.
    """
    n = PROMPT_WORDS[index % len(PROMPT_WORDS)]
    start = (index * 37) % len(_PASSAGE)
    words = [_PASSAGE[(start + i) % len(_PASSAGE)] for i in range(n)]
    return f"Story {index}. " + " ".join(words) + "\n\nContinue the story:"


@dataclass
class RequestResult:
    """One streamed request. Times are seconds relative to the request start."""
    ok: bool = False
    error: str = ""
    ttft: float | None = None              # first non-empty text chunk
    latency: float | None = None           # until [DONE] / end of stream
    itl: list[float] = field(default_factory=list)  # gaps between text chunks
    chunks: int = 0                        # non-empty text chunks
    usage_tokens: int | None = None        # usage.completion_tokens, if sent
    finish_reason: str | None = None

    @property
    def tokens(self) -> int:
        """Output tokens: the server's usage count, else one per text chunk."""
        return self.usage_tokens if self.usage_tokens is not None else self.chunks


def sse_data(resp):
    """The data payloads of a server-sent event stream, in order (b"[DONE]"
    included); blank separators, "event:" lines and ": keep-alive" comments
    skipped. Ends with the stream."""
    while True:
        line = resp.readline()
        if not line:
            return
        line = line.strip()
        if line.startswith(b"data:"):
            yield line[5:].strip()


def stream_completion(host: str, port: int, body: dict, timeout: float) -> RequestResult:
    """POST body (with "stream": true) to /v1/completions and time the SSE stream.

    Never raises: transport and HTTP errors come back as ok=False with a
    message. Thread-safe (one connection per call).
    """
    res = RequestResult()
    payload = json.dumps(body).encode()
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    t0 = time.perf_counter()
    last = None
    phase = "sending the request"
    try:
        conn.request("POST", "/v1/completions", body=payload,
                     headers={"Content-Type": "application/json", "Accept": "text/event-stream"})
        phase = "waiting for the response headers"
        resp = conn.getresponse()
        phase = "reading the stream"
        if resp.status != 200:
            res.error = f"HTTP {resp.status}: {resp.read(500).decode(errors='replace')}"
            return res
        done = False
        for data in sse_data(resp):
            now = time.perf_counter()
            if data == b"[DONE]":
                done = True
                break
            try:
                obj = json.loads(data)
            except json.JSONDecodeError:
                res.error = f"bad SSE data: {data[:200]!r}"
                return res
            if "error" in obj:
                res.error = f"server error: {json.dumps(obj['error'])[:300]}"
                return res
            usage = obj.get("usage")
            if isinstance(usage, dict) and usage.get("completion_tokens") is not None:
                res.usage_tokens = int(usage["completion_tokens"])
            for choice in obj.get("choices") or []:
                if choice.get("finish_reason"):
                    res.finish_reason = choice["finish_reason"]
                if choice.get("text"):
                    if last is None:
                        res.ttft = now - t0
                    else:
                        res.itl.append(now - last)
                    last = now
                    res.chunks += 1
        res.latency = time.perf_counter() - t0
        if not done and res.finish_reason is None:
            res.error = "stream ended without [DONE] or a finish_reason"
        elif res.chunks == 0:
            res.error = "no text generated"
        else:
            res.ok = True
    except (OSError, http.client.HTTPException) as e:
        after = f" after {res.chunks} chunks" if res.chunks else ""
        res.error = (f"{type(e).__name__} {phase}{after}, "
                     f"{time.perf_counter() - t0:.1f} s after sending: {e}")
    finally:
        conn.close()
    return res


def run_level(host: str, port: int, bodies: list[dict], concurrency: int,
              timeout: float) -> tuple[list[RequestResult], float]:
    """Send all bodies with at most `concurrency` in flight (closed loop: each
    worker starts its next request as soon as its last one ends).

    Returns the results (in body order) and the wall time in seconds from the
    first request sent to the last stream finished.
    """
    results: list[RequestResult | None] = [None] * len(bodies)
    lock = threading.Lock()
    next_i = 0

    def worker() -> None:
        nonlocal next_i
        while True:
            with lock:
                i = next_i
                next_i += 1
            if i >= len(bodies):
                return
            results[i] = stream_completion(host, port, bodies[i], timeout)

    threads = [threading.Thread(target=worker, daemon=True)
               for _ in range(min(concurrency, len(bodies)))]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        # NOTE: join in short slices: a join without timeout blocks the main
        # thread in C, so Ctrl-C / SIGTERM would wait for the whole level.
        while t.is_alive():
            t.join(0.2)
    return [r for r in results if r is not None], time.perf_counter() - t0


def percentile(xs: list[float], q: float) -> float | None:
    """q-th percentile (0..100) with linear interpolation (numpy's default)."""
    if not xs:
        return None
    s = sorted(xs)
    k = (len(s) - 1) * q / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def summarize(results: list[RequestResult], wall: float) -> dict:
    """Aggregate one level: output tokens/s over the level's wall time, TTFT
    and ITL percentiles in milliseconds (ITL pooled over all gaps of all
    successful requests, as vLLM's benchmark_serving does)."""
    ok = [r for r in results if r.ok]
    ttft = [r.ttft for r in ok if r.ttft is not None]
    itl = [g for r in ok for g in r.itl]
    tokens = sum(r.tokens for r in ok)
    ms = lambda x: None if x is None else 1000.0 * x  # noqa: E731
    return {
        "requests_ok": len(ok),
        "requests_failed": len(results) - len(ok),
        "output_tokens": tokens,
        "tokens_source": ("usage" if ok and all(r.usage_tokens is not None for r in ok)
                          else "chunks"),
        "mean_tokens_per_request": tokens / len(ok) if ok else None,
        "wall_s": wall,
        "output_tps": tokens / wall if wall > 0 else None,
        "ttft_p50_ms": ms(percentile(ttft, 50)),
        "ttft_p99_ms": ms(percentile(ttft, 99)),
        "itl_p50_ms": ms(percentile(itl, 50)),
        "itl_p99_ms": ms(percentile(itl, 99)),
        "finish_reasons": sorted({r.finish_reason or "?" for r in ok}),
        "errors": sorted({r.error for r in results if not r.ok})[:5],
    }
