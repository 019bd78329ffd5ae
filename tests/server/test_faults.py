"""A forward pass that fails while requests run (fault injection through the
engine's testing hook VT_DEBUG_FAIL_FORWARD_ONCE, lib/engine/engine.h): the
requests in it end with a clean error, and the server goes on serving."""
import http.client
import json
import threading
import time

import pytest

# The engine's 12th forward pass fails: the three requests below (64 tokens
# each, sent together) are all running then. Later passes never fail.
FAIL_AT = "12"


def raw_completion(server, stream, max_tokens=64):
    """(HTTP status, body text) of one /v1/completions request over raw HTTP."""
    body = {"model": server.model, "prompt": "Once upon a time", "max_tokens": max_tokens,
            "temperature": 0, "ignore_eos": True, "stream": stream}
    status, data = server.request("POST", "/v1/completions", body, timeout=120)
    return status, data.decode()


def sse_events(text):
    """The data payloads of an event stream, [DONE] included."""
    return [line[len("data: "):] for line in text.split("\n") if line.startswith("data: ")]


def test_failed_forward_pass_ends_its_requests_and_serving_goes_on(start_server, monkeypatch):
    monkeypatch.setenv("VT_DEBUG_FAIL_FORWARD_ONCE", FAIL_AT)
    server = start_server("--kv-cache-memory", "128MiB")
    monkeypatch.delenv("VT_DEBUG_FAIL_FORWARD_ONCE")

    results = {}

    def run(name, stream):
        results[name] = raw_completion(server, stream)

    threads = [threading.Thread(target=run, args=(n, s)) for n, s in
               (("stream-1", True), ("stream-2", True), ("plain", False))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    # Streams: some text, then one error event and [DONE]; no finish_reason.
    for name in ("stream-1", "stream-2"):
        status, text = results[name]
        assert status == 200, (name, text)
        events = sse_events(text)
        assert events[-1] == "[DONE]", (name, text)
        payloads = [json.loads(e) for e in events[:-1]]
        assert "error" in payloads[-1], (name, text)
        err = payloads[-1]["error"]
        assert err["type"] == "server_error" and "generation failed" in err["message"], err
        assert all("error" not in p for p in payloads[:-1]), (name, text)
        assert not any(c.get("finish_reason") for p in payloads[:-1] for c in p["choices"]), (name, text)
    # Not streamed: the answer is computed before anything is sent, so the
    # failure is a 500 with an OpenAI error object and nothing else.
    status, text = results["plain"]
    body = json.loads(text)
    assert status == 500, text
    assert set(body) == {"error"}, text
    assert body["error"]["type"] == "server_error" and "generation failed" in body["error"]["message"]

    # The engine thread logs the failed step once vt_context_step returned,
    # after the step's callbacks ended the requests: on a loaded machine the
    # clients can have their answers before the line is written.
    log = server.stderr()
    deadline = time.monotonic() + 10
    while "engine step failed" not in log and time.monotonic() < deadline:
        time.sleep(0.05)
        log = server.stderr()
    assert "injected forward failure (VT_DEBUG_FAIL_FORWARD)" in log, log
    assert log.count("engine step failed") == 1, log

    # The pool starts over and the server goes on: new requests, several at
    # once and streamed, finish normally. The prefix-cache counters are the
    # engine's: the three prompts' lookups stay counted across the new pool.
    after_failure = server.wait_idle()
    assert after_failure["vt_prefix_cache_queries_total"] > 0, after_failure
    client = server.client()

    def stream_ok(i):
        finish, text = None, ""
        for ch in client.completions.create(model=server.model, prompt=f"Count to {i}:", max_tokens=16,
                                            temperature=0, stream=True, extra_body={"ignore_eos": True}):
            text += ch.choices[0].text
            finish = ch.choices[0].finish_reason or finish
        return finish, text

    outs = [None] * 4
    ts = [threading.Thread(target=lambda i=i: outs.__setitem__(i, stream_ok(i))) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for finish, text in outs:
        assert finish == "length" and text
    status, text = raw_completion(server, stream=False, max_tokens=8)
    assert status == 200, text
    body = json.loads(text)
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["usage"]["completion_tokens"] == 8
    final = server.wait_idle()
    for counter in ("vt_prefix_cache_queries_total", "vt_prefix_cache_hits_total"):
        assert final[counter] >= after_failure[counter], (counter, after_failure, final)
    assert server.terminate() == 0, server.stderr()
