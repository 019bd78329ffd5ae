"""examples/cli/vt-tokenize driven as a user would, on the GPT-2 vocab-only
GGUF of ../shared/data (expected ids: HF GPT-2, as in llama.cpp's
ggml-vocab-gpt-2.gguf.out and tests/python/test_tokenizer.py)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stress_inputs as si  # noqa: E402


@pytest.fixture(scope="module")
def cli():
    p = os.environ.get("VT_TOKENIZE", "")
    if not p or not Path(p).exists():
        pytest.skip("VT_TOKENIZE is unset (vt-tokenize is not built: needs CLI11)")
    return p


@pytest.fixture(scope="module")
def gpt2():
    p = si.tokenizer_data() / "llama.cpp-vocab" / "ggml-vocab-gpt-2.gguf"
    if not p.exists():
        pytest.skip(f"{p} is missing")
    return str(p)


def run(cli, *args, stdin: bytes = b""):
    return subprocess.run([cli, *args], input=stdin, capture_output=True, timeout=60)


def test_ids(cli, gpt2):
    r = run(cli, "--tokenizer", gpt2, stdin="Hello world".encode())
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"15496 995\n"
    # --ids is the default, spelled out.
    assert run(cli, "--tokenizer", gpt2, "--ids", stdin=b"Hello world").stdout == b"15496 995\n"


def test_pieces(cli, gpt2):
    r = run(cli, "-t", gpt2, "--pieces", stdin=b"Hello world\n")
    assert r.returncode == 0, r.stderr
    # GPT-2 ids of "Hello world\n": 15496 995 198 (" world", then "\n", escaped).
    assert r.stdout == b"Hello  world \\n\n"


def test_lines(cli, gpt2):
    r = run(cli, "-t", gpt2, "--lines", stdin=b"Hello world\n\nHello\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"15496 995\n\n15496\n"


def test_special_text(cli, gpt2):
    # <|endoftext|> (50256) is parsed by default, as HF encode(text) does;
    # --no-special tokenizes it as text.
    r = run(cli, "-t", gpt2, stdin=b"<|endoftext|>Hi")
    assert r.stdout == b"50256 17250\n", r.stdout  # HF GPT-2 encode("<|endoftext|>Hi")
    r = run(cli, "-t", gpt2, "--no-special", stdin=b"<|endoftext|>Hi")
    assert b"50256" not in r.stdout.split() and len(r.stdout.split()) > 2


def test_invalid_utf8(cli, gpt2):
    r = run(cli, "-t", gpt2, stdin=b"ok \xff\xfe bad")
    assert r.returncode == 1
    assert r.stderr.startswith(b"vt-tokenize: stdin: ") and b"UTF-8" in r.stderr, r.stderr
    r = run(cli, "-t", gpt2, "--lines", stdin=b"fine\nbad \xc3\n")
    assert r.returncode == 1 and b"line 2" in r.stderr, r.stderr
    assert r.stdout == b"38125\n"  # the first line was printed (HF GPT-2: "fine" -> 38125)


def test_missing_file(cli, tmp_path):
    missing = tmp_path / "no-such-tokenizer.json"
    r = run(cli, "-t", str(missing), stdin=b"x")
    assert r.returncode == 1
    assert str(missing).encode() in r.stderr, r.stderr


def test_usage_errors(cli):
    r = run(cli)  # --tokenizer is required
    assert r.returncode != 0 and b"tokenizer" in r.stderr
    r = run(cli, "-t", "x", "--ids", "--pieces")
    assert r.returncode != 0
