"""The OpenAI API surface of vt-server, through the official openai client."""
import json

import pytest

from conftest import parse_metrics

CHAT = [{"role": "user", "content": "Name three colours."}]


def test_health_version_models(server, client):
    assert server.get_json("/health") == {"status": "ok"}
    version = server.get_json("/version")
    assert version["version"] and version["abi_version"].startswith("1.")
    models = client.models.list()
    ids = [m.id for m in models.data]
    assert ids == [server.model]
    assert client.models.retrieve(server.model).id == server.model
    assert server.get_json("/v1/models")["data"][0]["max_model_len"] > 0


def test_chat_completion(server, client):
    r = client.chat.completions.create(model=server.model, messages=CHAT, max_tokens=8, temperature=0)
    assert r.id.startswith("chatcmpl-") and r.object == "chat.completion" and r.created > 0
    assert r.model == server.model
    (c,) = r.choices
    assert c.index == 0 and c.message.role == "assistant"
    assert isinstance(c.message.content, str) and c.message.content
    assert c.finish_reason in ("stop", "length")
    u = r.usage
    assert u.prompt_tokens > len(CHAT[0]["content"].split())  # the template adds its own tokens
    assert 1 <= u.completion_tokens <= 8
    assert u.total_tokens == u.prompt_tokens + u.completion_tokens
    if c.finish_reason == "length":
        assert u.completion_tokens == 8
    # max_completion_tokens is the chat API's newer name for max_tokens.
    r2 = client.chat.completions.create(model=server.model, messages=CHAT, max_completion_tokens=3, temperature=0)
    assert r2.usage.completion_tokens <= 3
    assert r.choices[0].message.content.startswith(r2.choices[0].message.content)


