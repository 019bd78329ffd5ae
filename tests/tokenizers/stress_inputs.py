"""Inputs of the tokenizer parity gate, shared by make-goldens.py (which runs
the oracles on them) and the tests (which run vt on them).

Everything here is deterministic: the synthetic texts come from seeded
random.Random instances, never from the global generator, so a golden hash
written today matches the text the test rebuilds later. Changing any text
here means running make-goldens.py again.

Inputs have names; a golden file refers to an input by name only (big ones
by the sha256 of their ids), so goldens stay small and no text is copied
into the repository.
"""
from __future__ import annotations

import os
import random
from pathlib import Path

KB = 1024
VOCAB_SEP = "\n__ggml_vocab_test__\n"

# Inputs longer than this (UTF-8 bytes) are golden as sha256 + count.
EXACT_LIMIT = 2048


def shared_data() -> Path:
    """../shared/data as the tests see it (VT_SHARED_DATA overrides)."""
    env = os.environ.get("VT_SHARED_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


def tokenizer_data() -> Path:
    return shared_data() / "tokenizers"


def fixtures_dir() -> Path:
    """Where make-goldens.py --fixtures-only writes the tokenizer files that
    exist nowhere as files (outside the repo: they are derived data)."""
    env = os.environ.get("VT_TOKENIZER_FIXTURES")
    if env:
        return Path(env)
    return Path.home() / ".cache" / "vt" / "tokenizer-fixtures"


# ---- llama.cpp's 46 strings ------------------------------------------------

def read_vocab_inp(path: Path) -> list[str]:
    """The strings of a llama.cpp .inp file (bytes are UTF-8; split exactly)."""
    texts = path.read_bytes().decode("utf-8").split(VOCAB_SEP)
    if texts and texts[-1] == "":
        texts.pop()
    return texts


def read_vocab_out(path: Path) -> list[list[int]]:
    lines = path.read_text(encoding="utf-8").split("\n")
    return [[int(x) for x in line.split()] for line in lines]


def vocab_strings() -> list[str] | None:
    """The 46 strings (every .inp file holds the same ones)."""
    p = tokenizer_data() / "llama.cpp-vocab" / "ggml-vocab-gpt-2.gguf.inp"
    return read_vocab_inp(p) if p.exists() else None


# ---- corpora ---------------------------------------------------------------

CORPORA = {
    "war-and-peace": "corpus/war-and-peace.txt",
    "botchan": "corpus/botchan.txt",
    "wagahaiwa-nekodearu": "corpus/wagahaiwa_nekodearu.txt",
}


def corpus(name: str) -> str | None:
    p = tokenizer_data() / CORPORA[name]
    return p.read_bytes().decode("utf-8") if p.exists() else None


# ---- synthetic stress inputs -------------------------------------------------

def _fill(n_bytes: int, pick) -> str:
    """Concatenates pick() until the UTF-8 size reaches n_bytes."""
    parts, size = [], 0
    while size < n_bytes:
        s = pick()
        parts.append(s)
        size += len(s.encode("utf-8"))
    return "".join(parts)


def _random_letters(n: int, seed: int) -> str:
    r = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return "".join(r.choice(letters) for _ in range(n))


def _cjk(n_bytes: int, seed: int) -> str:
    # Common CJK ideographs, hiragana and katakana, with no spaces: one long
    # pre-token for most pre-tokenizers.
    r = random.Random(seed)
    ranges = [(0x4E00, 0x9FA5), (0x3041, 0x3096), (0x30A1, 0x30FA)]
    return _fill(n_bytes, lambda: chr(r.randint(*r.choice(ranges))))


def _emoji_zwj(n_bytes: int, seed: int) -> str:
    r = random.Random(seed)
    zwj = "\u200d"
    sequences = [
        "\U0001F468" + zwj + "\U0001F469" + zwj + "\U0001F467" + zwj + "\U0001F466",  # family
        "\U0001F3F3\uFE0F" + zwj + "\U0001F308",                                       # rainbow flag
        "\U0001F469\U0001F3FD" + zwj + "\U0001F4BB",                                   # technologist, skin tone
        "\U0001F9D1" + zwj + "\U0001F91D" + zwj + "\U0001F9D1",                        # people holding hands
        "\u2764\uFE0F" + zwj + "\U0001F525",                                           # heart on fire
        "\U0001F1EF\U0001F1F5",                                                        # flag (regional pair)
        "\U0001F44D\U0001F3FF",
    ]
    return _fill(n_bytes, lambda: r.choice(sequences) + (" " if r.random() < 0.1 else ""))


def _base64(n_bytes: int, seed: int) -> str:
    import base64
    r = random.Random(seed)
    raw = bytes(r.getrandbits(8) for _ in range(n_bytes * 3 // 4))
    return base64.b64encode(raw).decode("ascii")[:n_bytes]


def _minified_json(n_bytes: int, seed: int) -> str:
    import json
    r = random.Random(seed)

    def value(depth):
        k = r.random()
        if depth > 3 or k < 0.3:
            return r.choice([r.randint(-10**6, 10**6), round(r.uniform(-1e3, 1e3), 4), True, None,
                             _random_letters(r.randint(1, 12), r.getrandbits(32))])
        if k < 0.6:
            return [value(depth + 1) for _ in range(r.randint(0, 5))]
        return {_random_letters(r.randint(1, 8), r.getrandbits(32)): value(depth + 1)
                for _ in range(r.randint(1, 5))}

    items, size = [], 2
    while size < n_bytes:
        s = json.dumps(value(0), separators=(",", ":"), ensure_ascii=False)
        items.append(s)
        size += len(s) + 1
    return ("[" + ",".join(items) + "]")[:n_bytes]


def synthetic() -> dict[str, str]:
    """Name -> text; each 64 KiB of UTF-8 unless the name says otherwise."""
    n = 64 * KB
    r = random.Random(1234)
    return {
        "run-a-16k": "a" * (16 * KB),
        "run-a-32k": "a" * (32 * KB),
        "run-a-64k": "a" * n,
        "random-letters-64k": _random_letters(n, 1),
        "digits-64k": "".join(r.choice("0123456789") for _ in range(n)),
        "spaces-64k": " " * n,
        "tabs-64k": "\t" * n,
        "newlines-64k": "\n" * n,
        "mixed-whitespace-64k": "".join(random.Random(2).choice(" \t\n\r\u00a0\u3000") for _ in range(n // 2)),
        "cjk-64k": _cjk(n, 3),
        "emoji-zwj-64k": _emoji_zwj(n, 4),
        "base64-64k": _base64(n, 5),
        "json-min-64k": _minified_json(n, 6),
    }


# The single-word inputs of the scaling rows (4x the input, at most ~5x the time).
SCALING = ["run-a-16k", "run-a-32k", "run-a-64k"]


# ---- short chat-sized strings ------------------------------------------------

_WORDS = ("the of and to in is you that it he was for on are as with his they I at be this have from "
          "or one had by word but not what all were we when your can said there use an each which she "
          "do how their if will up other about out many then them these so some her would make like "
          "model token tokenizer prompt context inference GPU latency throughput batch cache llama "
          "café naïve résumé Zürich Ångström São Paulo München Kraków").split()
_TAILS = [".", "?", "!", "...", ":", ";", ",", " :)", " 🙂", " 👍🏽", "\n", "\n\n", " (see above)", " — ok"]
_EXTRAS = ["日本語のテキスト", "中文测试", "한국어", "Привет, мир", "مرحبا", "שלום", "12345", "3.14159",
           "2024-05-17", "$19.99", "#hashtag", "@user", "https://example.com/a?b=c", "`code()`",
           "x = [1, 2, 3]", "\tindented", "  two spaces", "Don't", "I'm", "we'll", "they've", "it's"]


def chat_strings(n: int = 1000, seed: int = 42) -> list[str]:
    """n short chat-like strings (8..400 bytes): words, punctuation, some
    non-Latin text, numbers, contractions and whitespace runs."""
    r = random.Random(seed)
    out = []
    for _ in range(n):
        k = r.randint(2, 40)
        words = []
        for _ in range(k):
            w = r.choice(_EXTRAS) if r.random() < 0.08 else r.choice(_WORDS)
            if r.random() < 0.1:
                w = w.capitalize()
            words.append(w)
        s = " ".join(words)
        s = s[0].upper() + s[1:] + r.choice(_TAILS)
        if r.random() < 0.05:
            s = " " + s
        out.append(s)
    return out


# How many of the chat strings are golden with exact ids (the rest by hash).
CHAT_EXACT = 24


# ---- compact goldens ---------------------------------------------------------

def ids_digest(ids: list[int]) -> list:
    """[sha256 of the ids written as decimal, space-separated; count]."""
    import hashlib
    return [hashlib.sha256(" ".join(map(str, ids)).encode()).hexdigest(), len(ids)]


def batch_digest(batch: list[list[int]]) -> list:
    """As ids_digest for a batch: one line of ids per input."""
    import hashlib
    text = "\n".join(" ".join(map(str, ids)) for ids in batch)
    return [hashlib.sha256(text.encode()).hexdigest(), sum(len(ids) for ids in batch)]
