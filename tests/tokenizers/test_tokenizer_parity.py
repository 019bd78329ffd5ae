"""The tokenizer parity gate: vt.Tokenizer against the reference tokenizers.

The expected ids are goldens/<name>.json, written by make-goldens.py from
the oracles run live (HF tokenizers/transformers, sentencepiece, tiktoken),
and llama.cpp's .out vectors in ../shared/data. Each golden lists the files
vt loads the same tokenizer from (raw vocabulary files, tokenizer.json
fixtures, GGUF); every one must give the golden ids. A source whose data,
fixture or model is absent is skipped with the reason.

Modes (how vt.encode is called; goldens/README.md has the oracle side):
  plain      add_special=False, parse_special=False
  parse      add_special=False, parse_special=True   (HF encode(add_special_tokens=False))
  add_parse  add_special=True,  parse_special=True   (HF encode(text))

A load may narrow what it is held to (goldens/README.md, "loads"):
  no_specials  the files define no special tokens and no post-processor
               (Llama 3's encoder.json + vocab.bpe): plain-mode encodings
               only, and decodes whose ids are all below vt's n_vocab.
A probe's "plain_guard" lists special ids the oracle produced from plain
text (HF's Unigram matches special pieces that are also vocabulary); vt's
plain mode never does, and is held to that guard for that probe (the unk id
excepted: unknown characters map to it; tests/unit/test-tokenizer-pipeline
checks the guard where unk and the special piece differ).
A golden's "deviations" replace the oracle's ids of a few named cases where
the oracle is known to be wrong for the loads listed there, each with its
reason and the ids of an independent reference; vt is held to those.
"""
from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

import pytest

import vt

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "examples" / "models"))
import stress_inputs as si  # noqa: E402

MODES = {"plain": (False, False), "parse": (False, True), "add_parse": (True, True)}
GOLDENS = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted((HERE / "goldens").glob("*.json"))}
CASES = [(name, i) for name, g in GOLDENS.items() for i in range(len(g["loads"]))]
CASE_IDS = [f"{name}@{g['loads'][i]['root']}:{g['loads'][i]['path']}" for name, i in CASES
            for g in [GOLDENS[name]]]


def load_path(load: dict) -> Path:
    root, path = load["root"], load["path"]
    if root == "shared":
        p = si.tokenizer_data() / path
        hint = "../shared/data/tokenizers is part of the shared test data"
    elif root == "fixtures":
        p = si.fixtures_dir() / path
        hint = "run tests/tokenizers/make-goldens.py --fixtures-only (tests/run.sh does)"
    else:
        import vt_models
        p = vt_models.cached_path(path)
        hint = f"fetch it with examples/models/vt_models.py fetch {path}"
    if not p.exists():
        pytest.skip(f"{p} is missing: {hint}")
    return p


@functools.lru_cache(maxsize=4)
def _load(path: str) -> vt.Tokenizer:
    return vt.Tokenizer.from_file(path)


def tokenizer(name: str, i: int) -> vt.Tokenizer:
    return _load(str(load_path(GOLDENS[name]["loads"][i])))


def compared_modes(name: str, i: int) -> set[str]:
    """The modes this load is held to: all the golden's, or plain only
    where the load's files define no special tokens."""
    if GOLDENS[name]["loads"][i].get("no_specials"):
        return {"plain"}
    return set(GOLDENS[name]["modes"])


def expected(g: dict, i: int, key: str, mode: str, want):
    """The golden's ids, or an independent reference's where the golden
    records the oracle as deviating on this case for this load."""
    load = g["loads"][i]
    deviation = g.get("deviations", {}).get(key, {}).get(mode)
    if deviation is None or f"{load['root']}:{load['path']}" not in deviation["loads"]:
        return want
    return deviation["expected"]


@functools.lru_cache(maxsize=None)
def _synthetic() -> dict:
    return si.synthetic()


@functools.lru_cache(maxsize=None)
def _chat() -> tuple:
    return tuple(si.chat_strings())


