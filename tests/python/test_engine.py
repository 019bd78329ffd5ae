"""The serving engine from Python: LLM.generate runs its prompts batched, and
a prompt's output is the same alone or in a batch (greedy and seeded); stop
strings, max_tokens, stop tokens, logprobs; the KV pool is empty after a run;
bad arguments raise; Context.submit/step/poll/cancel/stats at the low level;
KeyboardInterrupt cancels what is running. Mostly on the tiny random-weight
model; one case on SmolLM2 (VT_TEST_MODEL)."""
import _thread

import numpy as np
import pytest

import vt

# Distinct prompts of several lengths over the tiny model's byte vocabulary
# (as tests/abi/test-abi-engine.cpp).
TINY_PROMPTS = [[32 + (i * 31 + k * 17) % 90 for k in range(3 + (i * 7) % 29)] for i in range(8)]

SMOL_PROMPTS = ["The capital of France is", "Once upon a time", "def fibonacci(n):",
                "The three primary colors are", "1, 2, 3, 4,", "Water boils at",
                "The quick brown fox", "In 1492, Columbus"]


def tiny_llm(tiny, **kw):
    kw.setdefault("kv_cache_memory", "4MiB")
    return vt.LLM(tiny, n_threads=1, **kw)


def seeded(seed, **kw):
    return vt.SamplingParams(seed=seed, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, **kw)


def assert_pool_empty(llm, n_finished=None):
    s = llm.context.stats()
    assert s["kv_blocks_used"] == 0 and s["n_running"] == 0 and s["n_waiting"] == 0, s
    assert s["kv_blocks_total"] > 0
    if n_finished is not None:
        assert s["requests_finished"] == n_finished


def test_greedy_batch_equals_each_alone(tiny):
    params = [vt.SamplingParams(temperature=0, max_tokens=10 + i % 5) for i in range(8)]
    alone_llm = tiny_llm(tiny)
    alone = [alone_llm.generate(prompt_token_ids=p, sampling_params=sp)[0]
             for p, sp in zip(TINY_PROMPTS, params)]
    # A small token budget per step: prompts are chunked and mixed with decodes.
    llm = tiny_llm(tiny, n_batch=24, enable_prefix_caching=False)
    batch = llm.generate(prompt_token_ids=TINY_PROMPTS, sampling_params=params)
    assert len(batch) == 8
    for i, (a, b) in enumerate(zip(alone, batch)):
        assert b.prompt_token_ids == TINY_PROMPTS[i] and b.prompt is None
        assert b.token_ids == a.token_ids, i
        assert b.text == a.text and b.finish_reason == a.finish_reason
        if b.finish_reason == "length":
            assert len(b.token_ids) == params[i].max_tokens
        assert b.num_cached_tokens == 0
    assert_pool_empty(llm, n_finished=8)
    assert llm.context.stats()["generated_tokens"] >= sum(len(b.token_ids) for b in batch)


def test_seeded_sampling_alone_equals_batched(tiny):
    params = [seeded(100 + i, max_tokens=16) for i in range(8)]
    alone_llm = tiny_llm(tiny)
    alone = [alone_llm.generate(prompt_token_ids=p, sampling_params=sp)[0].token_ids
             for p, sp in zip(TINY_PROMPTS, params)]
    llm = tiny_llm(tiny, n_batch=32)
    batch = [o.token_ids for o in llm.generate(prompt_token_ids=TINY_PROMPTS, sampling_params=params)]
    assert batch == alone
    # The same seed for every prompt: each prompt still draws its own stream.
    same = seeded(7, max_tokens=16)
    twice = [llm.generate(prompt_token_ids=TINY_PROMPTS, sampling_params=same) for _ in range(2)]
    assert [o.token_ids for o in twice[0]] == [o.token_ids for o in twice[1]]
    assert twice[0][3].token_ids == llm.generate(prompt_token_ids=TINY_PROMPTS[3], sampling_params=same)[0].token_ids
    # Sampling differs from greedy somewhere (the seed is used).
    greedy = llm.generate(prompt_token_ids=TINY_PROMPTS, sampling_params=vt.SamplingParams(temperature=0, max_tokens=16))
    assert [o.token_ids for o in greedy] != [o.token_ids for o in twice[0]]
    assert_pool_empty(llm)


