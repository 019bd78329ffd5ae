"""vt_status -> exception classes: bad paths, bad files, bad arguments."""
import pytest

import vt


def check_error(excinfo, cls, status_name):
    e = excinfo.value
    assert type(e) is cls
    assert isinstance(e, vt.VtError)
    assert e.status == vt.STATUS_CODES[status_name]
    assert e.status_name == status_name
    assert str(e)  # vt_last_error()'s message, never empty


def test_hierarchy():
    assert issubclass(vt.VtInvalidArgument, ValueError)
    assert issubclass(vt.VtIOError, OSError)
    assert issubclass(vt.VtOutOfMemory, MemoryError)
    assert issubclass(vt.VtInvalidUTF8, UnicodeError)
    assert issubclass(vt.VtNotFound, LookupError)
    assert issubclass(vt.VtInvalidState, RuntimeError)
    for cls in (vt.VtFormatError, vt.VtUnsupportedError, vt.VtCancelled, vt.VtContextFull):
        assert issubclass(cls, vt.VtError)
    assert vt.status_str(vt.STATUS_CODES["VT_ERR_IO"]) == "input/output error"


def test_missing_file(tmp_path):
    with pytest.raises(vt.VtIOError) as ei:
        vt.Model(tmp_path / "no-such-model.gguf")
    check_error(ei, vt.VtIOError, "VT_ERR_IO")
    assert "no-such-model.gguf" in str(ei.value)
    with pytest.raises(OSError):  # catchable as the builtin too
        vt.Tokenizer.from_file(tmp_path / "no-such-vocab.gguf")


def test_directory(tmp_path):
    with pytest.raises(vt.VtIOError) as ei:
        vt.Model(tmp_path)
    check_error(ei, vt.VtIOError, "VT_ERR_IO")


def test_not_gguf(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("this is plain text, not a GGUF model\n" * 4)
    with pytest.raises(vt.VtFormatError) as ei:
        vt.Model(p)
    check_error(ei, vt.VtFormatError, "VT_ERR_FORMAT")


def test_truncated(tiny_path, tmp_path):
    data = tiny_path.read_bytes()
    p = tmp_path / "truncated.gguf"
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(vt.VtFormatError) as ei:
        vt.Model(p)
    check_error(ei, vt.VtFormatError, "VT_ERR_FORMAT")


def test_unsupported_arch(tiny_other_arch_path):
    with pytest.raises(vt.VtUnsupportedError) as ei:
        vt.Model(tiny_other_arch_path)
    check_error(ei, vt.VtUnsupportedError, "VT_ERR_UNSUPPORTED")
    assert "mamba9" in str(ei.value)


def test_progress_cancel_and_raise(tiny_path):
    seen = []
    vt.Model(tiny_path, progress=seen.append)  # None from the callable = go on
    assert seen and seen[-1] == pytest.approx(1.0)
    with pytest.raises(vt.VtCancelled) as ei:
        vt.Model(tiny_path, progress=lambda p: False)
    check_error(ei, vt.VtCancelled, "VT_ERR_CANCELLED")

    def boom(p):
        raise KeyError("from the callback")

    with pytest.raises(KeyError, match="from the callback"):
        vt.Model(tiny_path, progress=boom)


def test_bad_arguments(tiny):
    tok = tiny.tokenizer
    with pytest.raises(vt.VtInvalidUTF8) as ei:
        tok.encode(b"ok \xff\xfe")
    check_error(ei, vt.VtInvalidUTF8, "VT_ERR_INVALID_UTF8")
    with pytest.raises(vt.VtInvalidArgument) as ei:
        tok.decode([tok.n_vocab + 5])
    check_error(ei, vt.VtInvalidArgument, "VT_ERR_INVALID_ARGUMENT")
    with pytest.raises(ValueError):
        tok.token_to_piece(-3)
    with pytest.raises(TypeError):
        tok.encode(123)
    with pytest.raises(vt.VtNotFound) as ei:
        vt.Context(tiny, backend="no-such-backend")
    check_error(ei, vt.VtNotFound, "VT_ERR_NOT_FOUND")
    with pytest.raises(vt.VtInvalidArgument):
        vt.Context(tiny, n_threads=100000)
    with pytest.raises(vt.VtInvalidArgument):
        vt.set_log_level(9)


def test_sequence_misuse(tiny):
    ctx = vt.Context(tiny, n_threads=1)
    seq = ctx.sequence(n_ctx=8)
    with pytest.raises(vt.VtInvalidState) as ei:
        seq.step()  # nothing fed
    check_error(ei, vt.VtInvalidState, "VT_ERR_INVALID_STATE")
    with pytest.raises(vt.VtContextFull) as ei:
        seq.feed(list(range(1, 10)))  # 9 tokens > n_ctx 8
    check_error(ei, vt.VtContextFull, "VT_ERR_CONTEXT_FULL")
    with pytest.raises(vt.VtInvalidArgument):
        seq.feed([tiny.n_vocab])  # outside the vocabulary
    seq.feed([1, 2, 3])
    seq.step()
    with pytest.raises(vt.VtInvalidArgument):
        seq.logits(0)  # other rows need logits_all
    assert seq.n_past == 3


def test_sampling_params_validated():
    with pytest.raises(vt.VtInvalidArgument):
        vt.SamplingParams(top_p=1.5)
    with pytest.raises(ValueError):
        vt.SamplingParams(min_p=-0.1)
    with pytest.raises(ValueError):
        vt.SamplingParams(seed=2**32)
    with pytest.raises(ValueError):
        vt.SamplingParams(max_tokens=-1)
    with pytest.raises(vt.VtInvalidState):
        vt.Sampler().add_greedy().add_top_k(3)  # a stage after the final one
    with pytest.raises(vt.VtInvalidState):
        vt.Sampler().add_top_k(3).sample([0.0, 1.0])  # no final stage


def test_llm_prompt_errors(tiny):
    llm = vt.LLM(tiny, n_threads=1, n_ctx=16)
    with pytest.raises(vt.VtInvalidArgument, match="empty"):
        llm.generate(prompt_token_ids=[[]])
    with pytest.raises(vt.VtContextFull):
        llm.generate(prompt_token_ids=list(range(1, 40)))
    with pytest.raises(vt.VtInvalidArgument):
        llm.generate()  # neither prompts nor ids
    # The LLM is still usable after errors.
    out = llm.generate(prompt_token_ids=[1, 2, 3], sampling_params=vt.SamplingParams(temperature=0, max_tokens=4))
    assert len(out[0].token_ids) <= 4
