"""vt.LLM.stream (the single-sequence loop) equals vt-generate's for the same
settings; streamed pieces equal the whole run; generate (the batched engine,
test_engine.py) gives consistent outputs; finish reasons; prompts as text
and as ids. The two paths' tokens are not compared: the engine keeps softmax
probabilities in f32 where the single-sequence path rounds them to f16 (as
llama.cpp), so near-ties may go either way."""
import subprocess

import pytest

import vt

PROMPTS = ["The capital of France is", "Once upon a time"]


def vt_generate_text(exe, model, prompt, n, *args):
    p = subprocess.run([str(exe), "-m", str(model), "-p", prompt, "-n", str(n), *args],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=300, check=True)
    return p.stdout.decode("utf-8", "replace")


CASES = [
    # (vt-generate flags, SamplingParams)
    (["--temp", "0"], dict(temperature=0)),
    (["--seed", "42"], dict(seed=42)),
    (["--seed", "7", "--temp", "1.1", "--top-k", "20", "--top-p", "0.8", "--min-p", "0.02",
      "--repeat-penalty", "1.3", "--repeat-last-n", "32"],
     dict(seed=7, temperature=1.1, top_k=20, top_p=0.8, min_p=0.02, repetition_penalty=1.3,
          penalty_last_n=32)),
]


@pytest.mark.parametrize("flags,params", CASES, ids=["greedy", "seeded", "seeded-penalties"])
def test_equals_vt_generate(llm, model_path, vt_generate, flags, params):
    sp = vt.SamplingParams(max_tokens=48, **params)
    for prompt in PROMPTS:
        want = vt_generate_text(vt_generate, model_path, prompt, 48, *flags)
        s = llm.stream(prompt, sp)
        assert "".join(s) == want, prompt
        out = s.output()
        assert out.text == want and out.prompt == prompt
        assert out.finish_reason in ("stop", "length")
        if out.finish_reason == "length":
            assert len(out.token_ids) == 48
    # generate: the text is the tokens' pieces concatenated; the same prompt
    # alone, as ids, gives the same tokens.
    for prompt, out in zip(PROMPTS, llm.generate(PROMPTS, sp)):
        assert out.prompt == prompt
        assert out.finish_reason in ("stop", "length")
        if out.finish_reason == "length":
            assert len(out.token_ids) == 48
        assert out.text == llm.tokenizer.detokenize(out.token_ids).decode("utf-8", "replace")
        again = llm.generate(prompt_token_ids=out.prompt_token_ids, sampling_params=sp)[0]
        assert again.token_ids == out.token_ids and again.prompt is None


def test_stream_equals_run(llm):
    # The streamed pieces of a generation equal the same loop run at once.
    for params in (vt.SamplingParams(temperature=0, max_tokens=40), vt.SamplingParams(seed=3, max_tokens=40)):
        for prompt in PROMPTS + ["Write the word café in five languages:"]:
            ids = llm.tokenizer.encode(prompt, add_special=True, parse_special=True)
            want = vt.Generation(llm.context.sequence(), params.sampler(), llm.tokenizer, ids,
                                 params.max_tokens, params.stop_token_ids)
            want.run()
            s = llm.stream(prompt, params)
            pieces = list(s)
            assert all(isinstance(p, str) and p for p in pieces)
            assert "".join(pieces) == want.text
            assert s.token_ids == want.token_ids
            assert s.finish_reason == want.finish_reason
            assert s.output() == vt.RequestOutput(prompt, ids, want.text, want.token_ids,
                                                  want.finish_reason, None)


def test_stream_never_splits_utf8(llm):
    # Greedy continuations of text in scripts that byte-level BPE splits
    # across tokens; each piece must be valid UTF-8 on its own. Only the last
    # piece may carry U+FFFD: when max_tokens ends the output inside a
    # character, the stream flushes its first bytes as the full decode does.
    for prompt in ["日本の首都は", "Emoji story: 🦙🦙", "Русский текст: Москва —"]:
        s = llm.stream(prompt, vt.SamplingParams(temperature=0, max_tokens=30))
        pieces = list(s)
        text = llm.tokenizer.decode(s.token_ids)
        assert "".join(pieces) == text
        for piece in pieces[:-1]:
            assert "\ufffd" not in piece, (prompt, piece)
        if "\ufffd" in pieces[-1]:
            assert text.endswith("\ufffd") and "\ufffd" not in text[:-1], (prompt, text)
        for piece in pieces:
            piece.encode("utf-8")  # no lone surrogates either