def test_stop_strings_cut_the_text(tiny):
    llm = tiny_llm(tiny)
    checked = 0
    for prompt in TINY_PROMPTS:
        full = llm.generate(prompt_token_ids=prompt, sampling_params=vt.SamplingParams(
            temperature=0, max_tokens=40, ignore_eos=True))[0]
        text = full.text
        if len(text) < 12:
            continue
        stop = text[len(text) // 2:len(text) // 2 + 3]
        if not all(0x20 <= ord(c) < 0x7f for c in stop):  # random weights: arbitrary bytes
            continue
        at = text.find(stop)
        out = llm.generate(prompt_token_ids=prompt, sampling_params=vt.SamplingParams(
            temperature=0, max_tokens=40, ignore_eos=True, stop=[stop, "never-matches-\x01"]))[0]
        assert out.text == text[:at], stop
        assert stop not in out.text
        assert out.finish_reason == "stop" and out.stop_reason == stop
        # The tokens up to the one that completed the stop string are kept (as vLLM).
        assert out.token_ids == full.token_ids[:len(out.token_ids)]
        assert 0 < len(out.token_ids) < len(full.token_ids)
        checked += 1
    assert checked >= 2
    assert_pool_empty(llm)


def test_max_tokens_stop_tokens_and_eos(tiny):
    llm = tiny_llm(tiny)
    p = TINY_PROMPTS[1]
    out = llm.generate(prompt_token_ids=p, sampling_params=vt.SamplingParams(
        temperature=0, max_tokens=7, ignore_eos=True))[0]
    assert out.finish_reason == "length" and len(out.token_ids) == 7 and out.stop_reason is None
    # max_tokens=0: nothing, "length" (the engine is not asked).
    zero = llm.generate(prompt_token_ids=p, sampling_params=vt.SamplingParams(temperature=0, max_tokens=0))[0]
    assert zero.token_ids == [] and zero.text == "" and zero.finish_reason == "length"
    # A stop token ends before it; stop_reason is the id.
    stop_id = out.token_ids[4]
    first = out.token_ids.index(stop_id)
    cut = llm.generate(prompt_token_ids=p, sampling_params=vt.SamplingParams(
        temperature=0, max_tokens=7, ignore_eos=True, stop_token_ids=[stop_id]))[0]
    assert cut.token_ids == out.token_ids[:first]
    assert cut.finish_reason == "stop" and cut.stop_reason == stop_id
    # The end-of-generation token ends a request unless ignore_eos, and is never output.
    eos = llm.tokenizer.eos
    assert eos is not None
    plain = llm.generate(prompt_token_ids=p, sampling_params=vt.SamplingParams(
        temperature=0, max_tokens=7, stop_token_ids=[stop_id]))[0]
    assert eos not in plain.token_ids
    assert_pool_empty(llm)


def test_logprobs(tiny):
    llm = tiny_llm(tiny)
    prompt = TINY_PROMPTS[5]
    out = llm.generate(prompt_token_ids=prompt, sampling_params=vt.SamplingParams(
        temperature=0, max_tokens=6, ignore_eos=True, logprobs=3))[0]
    assert len(out.logprobs) == len(out.token_ids) == 6
    for tok, entry in zip(out.token_ids, out.logprobs):
        assert tok in entry and 3 <= len(entry) <= 4
        assert entry[tok] == max(entry.values())  # greedy picks the most likely
        assert all(v <= 0.0 for v in entry.values())
    # The first token's log-probability is the log-softmax of the prompt's
    # logits (the single-sequence path's; its attention numerics differ a little).
    seq = vt.Context(tiny, n_threads=1).sequence()
    seq.feed(prompt)
    seq.step()
    lg = seq.logits().astype(np.float64)
    log_z = lg.max() + np.log(np.exp(lg - lg.max()).sum())
    assert out.logprobs[0][out.token_ids[0]] == pytest.approx(lg[out.token_ids[0]] - log_z, abs=2e-3)
    assert llm.generate(prompt_token_ids=prompt, sampling_params=vt.SamplingParams(
        temperature=0, max_tokens=2))[0].logprobs is None


def test_bad_arguments(tiny):
    with pytest.raises(vt.VtInvalidArgument):
        vt.SamplingParams(logprobs=21)
    with pytest.raises(vt.VtInvalidArgument):
        vt.SamplingParams(stop=[""])
    with pytest.raises(ValueError):
        vt.SamplingParams(stop=["ok", 3])
    with pytest.raises(vt.VtInvalidArgument):
        vt.LLM(tiny, kv_cache_memory="lots")
    with pytest.raises(vt.VtInvalidArgument):
        vt.LLM(tiny, kv_cache_memory=-1)
    llm = tiny_llm(tiny, max_model_len=32)
    greedy = vt.SamplingParams(temperature=0, max_tokens=4)
    with pytest.raises(vt.VtInvalidArgument, match="vocabulary"):
        llm.generate(prompt_token_ids=[1, tiny.n_vocab], sampling_params=greedy)
    with pytest.raises(vt.VtContextFull):
        llm.generate(prompt_token_ids=[[1, 2], list(range(1, 40))], sampling_params=greedy)
    with pytest.raises(vt.VtInvalidArgument, match="empty"):
        llm.generate(prompt_token_ids=[[]], sampling_params=greedy)
    with pytest.raises(vt.VtInvalidArgument):
        llm.stream([1, 2], vt.SamplingParams(stop=["x"]))
    # A failed batch leaves nothing queued or running; the LLM still works.
    assert_pool_empty(llm)
    out = llm.generate(prompt_token_ids=[[1, 2], [3, 4, 5]], sampling_params=greedy)
    assert [len(o.token_ids) <= 4 for o in out] == [True, True]
    assert llm.context.stats()["max_model_len"] == 32
    ctx = llm.context
    with pytest.raises(vt.VtInvalidArgument):
        ctx.submit([1, 2], max_tokens=0)
    with pytest.raises(vt.VtInvalidArgument):
        ctx.submit([1, 2], top_logprobs=21)
    with pytest.raises(vt.VtInvalidArgument):
        ctx.submit([1, 2], stop=[""])
    with pytest.raises(vt.VtInvalidState):
        ctx.submit([1, 2], sampler=vt.Sampler().add_top_k(3))  # no final stage
    assert ctx.stats()["n_waiting"] == 0


def drain(ctx, ids, max_steps=10000):
    """Steps until every id has its last event; returns {id: [events]}."""
    events = {i: [] for i in ids}
    for _ in range(max_steps):
        if all(ev and ev[-1].finish_reason for ev in events.values()):
            break
        ctx.step(10)
        for ev in ctx.poll():
            events[ev.request_id].append(ev)
    return events


def test_low_level_submit_step_poll_cancel(tiny):
    ctx = vt.Context(tiny, n_threads=1, kv_cache_bytes=1 << 20, kv_block_size=16, max_num_seqs=4)
    assert ctx.stats()["kv_blocks_total"] == 0  # the pool comes with the first submit
    assert ctx.poll() == [] and ctx.step(0) == 0
    smpl = vt.Sampler().add_top_k(20).add_temp(0.9).add_dist(seed=5)
    a = ctx.submit(TINY_PROMPTS[0], max_tokens=8, ignore_eos=True)
    b = ctx.submit(TINY_PROMPTS[1], max_tokens=8, sampler=smpl, ignore_eos=True, logprobs=True, top_logprobs=2)
    c = ctx.submit(TINY_PROMPTS[2], max_tokens=500, ignore_eos=True)
    assert 0 < a < b < c
    # The sampler now belongs to request b: the Python object is empty.
    assert not smpl.has_final and "moved" in repr(smpl)
    with pytest.raises(vt.VtInvalidState, match="moved"):
        smpl.add_greedy()
    with pytest.raises(vt.VtInvalidState):
        smpl.sample(np.zeros(4, np.float32))
    with pytest.raises(vt.VtInvalidState):
        ctx.submit(TINY_PROMPTS[3], sampler=smpl)
    for _ in range(3):
        assert ctx.step(0) > 0
    assert ctx.stats()["kv_blocks_used"] > 0
    ctx.cancel(c)
    ev = drain(ctx, [a, b, c])
    for rid, prompt in ((a, TINY_PROMPTS[0]), (b, TINY_PROMPTS[1])):
        toks = [e.token for e in ev[rid] if e.token is not None]
        assert len(toks) == 8 and ev[rid][-1].finish_reason == "length"
        assert [e.n_output_tokens for e in ev[rid] if e.token is not None] == list(range(1, 9))
        assert all(e.n_prompt_tokens == len(prompt) and e.request_id == rid for e in ev[rid])
    assert all(len(e.top_logprobs) == 2 and e.logprob <= 0.0 for e in ev[b])
    assert ev[c][-1].finish_reason == "abort"
    assert sum(e.finish_reason is not None for e in ev[c]) == 1
    assert len(ev[c]) < 500
    ev[c][-1].check()  # not an error: does not raise
    ctx.cancel(c)  # finished and unknown ids are ignored
    ctx.cancel(123456)
    s = ctx.stats()
    assert s["kv_blocks_used"] == 0 and s["requests_finished"] == 3 and s["kv_block_size"] == 16
    # Greedy through the low level equals LLM.generate (both the engine).
    want = vt.LLM(tiny, n_threads=1, kv_cache_memory=1 << 20).generate(
        prompt_token_ids=TINY_PROMPTS[0], sampling_params=vt.SamplingParams(temperature=0, max_tokens=8,
                                                                           ignore_eos=True))[0]
    assert [e.token for e in ev[a] if e.token is not None] == want.token_ids
    assert "".join(e.text for e in ev[a]) == want.text
    # A failed submit leaves the sampler with the caller.
    keep = vt.Sampler().add_greedy()
    with pytest.raises(vt.VtInvalidArgument):
        ctx.submit([], sampler=keep)
    assert keep.has_final and keep.sample(np.array([0.0, 2.0, 1.0], np.float32)) == 1


class InterruptingContext:
    """A vt.Context whose nth step() delivers a real Ctrl-C (SIGINT's effect)."""

    def __init__(self, ctx, n):
        self._ctx, self._n = ctx, n

    def step(self, wait_ms=0):
        self._n -= 1
        if self._n == 0:
            _thread.interrupt_main()
        return self._ctx.step(wait_ms)

    def __getattr__(self, name):
        return getattr(self._ctx, name)


def test_keyboard_interrupt_cancels_the_batch(tiny):
    llm = tiny_llm(tiny)
    real = llm.context
    llm.context = InterruptingContext(real, 5)
    params = vt.SamplingParams(temperature=0, max_tokens=400, ignore_eos=True)
    with pytest.raises(KeyboardInterrupt):
        llm.generate(prompt_token_ids=TINY_PROMPTS, sampling_params=params)
    llm.context = real
    s = real.stats()
    assert s["requests_finished"] == 8 and s["generated_tokens"] <= 5 * 8  # 5 steps at most
    assert_pool_empty(llm)
    assert real.poll() == []  # the cancelled requests' events were drained
    out = llm.generate(prompt_token_ids=TINY_PROMPTS[:2], sampling_params=vt.SamplingParams(
        temperature=0, max_tokens=5, ignore_eos=True))
    assert [len(o.token_ids) for o in out] == [5, 5]


def test_generate_leaves_a_stream_alone(tiny):
    llm = tiny_llm(tiny)
    greedy = vt.SamplingParams(temperature=0, max_tokens=12)
    want = list(llm.stream(TINY_PROMPTS[0], greedy))
    assert len(want) >= 2
    s = llm.stream(TINY_PROMPTS[0], greedy)
    first = next(s)
    llm.generate(prompt_token_ids=TINY_PROMPTS[:3], sampling_params=greedy)
    assert [first] + list(s) == want


def test_smollm2_batched_generate(model):
    llm = vt.LLM(model, kv_cache_memory="256MiB", n_batch=128, max_num_seqs=8)
    greedy = vt.SamplingParams(temperature=0, max_tokens=24)
    batch = llm.generate(SMOL_PROMPTS, greedy)
    assert [o.prompt for o in batch] == SMOL_PROMPTS
    for prompt, out in zip(SMOL_PROMPTS, batch):
        alone = llm.generate(prompt, greedy)[0]
        assert alone.token_ids == out.token_ids and alone.text == out.text, prompt
        assert out.finish_reason == "length" and len(out.token_ids) == 24
        assert out.text == llm.tokenizer.detokenize(out.token_ids).decode("utf-8", "replace")
    # A long prompt run again comes from the prefix cache: its full blocks of
    # 16 tokens but the one holding its last token, which is always computed.
    long = " ".join(SMOL_PROMPTS)
    first, again = (llm.generate(long, greedy)[0] for _ in range(2))
    n = len(first.prompt_token_ids)
    assert n > 32 and first.num_cached_tokens == 0
    assert again.num_cached_tokens == (n - 1) // 16 * 16 and again.token_ids == first.token_ids
    # Stop strings on real text: "." ends the sentence about France.
    out = llm.generate(SMOL_PROMPTS[0], vt.SamplingParams(temperature=0, max_tokens=24, stop=["."]))[0]
    assert out.finish_reason == "stop" and out.stop_reason == "." and "." not in out.text
    assert batch[0].text.startswith(out.text)
    s = llm.context.stats()
    assert s["kv_blocks_used"] == 0 and s["prefix_hit_tokens"] > 0
    assert s["kv_cache_bytes"] <= 256 << 20
