"""Several Python threads over one shared vt.Model, each with its own LLM or
Context, run concurrently (the GIL is released) and give the same tokens as
sequential runs; one LLM shared by threads is serialized, not corrupted."""
import threading

import pytest

import vt

PROMPTS = [[1, 2, 3], [10, 20, 30, 40], [100, 7], [42]]
KV = "64MiB"  # each LLM's engine pool (see conftest.TEST_KV_MEMORY)


def run_threads(fn, n):
    results, errors = [None] * n, []

    def body(i):
        try:
            results[i] = fn(i)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    return results


@pytest.fixture(params=["tiny", "model"])
def shared(request):
    return request.getfixturevalue(request.param)


def test_llm_per_thread(shared):
    params = vt.SamplingParams(temperature=0, max_tokens=16)
    want = [vt.LLM(shared, n_threads=1, kv_cache_memory=KV).generate(prompt_token_ids=p, sampling_params=params)[0].token_ids
            for p in PROMPTS]

    def work(i):
        llm = vt.LLM(shared, n_threads=1, kv_cache_memory=KV)
        return [llm.generate(prompt_token_ids=PROMPTS[i], sampling_params=params)[0].token_ids for _ in range(2)]

    got = run_threads(work, len(PROMPTS))
    for i, runs in enumerate(got):
        assert runs == [want[i], want[i]]


def test_context_per_thread_and_shared_tokenizer(shared):
    tok = shared.tokenizer

    def work(i):
        seq = vt.Context(shared, n_threads=1).sequence(n_ctx=64)
        smpl = vt.Sampler().add_greedy()
        seq.feed(PROMPTS[i])
        seq.step()
        out = []
        for _ in range(8):
            t = smpl.sample(seq)
            out.append(t)
            seq.feed([t])
            seq.step()
            tok.decode(out)  # the model's tokenizer, shared
        return out

    seq_results = [work(i) for i in range(len(PROMPTS))]
    assert run_threads(work, len(PROMPTS)) == seq_results


def test_one_llm_shared_by_threads(tiny):
    llm = vt.LLM(tiny, n_threads=1)
    params = vt.SamplingParams(seed=1, temperature=1.0, max_tokens=12)
    want = [llm.generate(prompt_token_ids=p, sampling_params=params)[0].token_ids for p in PROMPTS]
    got = run_threads(lambda i: llm.generate(prompt_token_ids=PROMPTS[i], sampling_params=params)[0].token_ids,
                      len(PROMPTS))
    assert got == want
    # One Context stepped from several threads: each call holds its lock.
    ctx = vt.Context(tiny, n_threads=1)
    seqs = [ctx.sequence(n_ctx=64) for _ in PROMPTS]

    def step_many(i):
        for _ in range(5):
            seqs[i].feed(PROMPTS[i])
            seqs[i].step()
        return seqs[i].n_past

    assert run_threads(step_many, len(PROMPTS)) == [5 * len(p) for p in PROMPTS]
