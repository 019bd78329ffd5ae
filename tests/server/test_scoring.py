"""Prompt scoring through /v1/completions: echo with logprobs and max_tokens 0
(lm-eval's loglikelihood requests; its current local-completions sends
max_tokens 1 and drops the last entry), and vLLM's prompt_logprobs."""
import math

import pytest

PROMPT = "The capital of France is Paris, and the capital of Italy is Rome."


def score(client, model, prompt, n_top=1, max_tokens=0, **kw):
    return client.completions.create(model=model, prompt=prompt, echo=True, logprobs=n_top, max_tokens=max_tokens,
                                     temperature=0, **kw)


def test_echo_max_tokens_0(server, client):
    r = score(client, server.model, PROMPT)
    (c,) = r.choices
    assert c.text == PROMPT and c.finish_reason == "length"
    assert r.usage.completion_tokens == 0 and r.usage.total_tokens == r.usage.prompt_tokens
    lp = c.logprobs
    n = r.usage.prompt_tokens
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == len(lp.text_offset) == n
    assert "".join(lp.tokens) == PROMPT
    # One None, at the start: the first token is conditioned on nothing.
    assert lp.token_logprobs[0] is None and lp.top_logprobs[0] is None
    assert all(isinstance(x, float) and x <= 0 for x in lp.token_logprobs[1:])
    assert lp.text_offset[0] == 0 and lp.text_offset == sorted(lp.text_offset)
    for tok, top in zip(lp.token_logprobs[1:], lp.top_logprobs[1:]):
        # logprobs=1: the most likely token, and the prompt's own when it is another.
        assert 1 <= len(top) <= 2 and max(top.values()) >= tok - 1e-6
    # lm-eval's is_greedy: a token equal to its top entry's logprob. Prompt
    # tokens the model finds obvious are greedy.
    assert any(tok == max(top.values()) for tok, top in zip(lp.token_logprobs[1:], lp.top_logprobs[1:]))


def test_echo_streamed_and_batched(server, client):
    whole = score(client, server.model, PROMPT, n_top=2)
    chunks = list(client.completions.create(model=server.model, prompt=PROMPT, echo=True, logprobs=2,
                                            max_tokens=0, temperature=0, stream=True))
    text = "".join(ch.choices[0].text for ch in chunks)
    assert text == PROMPT
    streamed = [x for ch in chunks if ch.choices[0].logprobs for x in ch.choices[0].logprobs.token_logprobs]
    assert streamed == whole.choices[0].logprobs.token_logprobs
    assert chunks[-1].choices[0].finish_reason == "length"
    # A batch of token prompts (how lm-eval sends them): each as if alone.
    ids = [504, 3575, 282, 4649, 314]
    one = score(client, server.model, ids)
    two = score(client, server.model, [ids, ids[:3]])
    assert [c.index for c in two.choices] == [0, 1]
    assert two.choices[0].logprobs.token_logprobs == one.choices[0].logprobs.token_logprobs
    assert two.choices[1].logprobs.token_logprobs == one.choices[0].logprobs.token_logprobs[:3]
    assert two.choices[0].text == one.choices[0].text


def test_lm_eval_max_tokens_1(server, client):
    """lm-eval's local-completions: echo, max_tokens 1, logprobs 1; it sums
    token_logprobs[ctxlen:-1], dropping the generated token."""
    zero = score(client, server.model, PROMPT).choices[0].logprobs
    one = score(client, server.model, PROMPT, max_tokens=1)
    lp = one.choices[0].logprobs
    assert one.usage.completion_tokens == 1
    assert len(lp.token_logprobs) == len(zero.token_logprobs) + 1
    assert lp.token_logprobs[:-1] == zero.token_logprobs
    assert lp.tokens[:-1] == zero.tokens
    assert one.choices[0].text.startswith(PROMPT) and lp.text_offset[-1] == len(PROMPT.encode())


def test_teacher_forced_equals_generated(server, client):
    """The logprob of each greedily generated token equals its logprob when
    the same tokens come back as a prompt (teacher forcing)."""
    gen = client.completions.create(model=server.model, prompt=PROMPT, max_tokens=8, temperature=0, logprobs=1,
                                    extra_body={"ignore_eos": True})
    g = gen.choices[0].logprobs
    scored = score(client, server.model, PROMPT + gen.choices[0].text)
    s = scored.choices[0].logprobs
    if s.tokens[-len(g.tokens):] != g.tokens:
        pytest.skip("the generated text tokenizes differently as a prompt")
    for a, b in zip(g.token_logprobs, s.token_logprobs[-len(g.tokens):]):
        assert b == pytest.approx(a, abs=2e-3)


def test_vllm_prompt_logprobs(server, client):
    r = client.completions.create(model=server.model, prompt=PROMPT, max_tokens=1, temperature=0,
                                  extra_body={"prompt_logprobs": 3})
    c = r.choices[0]
    plp = c.model_extra["prompt_logprobs"]
    assert plp[0] is None and len(plp) == r.usage.prompt_tokens
    echo = score(client, server.model, PROMPT).choices[0].logprobs
    for entry, tok_lp, tok in zip(plp[1:], echo.token_logprobs[1:], echo.tokens[1:]):
        assert 3 <= len(entry) <= 4
        ranks = sorted(v["rank"] for v in entry.values() if v["rank"] is not None)
        assert ranks[:3] == [1, 2, 3]
        actual = [v for v in entry.values() if v["decoded_token"] == tok]
        assert actual and math.isclose(actual[0]["logprob"], tok_lp, abs_tol=1e-6)
    # Chat carries them at the top of the answer.
    r = client.chat.completions.create(model=server.model, messages=[{"role": "user", "content": "Hi"}],
                                       max_tokens=1, extra_body={"prompt_logprobs": 0})
    plp = r.model_extra["prompt_logprobs"]
    assert plp[0] is None and len(plp) == r.usage.prompt_tokens
    assert all(len(e) == 1 for e in plp[1:])


@pytest.mark.parametrize("body", [
    {"prompt": "Hi", "max_tokens": 0},                                  # nothing to score
    {"prompt": "Hi", "max_tokens": 1, "prompt_logprobs": 21},
    {"prompt": "Hi", "max_tokens": 1, "prompt_logprobs": 1, "stream": True},
    {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 0},
])
def test_scoring_errors(server, body):
    path = "/v1/chat/completions" if "messages" in body else "/v1/completions"
    status, raw = server.request("POST", path, {"model": server.model, **body})
    assert status == 400, raw