def test_chat_stream_matches_whole(server, client):
    whole = client.chat.completions.create(model=server.model, messages=CHAT, max_tokens=12, temperature=0)
    stream = client.chat.completions.create(model=server.model, messages=CHAT, max_tokens=12, temperature=0,
                                            stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    assert all(ch.object == "chat.completion.chunk" for ch in chunks)
    assert len({ch.id for ch in chunks}) == 1 and chunks[0].id.startswith("chatcmpl-")
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    finishes = [ch.choices[0].finish_reason for ch in chunks if ch.choices and ch.choices[0].finish_reason]
    assert finishes == [whole.choices[0].finish_reason]
    assert text == whole.choices[0].message.content
    # include_usage: a last chunk with no choices carries the usage.
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.model_dump() == whole.usage.model_dump()
    assert all(ch.usage is None for ch in chunks[:-1])


def test_completions(server, client):
    prompt = "The capital of France is"
    r = client.completions.create(model=server.model, prompt=prompt, max_tokens=8, temperature=0)
    assert r.id.startswith("cmpl-") and r.object == "text_completion"
    (c,) = r.choices
    assert c.text and c.finish_reason in ("stop", "length")
    # Streamed: the same text, the finish reason on the last choice chunk.
    chunks = list(client.completions.create(model=server.model, prompt=prompt, max_tokens=8, temperature=0,
                                            stream=True))
    assert "".join(ch.choices[0].text for ch in chunks) == c.text
    assert chunks[-1].choices[0].finish_reason == c.finish_reason
    # A list of prompts: one choice each, in order, each as if alone; usage adds up.
    other = client.completions.create(model=server.model, prompt="1, 2, 3, 4,", max_tokens=8, temperature=0)
    r2 = client.completions.create(model=server.model, prompt=[prompt, "1, 2, 3, 4,"], max_tokens=8,
                                   temperature=0)
    assert [ch.index for ch in r2.choices] == [0, 1]
    assert [ch.text for ch in r2.choices] == [c.text, other.choices[0].text]
    assert r2.usage.prompt_tokens == r.usage.prompt_tokens + other.usage.prompt_tokens
    assert r2.usage.completion_tokens == r.usage.completion_tokens + other.usage.completion_tokens
    # Token ids as the prompt: counted as given; a list of such lists works alike.
    ids = [504, 3575, 282, 4649, 314]
    r3 = client.completions.create(model=server.model, prompt=ids, max_tokens=4, temperature=0)
    assert r3.usage.prompt_tokens == len(ids) and r3.choices[0].text
    r4 = client.completions.create(model=server.model, prompt=[ids, ids], max_tokens=4, temperature=0)
    assert [ch.text for ch in r4.choices] == [r3.choices[0].text] * 2


def test_n_and_seed(server, client):
    kw = dict(model=server.model, prompt="Once upon a time", max_tokens=8, temperature=1.0, seed=42, n=3)
    a = client.completions.create(**kw)
    b = client.completions.create(**kw)
    assert [c.index for c in a.choices] == [0, 1, 2]
    assert [c.text for c in a.choices] == [c.text for c in b.choices]  # seeded: reproducible
    assert len({c.text for c in a.choices}) > 1  # seed + i: the choices differ
    assert 3 <= a.usage.completion_tokens <= 3 * 8
    # The prompt is counted once, however many choices it has.
    one = client.completions.create(**{**kw, "n": 1})
    assert a.usage.prompt_tokens == one.usage.prompt_tokens
    assert one.choices[0].text == a.choices[0].text  # choice 0 uses the seed itself


def test_logprobs(server, client):
    r = client.chat.completions.create(model=server.model, messages=CHAT, max_tokens=5, temperature=0,
                                       logprobs=True, top_logprobs=3)
    content = r.choices[0].logprobs.content
    assert 1 <= len(content) <= 5
    text = r.choices[0].message.content
    assert "".join(e.token for e in content).startswith(text[:1])
    for e in content:
        assert e.logprob <= 0 and len(e.top_logprobs) == 3
        # Greedy: the chosen token is the most likely one.
        assert e.top_logprobs[0].token == e.token
        assert e.top_logprobs[0].logprob == pytest.approx(e.logprob, abs=1e-4)
        try:  # a piece may be part of a character: then token holds U+FFFD
            assert bytes(e.bytes).decode() == e.token
        except UnicodeDecodeError:
            assert "\ufffd" in e.token
    # Streamed, the same entries arrive one chunk at a time.
    streamed = [e for ch in client.chat.completions.create(
        model=server.model, messages=CHAT, max_tokens=5, temperature=0, logprobs=True, top_logprobs=3, stream=True)
        if ch.choices and ch.choices[0].logprobs for e in ch.choices[0].logprobs.content]
    assert [(e.token, e.logprob) for e in streamed] == [(e.token, e.logprob) for e in content]
    r2 = client.completions.create(model=server.model, prompt="Hello", max_tokens=4, temperature=0, logprobs=2)
    lp = r2.choices[0].logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == len(lp.text_offset) >= 1
    assert all(len(t) <= 2 for t in lp.top_logprobs)
    assert "".join(lp.tokens).startswith(r2.choices[0].text[:1])


def test_stop_string_never_shown(server, client):
    kw = dict(model=server.model, prompt="Here is a list of fruits: apple, banana,", max_tokens=24,
              temperature=0, extra_body={"ignore_eos": True})
    full = client.completions.create(**kw).choices[0].text
    assert len(full) > 12, full
    # A stop string taken from the middle of what greedy decoding writes.
    start = len(full) // 2
    stop = full[start:start + 4]
    expect = full[:full.index(stop)]
    r = client.completions.create(stop=[stop, "\u2603never"], **kw)
    assert r.choices[0].text == expect and r.choices[0].finish_reason == "stop"
    pieces = [ch.choices[0].text for ch in client.completions.create(stop=stop, stream=True, **kw)]
    assert "".join(pieces) == expect
    assert all(stop not in p for p in pieces)
    # Chat streaming too.
    chat_full = client.chat.completions.create(model=server.model, messages=CHAT, max_tokens=16,
                                               temperature=0).choices[0].message.content
    if len(chat_full) > 6:
        cstop = chat_full[3:6]
        pieces = [ch.choices[0].delta.content or "" for ch in client.chat.completions.create(
            model=server.model, messages=CHAT, max_tokens=16, temperature=0, stop=cstop, stream=True)
            if ch.choices]
        assert "".join(pieces) == chat_full[:chat_full.index(cstop)]


def test_sampling_params_accepted(server, client):
    r = client.chat.completions.create(model=server.model, messages=CHAT, max_tokens=6, temperature=0.7,
                                       top_p=0.9, presence_penalty=0.5, frequency_penalty=0.5, seed=7,
                                       extra_body={"top_k": 20, "min_p": 0.05})
    assert r.choices[0].finish_reason in ("stop", "length")


def test_metrics_exposition(server, client):
    client.completions.create(model=server.model, prompt="Hi", max_tokens=2, temperature=0)
    status, body = server.get("/metrics")
    assert status == 200
    m = parse_metrics(body.decode())
    for name in ["vt_num_requests_running", "vt_num_requests_waiting", "vt_kv_blocks_used",
                 "vt_kv_blocks_total", "vt_kv_blocks_cached", "vt_prefix_cache_hit_rate",
                 "vt_prefix_cache_hits_total", "vt_prefix_cache_queries_total",
                 "vt_generation_tokens_total", "vt_prompt_tokens_total",
                 "vt_time_to_first_token_seconds_count", "vt_inter_token_latency_seconds_count"]:
        assert name in m, name
    assert m['vt_requests_total{status="200"}'] >= 1
    assert m["vt_kv_blocks_total"] > 0 and m["vt_generation_tokens_total"] >= 2
    assert m["vt_time_to_first_token_seconds_count"] >= 1
    assert m['vt_time_to_first_token_seconds_bucket{le="+Inf"}'] == m["vt_time_to_first_token_seconds_count"]
    text = body.decode()
    assert "# TYPE vt_time_to_first_token_seconds histogram" in text
    assert "# TYPE vt_requests_total counter" in text


def test_tools_reach_the_template(server, client):
    # SmolLM2's template ignores tools and teaches no call syntax: the
    # request is accepted and answered in words (test_tools.py has the rest).
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    r = client.chat.completions.create(model=server.model, messages=CHAT, max_tokens=3, temperature=0,
                                       tools=tools)
    assert r.choices[0].message.content is not None
    status, body = server.request("POST", "/v1/chat/completions", {
        "model": server.model, "max_tokens": 2, "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Say"}, {"type": "text", "text": "hi"}]}]})
    assert status == 200, body
    assert json.loads(body)["choices"][0]["message"]["role"] == "assistant"
