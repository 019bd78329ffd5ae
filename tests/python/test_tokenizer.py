"""vt.Tokenizer through the ABI: llama.cpp's vocabulary test vectors (as the
C++ unit test reads them), round trips, special tokens, pieces."""
import pytest

import vt

SEP = "\n__ggml_vocab_test__\n"


def read_cases(inp, out):
    raw = inp.read_bytes().decode("utf-8")
    texts = raw.split(SEP)
    if texts and texts[-1] == "":
        texts.pop()
    lines = out.read_text(encoding="utf-8").split("\n")
    return [(t, [int(x) for x in lines[i].split()]) for i, t in enumerate(texts)]


def families(vocab_dir):
    for inp in sorted(vocab_dir.glob("ggml-vocab-*.gguf.inp")):
        gguf = inp.with_suffix("")
        out = inp.with_suffix(".out")
        if gguf.exists() and out.exists():
            yield gguf, inp, out


def test_vocab_vectors_and_round_trips(vocab_dir):
    tested = []
    for gguf, inp, out in families(vocab_dir):
        try:
            tok = vt.Tokenizer.from_file(gguf)
        except vt.VtUnsupportedError:
            continue  # the C++ test skips these too
        cases = read_cases(inp, out)
        # WordPiece (bert) lowercases and drops whitespace: no round trip;
        # its decode is compared with HF's in tests/tokenizers.
        lossless = not gguf.name.startswith("ggml-vocab-bert")
        for text, ids in cases:
            assert tok.encode(text) == ids, (gguf.name, text)
            if lossless:
                assert tok.decode(ids) == text, (gguf.name, text)
        tested.append(gguf.name)
    if not tested:
        pytest.skip(f"no loadable ggml-vocab-*.gguf with .inp/.out in {vocab_dir}")
    assert "ggml-vocab-gpt-2.gguf" in tested


def test_gpt2_tokenizer_api(vocab_dir):
    p = vocab_dir / "ggml-vocab-gpt-2.gguf"
    if not p.exists():
        pytest.skip(f"{p} is missing")
    tok = vt.Tokenizer.from_file(str(p))
    assert len(tok) == tok.n_vocab == 50257
    ids = tok.encode("Hello world")
    assert ids == [15496, 995]
    assert tok.encode(b"Hello world") == ids  # bytes are UTF-8
    assert tok.token_to_piece(995) == b" world"
    assert tok.detokenize(ids) == b"Hello world"
    assert tok.eos == 50256 and tok.is_eog(50256) and not tok.is_eog(995)
    # A character split across byte tokens: pieces are bytes, decode() replaces.
    ids = tok.encode("🦙")
    pieces = [tok.token_to_piece(i) for i in ids]
    assert len(ids) > 1 and b"".join(pieces) == "🦙".encode()
    assert tok.decode(ids[:1]) == "\ufffd" * len(tok.decode(ids[:1]))
    with pytest.raises(UnicodeDecodeError):
        tok.decode(ids[:1], errors="strict")
    # Unicode round trip of a longer text.
    text = "Ünïcödé — 日本語のテキスト and emoji 🦙🚀 mixed with ASCII.\n\tTabs too."
    assert tok.decode(tok.encode(text)) == text


def test_model_tokenizer(model):
    tok = model.tokenizer
    assert tok.n_vocab == model.n_vocab == 49152
    assert tok.bos == 1 and tok.eos == 2
    # Control-token text becomes the token only with parse_special.
    assert len(tok.encode("<|im_start|>", parse_special=True)) == 1
    assert len(tok.encode("<|im_start|>")) > 1
    im_end = tok.encode("<|im_end|>", parse_special=True)[0]
    assert tok.is_eog(im_end)
    assert tok.token_to_piece(im_end) == b""
    assert tok.token_to_piece(im_end, render_special=True) == b"<|im_end|>"
    text = "The quick brown fox jumps over the lazy dog. 1234567890 ÄÖÜ"
    assert tok.decode(tok.encode(text)) == text
    # The tokenizer keeps its model alive.
    del model
    assert tok.decode(tok.encode("still alive")) == "still alive"


def test_model_metadata(model):
    assert model.arch == "llama"
    assert model.n_vocab == 49152
    assert model.n_ctx_train == 8192
    assert 130e6 < model.n_params < 140e6
    assert model.n_layer == 30 and model.n_embd == 576
    assert model.meta["general.architecture"] == "llama"
    assert "general.architecture" in model.meta
    assert model.meta.get("no.such.key") is None
    with pytest.raises(KeyError):
        model.meta["no.such.key"]
    keys = list(model.meta)
    assert len(keys) == len(model.meta) and "tokenizer.ggml.model" in keys
    import collections.abc
    assert isinstance(model.meta, collections.abc.Mapping)
    assert "im_start" in model.chat_template


def test_tiny_model_metadata(tiny):
    assert tiny.arch == "llama"
    assert tiny.n_vocab == 261
    assert tiny.chat_template is None
    assert tiny.n_layer == 2 and tiny.n_head == 4 and tiny.n_head_kv == 2
    assert "tiny" in repr(tiny)
