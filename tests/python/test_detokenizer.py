"""vt.Detokenizer (Tokenizer.decode_stream): streaming decode over the C ABI's
vt_detokenizer, on llama.cpp's vocab-only GGUF files."""
import gc

import pytest

import vt

from test_tokenizer import families, read_cases

# Hugging Face tokenizers 0.23.3, run live: DecodeStream(skip_special_tokens=
# False).step(tok, id) for each id, on the tokenizer transformers builds from
# the same GGUF (PreTrainedTokenizerFast.from_pretrained(dir, gguf_file=...)).
# None (nothing yet) is "" here.
HF_CHUNKS = {
    "ggml-vocab-gpt-2.gguf": [
        ([15496, 12520, 99, 247, 995], ["Hello", "", "", " 🦙", " world"]),
        ([33768, 98, 17312, 105, 45739, 252], ["", "日", "", "本", "", "語"]),
        ([428, 318, 12520, 99, 247, 13, 20322], [" this", " is", "", "", " 🦙", ".", "cpp"]),
    ],
    "ggml-vocab-llama-spm.gguf": [
        ([15043, 29871, 243, 162, 169, 156, 3186], ["Hello", " ", "", "", "", "🦙", " world"]),
        ([29871, 30325, 30346, 30968], ["", "日", "本", "語"]),
        ([263, 10126], ["a", "éb"]),
    ],
}


def load(vocab_dir, name):
    p = vocab_dir / name
    if not p.exists():
        pytest.skip(f"{p} is missing")
    return vt.Tokenizer.from_file(p)


def test_streamed_vectors_equal_decode(vocab_dir):
    tested = []
    for gguf, inp, out in families(vocab_dir):
        try:
            tok = vt.Tokenizer.from_file(gguf)
        except vt.VtError:
            continue  # loading is test_tokenizer's subject
        d = tok.decode_stream()
        for text, _ in read_cases(inp, out):
            ids = tok.encode(text)
            chunks = [d.push(i) for i in ids] + [d.finish()]
            whole = tok.decode(ids)
            assert "".join(chunks) == whole, (gguf.name, text)
            if "\ufffd" not in whole:
                assert not any("\ufffd" in c for c in chunks), (gguf.name, text, chunks)
        tested.append(gguf.name)
    assert {"ggml-vocab-gpt-2.gguf", "ggml-vocab-llama-spm.gguf"} <= set(tested)


@pytest.mark.parametrize("name", sorted(HF_CHUNKS))
def test_chunks_equal_hf_decode_stream(vocab_dir, name):
    tok = load(vocab_dir, name)
    for ids, want in HF_CHUNKS[name]:
        d = vt.Detokenizer(tok)
        assert [d.push(i) for i in ids] == want
        assert d.finish() == ""
        assert tok.decode_stream().push(ids) == "".join(want)  # a list at once


def test_prefill_reset_finish(vocab_dir):
    spm = load(vocab_dir, "ggml-vocab-llama-spm.gguf")
    prompt = spm.encode("The capital of France is")
    paris = 3681  # "▁Paris"
    d = spm.decode_stream(prefill=prompt)
    assert d.push(paris) == " Paris"
    assert spm.decode(prompt + [paris]) == spm.decode(prompt) + " Paris"
    d.reset()  # no context: the first word loses its space, as in decode()
    assert d.push(paris) == "Paris"
    d.reset(prefill=prompt)
    assert d.push(paris) == " Paris"
    assert d.finish() == ""
    assert d.push(paris) == "Paris"  # finish starts over

    gpt2 = load(vocab_dir, "ggml-vocab-gpt-2.gguf")
    d = gpt2.decode_stream()
    # " 🦙" is 12520 99 247 (b" \xf0\x9f", b"\xa6", b"\x99"); cut after two.
    assert d.push([12520, 99]) == ""
    assert d.finish() == " \ufffd"  # the held-back bytes, replaced
    assert d.push([12520, 99]) == ""
    d.reset()
    assert d.push(995) == " world"
    # A prefill that ends inside a character: it comes out whole.
    d.reset(prefill=[15496, 12520, 99])
    assert d.push(247) == " 🦙"


def test_render_special_and_errors(vocab_dir):
    tok = load(vocab_dir, "ggml-vocab-gpt-2.gguf")
    assert tok.decode_stream().push(50256) == ""
    assert tok.decode_stream(render_special=True).push(50256) == "<|endoftext|>"
    d = tok.decode_stream()
    assert d.push(12520) == ""
    with pytest.raises(vt.VtInvalidArgument):
        d.push(tok.n_vocab)
    with pytest.raises(vt.VtInvalidArgument):
        d.reset(prefill=[1, -5])
    with pytest.raises(TypeError):
        d.push("x")
    # The failed reset left it empty; a failed push changes nothing.
    assert d.push([12520, 99]) == ""
    with pytest.raises(vt.VtInvalidArgument):
        d.push(-2)
    with pytest.raises(vt.VtInvalidArgument):
        d.push([247, tok.n_vocab])  # all or nothing
    assert d.push(247) == " 🦙"
    # The detokenizer keeps its tokenizer alive.
    d = vt.Tokenizer.from_file(tok_path(vocab_dir)).decode_stream()
    gc.collect()
    assert d.push(15496) == "Hello" and d.tokenizer.n_vocab == 50257


def tok_path(vocab_dir):
    return vocab_dir / "ggml-vocab-gpt-2.gguf"


def test_long_stream(vocab_dir):
    tok = load(vocab_dir, "ggml-vocab-gpt-2.gguf")
    text = (vocab_dir / "ggml-vocab-gpt-2.gguf.inp").read_text(encoding="utf-8") * 12
    ids = tok.encode(text)
    assert len(ids) >= 10000
    d = tok.decode_stream()
    assert "".join(d.push(i) for i in ids) + d.finish() == tok.decode(ids)
    # U+FFFD (4210) 10,000 times: held back as a possibly unfinished
    # character, but never more than 64 tokens at a time.
    chunks = [d.push(4210) for _ in range(10000)]
    assert max(len(c) for c in chunks) <= 64
    assert len("".join(chunks)) >= 10000 - 64
    assert "".join(chunks) + d.finish() == "\ufffd" * 10000