def input_text(key: str) -> str:
    kind, _, name = key.partition(":")
    if kind == "vocab46":
        strings = si.vocab_strings()
        if strings is None:
            pytest.skip("llama.cpp's .inp strings are missing from ../shared/data")
        return strings[int(name)]
    if kind == "chat":
        return _chat()[int(name)]
    if kind == "corpus":
        text = si.corpus(name)
        if text is None:
            pytest.skip(f"corpus {name} is missing from ../shared/data")
        return text
    if kind == "synthetic":
        return _synthetic()[name]
    raise KeyError(key)


def encode(tok: vt.Tokenizer, text: str, mode: str) -> list[int]:
    add, parse = MODES[mode]
    return tok.encode(text, add_special=add, parse_special=parse)


def first_difference(got: list[int], want: list[int]) -> str:
    k = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
    return (f"first difference at {k} of {len(want)} (vt has {len(got)}): "
            f"vt {got[max(0, k - 3):k + 5]} != oracle {want[max(0, k - 3):k + 5]}")


def check_all(failures: list[str], what: str) -> None:
    if failures:
        shown = "\n  ".join(failures[:12])
        more = f"\n  ... and {len(failures) - 12} more" if len(failures) > 12 else ""
        pytest.fail(f"{len(failures)} {what} differ from the oracle:\n  {shown}{more}", pytrace=False)


@pytest.mark.parametrize("name,i", CASES, ids=CASE_IDS)
def test_exact_ids(name, i):
    """Short inputs (the 46 strings, chat strings, small stress inputs):
    the exact ids in every mode."""
    g = GOLDENS[name]
    tok = tokenizer(name, i)
    modes = compared_modes(name, i)
    failures, compared = [], 0
    for key, by_mode in g["exact"].items():
        text = input_text(key)
        for mode, want in by_mode.items():
            if mode not in modes:
                continue
            want = expected(g, i, key, mode, want)
            compared += 1
            got = encode(tok, text, mode)
            if got != want:
                failures.append(f"{key} [{mode}] {text[:40]!r}: {first_difference(got, want)}")
    assert compared, f"no encodings in modes {sorted(modes)}"
    check_all(failures, "encodings")


@pytest.mark.parametrize("name,i", CASES, ids=CASE_IDS)
def test_big_inputs(name, i):
    """Corpora, 64 KiB stress inputs and the 1,000 chat strings: sha256 of the ids."""
    g = GOLDENS[name]
    tok = tokenizer(name, i)
    modes = compared_modes(name, i)
    failures, compared = [], 0
    for key, by_mode in g["hashed"].items():
        for mode, want in by_mode.items():
            if mode not in modes:
                continue
            want = expected(g, i, key, mode, want)
            compared += 1
            if key == "chat:all":
                got = si.batch_digest([encode(tok, t, mode) for t in _chat()])
            else:
                got = si.ids_digest(encode(tok, input_text(key), mode))
            if got != want:
                failures.append(f"{key} [{mode}]: {got[1]} ids (sha256 {got[0][:12]}), "
                                f"oracle {want[1]} ids (sha256 {want[0][:12]})")
    assert compared, f"no big inputs in modes {sorted(modes)}"
    check_all(failures, "big inputs")


@pytest.mark.parametrize("name,i", CASES, ids=CASE_IDS)
def test_special_token_text(name, i):
    """Texts holding special-token text: parsed or not per mode."""
    g = GOLDENS[name]
    tok = tokenizer(name, i)
    failures = []
    modes = compared_modes(name, i)
    for probe in g["probes"]:
        for mode in (m for m in g["modes"] if m in modes):
            got = encode(tok, probe["text"], mode)
            if mode == "plain" and "plain_guard" in probe:
                # The oracle turned text into special ids (listed); vt's
                # plain mode must not (the prompt-injection guard), so it
                # is held to that instead of the oracle's ids.
                leaked = sorted(set(got) & set(probe["plain_guard"]) - {probe.get("unk")})
                if leaked:
                    failures.append(f"{probe['text']!r} [plain]: special ids {leaked} from plain text")
                continue
            if got != probe[mode]:
                failures.append(f"{probe['text']!r} [{mode}]: {first_difference(got, probe[mode])}")
    check_all(failures, "special-token probes")