def test_finish_reasons(llm):
    greedy = vt.SamplingParams(temperature=0, max_tokens=24)
    base = llm.generate(PROMPTS[0], greedy)[0]
    assert base.finish_reason == "length" and len(base.token_ids) == 24
    # A stop token: the output ends before it, finish "stop", stop_reason the id.
    stop_id = base.token_ids[5]
    first = base.token_ids.index(stop_id)
    out = llm.generate(PROMPTS[0], vt.SamplingParams(temperature=0, max_tokens=24, stop_token_ids=[stop_id]))[0]
    assert out.token_ids == base.token_ids[:first]
    assert out.finish_reason == "stop" and out.stop_reason == stop_id
    # max_tokens=0: nothing, "length".
    out = llm.generate(PROMPTS[0], vt.SamplingParams(temperature=0, max_tokens=0))[0]
    assert out.token_ids == [] and out.text == "" and out.finish_reason == "length"
    # An end-of-generation token: a chat turn the instruct model closes.
    chat = "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"
    out = llm.generate(chat, vt.SamplingParams(temperature=0, max_tokens=200))[0]
    assert out.finish_reason == "stop" and out.stop_reason is None
    assert 0 < len(out.token_ids) < 200
    assert not any(llm.tokenizer.is_eog(t) for t in out.token_ids)


def test_per_prompt_params_and_defaults(llm):
    a = vt.SamplingParams(temperature=0, max_tokens=8)
    b = vt.SamplingParams(seed=5, max_tokens=12)
    outs = llm.generate(PROMPTS, [a, b])
    assert outs[0].token_ids == llm.generate(PROMPTS[0], a)[0].token_ids
    assert outs[1].token_ids == llm.generate(PROMPTS[1], b)[0].token_ids
    assert SamplingParamsDefaults.matches(vt.SamplingParams())
    with pytest.raises(ValueError):
        llm.generate(PROMPTS, [a])


class SamplingParamsDefaults:
    """vt-generate's defaults (examples/cli/vt-generate.cpp Options)."""

    @staticmethod
    def matches(p):
        return (p.temperature, p.top_k, p.top_p, p.min_p, p.repetition_penalty, p.penalty_last_n,
                p.max_tokens) == (pytest.approx(0.8), 40, pytest.approx(0.95), pytest.approx(0.05), 1.0, 64, 128)


def test_stream_superseded(llm):
    params = vt.SamplingParams(temperature=0, max_tokens=16)
    s = llm.stream(PROMPTS[0], params)
    first = next(s)
    assert first
    llm.stream(PROMPTS[1], params)  # takes the LLM's sequence
    assert list(s) == []
    assert s.finish_reason == "abort"
    s2 = llm.stream(PROMPTS[0], params)
    s2.close()
    assert list(s2) == [] and s2.finish_reason == "abort"


def test_tiny_model_generation(tiny):
    # Runs without the downloaded model: the mechanics on random weights.
    llm = vt.LLM(tiny, n_threads=1)
    greedy = vt.SamplingParams(temperature=0, max_tokens=20)
    out = llm.generate(prompt_token_ids=[1, 2, 3], sampling_params=greedy)[0]
    assert out.finish_reason in ("stop", "length")
    assert out.prompt_token_ids == [1, 2, 3]
    s = llm.stream([1, 2, 3], greedy)
    assert "".join(s) == s.text and s.finish_reason in ("stop", "length")
    assert len(s.token_ids) <= 20 and s.output().prompt_token_ids == [1, 2, 3]
    seeded = vt.SamplingParams(seed=11, max_tokens=20, temperature=1.5, top_k=0, top_p=1.0, min_p=0.0)
    a = llm.generate(prompt_token_ids=[5, 6], sampling_params=seeded)[0]
    b = llm.generate(prompt_token_ids=[5, 6], sampling_params=seeded)[0]
    assert a.token_ids == b.token_ids


def test_tiny_model_equals_vt_generate(tiny, tiny_path, vt_generate):
    prompt = "hello there"
    for flags, params in CASES:
        want = vt_generate_text(vt_generate, tiny_path, prompt, 24, "-t", "1", *flags)
        got = "".join(vt.LLM(tiny, n_threads=1).stream(prompt, vt.SamplingParams(max_tokens=24, **params)))
        assert got == want, flags
