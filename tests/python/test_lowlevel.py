"""vt.Context / vt.Sequence / vt.Sampler: logits as NumPy arrays, the
zero-copy view's rules, sampling from a sequence."""
import numpy as np
import pytest

import vt


@pytest.fixture(params=["tiny", "model"])
def any_model(request):
    return request.getfixturevalue(request.param)


def test_logits_shape_and_copy(any_model):
    m = any_model
    ctx = vt.Context(m, n_threads=1)
    seq = ctx.sequence(n_ctx=64)
    seq.feed([1, 2, 3, 4])
    seq.step()
    assert seq.n_past == 4
    a = seq.logits()
    assert isinstance(a, np.ndarray) and a.dtype == np.float32 and a.shape == (m.n_vocab,)
    assert a.flags.writeable and a.flags.c_contiguous and np.isfinite(a).all()
    a[:] = 0  # a copy: ours to change
    b = seq.logits()
    assert np.any(b != 0)
    # Greedy sampling from the sequence is the argmax.
    assert vt.Sampler().add_greedy().sample(seq) == int(np.argmax(b))
    assert vt.Sampler().add_greedy().sample(b) == int(np.argmax(b))
    assert vt.Sampler().add_greedy().sample(b.astype(np.float64).tolist()) == int(np.argmax(b))


def test_logits_view(tiny):
    seq = vt.Context(tiny, n_threads=1).sequence(n_ctx=32)
    seq.feed([7, 8])
    seq.step()
    v = seq.logits(copy=False)
    assert v.shape == (tiny.n_vocab,) and v.dtype == np.float32
    assert not v.flags.writeable and not v.flags.owndata
    with pytest.raises(ValueError):
        v[0] = 1.0
    np.testing.assert_array_equal(v, seq.logits())
    top = v[:10]  # a view of the view pins the buffer too
    del v
    seq.feed([9])
    with pytest.raises(BufferError):
        seq.step()
    with pytest.raises(BufferError):
        seq.reset()
    del top
    seq.step()  # no view left
    assert seq.n_past == 3
    # A view keeps its sequence alive.
    v = seq.logits(copy=False)
    want = v.copy()
    del seq
    np.testing.assert_array_equal(v, want)


def test_logits_all(tiny):
    seq = vt.Sequence(vt.Context(tiny, n_threads=1), n_ctx=32, logits_all=True)
    assert seq.logits_all
    seq.feed([1, 2, 3])
    seq.step()
    rows = np.stack([seq.logits(i) for i in range(3)])
    assert rows.shape == (3, tiny.n_vocab)
    np.testing.assert_array_equal(rows[2], seq.logits(-1))
    with pytest.raises(vt.VtInvalidArgument):
        seq.logits(3)
    # Teacher forcing: row i of one step equals the last row after i+1 tokens.
    one = vt.Context(tiny, n_threads=1).sequence(n_ctx=32)
    one.feed([1, 2])
    one.step()
    np.testing.assert_allclose(one.logits(), rows[1], rtol=1e-4, atol=1e-4)
    seq.reset()
    assert seq.n_past == 0


def test_manual_loop_equals_llm(tiny):
    # feed/step/sample/accept by hand is the loop LLM.stream runs.
    params = vt.SamplingParams(seed=9, temperature=1.2, top_k=0, top_p=1.0, min_p=0.0, max_tokens=12)
    want = vt.LLM(tiny, n_threads=1).stream([3, 4, 5], params)
    list(want)
    seq = vt.Context(tiny, n_threads=1).sequence()
    smpl = params.sampler()
    tok = tiny.tokenizer
    for t in [3, 4, 5]:
        smpl.accept(t)
    seq.feed([3, 4, 5])
    seq.step()
    got = []
    while len(got) < 12:
        t = smpl.sample(seq)
        if tok.is_eog(t):
            break
        got.append(t)
        smpl.accept(t)
        seq.feed([t])
        seq.step()
    assert got == want.token_ids


def test_sampler_chain():
    logits = np.array([0.0, 3.0, 1.0, 2.0], dtype=np.float32)
    assert vt.Sampler().add_greedy().sample(logits) == 1
    s = vt.Sampler().add_top_k(1).add_dist(seed=123)
    assert all(s.sample(logits) == 1 for _ in range(5))
    # Seeded draws repeat after reset().
    s = vt.Sampler().add_temp(2.0).add_dist(seed=5)
    draws = [s.sample(logits) for _ in range(20)]
    s.reset()
    assert [s.sample(logits) for _ in range(20)] == draws
    # A strong repetition penalty moves greedy off an accepted token.
    p = vt.Sampler().add_penalties(last_n=-1, repeat=100.0).add_greedy()
    p.accept(1)
    assert p.sample(logits) == 3
    assert p.has_final and not vt.Sampler().has_final