@pytest.mark.parametrize("name,i", CASES, ids=CASE_IDS)
def test_decode(name, i):
    """decode() text: keep_special = vt render_special=True (HF
    skip_special_tokens=False), skip_special = render_special=False.
    A no_specials load decodes only the cases whose ids it has."""
    g = GOLDENS[name]
    tok = tokenizer(name, i)
    cases = g["decode"]
    if g["loads"][i].get("no_specials"):
        cases = [c for c in cases if all(t < tok.n_vocab for t in c["ids"])]
        assert cases, "no decode case within the file's vocabulary"
    failures = []
    for case in cases:
        for key, render in (("keep_special", True), ("skip_special", False)):
            if key in case:
                got = tok.decode(case["ids"], render_special=render)
                if got != case[key]:
                    failures.append(f"{case['ids'][:8]}... [{key}]: vt {got[:60]!r} != oracle {case[key][:60]!r}")
    check_all(failures, "decodes")


@pytest.mark.parametrize("name,i", [c for c in CASES if GOLDENS[c[0]]["vectors"]],
                         ids=[cid for c, cid in zip(CASES, CASE_IDS) if GOLDENS[c[0]]["vectors"]])
def test_llama_cpp_vectors_through_other_files(name, i):
    """llama.cpp's .out vectors (HF AutoTokenizer, add_special_tokens=False)
    through a vocabulary from another file (llama3/ for llama-bpe, the Qwen2
    GGUF for qwen2...)."""
    tok = tokenizer(name, i)
    vocab = si.tokenizer_data() / "llama.cpp-vocab"
    failures = []
    for family in GOLDENS[name]["vectors"]:
        inp, out = vocab / f"{family}.inp", vocab / f"{family}.out"
        if not (inp.exists() and out.exists()):
            pytest.skip(f"{inp} or its .out is missing")
        for text, want in zip(si.read_vocab_inp(inp), si.read_vocab_out(out)):
            got = tok.encode(text, parse_special=True)
            if got != want:
                failures.append(f"{family} {text[:40]!r}: {first_difference(got, want)}")
    check_all(failures, "llama.cpp vectors")


def vocab_families():
    vocab = si.tokenizer_data() / "llama.cpp-vocab"
    return sorted(p.name.removesuffix(".inp") for p in vocab.glob("ggml-vocab-*.gguf.inp"))


@pytest.mark.parametrize("family", vocab_families())
def test_llama_cpp_vocab_gguf(family):
    """Every .inp/.out pair whose vocab-only GGUF is in ../shared/data."""
    vocab = si.tokenizer_data() / "llama.cpp-vocab"
    if not (vocab / family).exists():
        pytest.skip(f"{family} is not in ../shared/data (too large); its vectors run through other sources")
    tok = _load(str(vocab / family))
    failures = []
    for text, want in zip(si.read_vocab_inp(vocab / f"{family}.inp"), si.read_vocab_out(vocab / f"{family}.out")):
        got = tok.encode(text)
        if got != want:
            failures.append(f"{text[:40]!r}: {first_difference(got, want)}")
    check_all(failures, "vectors")


PIECES_TEXT = "naïve café 🦙 llama 日本語 \u00a0x"


def test_pieces_are_raw_bytes():
    """vt_token_to_piece gives a byte token's raw byte in every format (a
    GGUF vocabulary and a tokenizer.json alike), never HF's U+FFFD of
    decode([id]): the pieces of a lossless encoding join to the text's bytes
    (with SentencePiece's leading space). Checked on every load that round-
    trips the text; WordPiece and other lossy pipelines cannot."""
    checked = []
    for name, i in CASES:
        load = GOLDENS[name]["loads"][i]
        try:
            tok = tokenizer(name, i)
        except pytest.skip.Exception:
            continue
        ids = tok.encode(PIECES_TEXT, add_special=False, parse_special=False)
        if tok.decode(ids, render_special=False) != PIECES_TEXT:
            continue
        joined = b"".join(tok.token_to_piece(t, render_special=False) for t in ids)
        assert joined.decode("utf-8") in (PIECES_TEXT, " " + PIECES_TEXT), f"{load}: {joined!r}"
        checked.append(f"{load['root']}:{load['path']}")
    # Byte-level BPE (GGUF and tokenizer.json) and byte-fallback
    # SentencePiece loads are in the goldens whenever their data is here.
    assert any(p.endswith("tokenizer.json") for p in checked), checked
    assert any(p.endswith(".gguf") for p in checked), checked
