#!/usr/bin/env python3
"""End-to-end tests of vt-generate on bad input and on a tiny model.

usage: test-vt-generate.py VT_GENERATE WRITE_TINY_MODEL

WRITE_TINY_MODEL (tests/cli/write-tiny-model.cpp) writes a tiny random-weight
Llama GGUF; no downloaded model is needed. Plain Python 3 standard library.
Every failure must be clean: a positive exit status (not a signal), a
"vt-generate:" line on stderr that says what is wrong, nothing on stdout.
"""
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from script_checks import check, exit_status  # noqa: E402

VT_GENERATE = None
WRITE_TINY_MODEL = None


def run(args, timeout=120):
    p = subprocess.run([VT_GENERATE] + args, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def describe(rc, out, err):
    return f"  exit status {rc}\n  stdout {out[:300]!r}\n  stderr {err[-1500:]!r}"


def expect_failure(name, args, phrases, prefix=True):
    """The run fails cleanly and stderr holds every phrase (case-insensitive)."""
    rc, out, err = run(args)
    low = err.lower()
    missing = [p for p in phrases if p.lower() not in low]
    ok = rc > 0 and out == b"" and not missing and (not prefix or "vt-generate:" in err)
    detail = describe(rc, out, err)
    if missing:
        detail += f"\n  missing phrases {missing}"
    check(name, ok, detail)
    return err


def main():
    global VT_GENERATE, WRITE_TINY_MODEL
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    VT_GENERATE, WRITE_TINY_MODEL = sys.argv[1], sys.argv[2]

    with tempfile.TemporaryDirectory(prefix="vt-test-cli-") as tmp:
        model = os.path.join(tmp, "tiny.gguf")
        subprocess.run([WRITE_TINY_MODEL, model], check=True)
        other_arch = os.path.join(tmp, "other-arch.gguf")
        subprocess.run([WRITE_TINY_MODEL, other_arch, "--arch", "mamba9"], check=True)
        text_file = os.path.join(tmp, "notes.txt")
        with open(text_file, "w") as f:
            f.write("this is plain text, not a GGUF model\n" * 4)
        with open(model, "rb") as f:
            tiny = f.read()
        truncated = os.path.join(tmp, "truncated.gguf")
        with open(truncated, "wb") as f:
            f.write(tiny[: len(tiny) // 2])
        bad_utf8 = os.path.join(tmp, "bad-utf8.txt")
        with open(bad_utf8, "wb") as f:
            f.write(b"\xff\xfe")
        missing = os.path.join(tmp, "no-such-model.gguf")

        # Files that are not models.
        expect_failure("missing model file", ["-m", missing, "-p", "hi", "-n", "1"],
                       ["no-such-model.gguf", "no such file"])
        expect_failure("a folder without config.json as the model", ["-m", tmp, "-p", "hi", "-n", "1"],
                       ["folder", "config.json"])
        expect_failure("a text file as the model", ["-m", text_file, "-p", "hi", "-n", "1"],
                       ["notes.txt", "gguf"])
        expect_failure("a truncated GGUF", ["-m", truncated, "-p", "hi", "-n", "1"],
                       ["truncated.gguf", "offset"])
        expect_failure("an unsupported architecture", ["-m", other_arch, "-p", "hi", "-n", "1"],
                       ["mamba9", "architecture"])

        # The tiny model.
        base = ["-m", model, "-t", "2"]
        rc, out, err = run(base + ["-p", "Hello world", "-n", "8", "--temp", "0"])
        check("a normal run exits 0 with the summary",
              rc == 0 and "vt-generate: prompt" in err and "vt-generate: generated" in err
              and "peak RSS" in err and "prefill" in err and "decode" in err,
              describe(rc, out, err))
        check("a normal run prints the load line", "loading" in err and "100%" in err,
              describe(rc, out, err))

        long_prompt = "abcdefgh " * 40  # about 360 tokens in this byte-level vocabulary
        expect_failure("a prompt longer than --ctx", base + ["-p", long_prompt, "-c", "32", "-n", "4"],
                       ["context holds 32", "do not fit"])
        expect_failure("an invalid UTF-8 prompt file", base + ["-f", bad_utf8, "-n", "4"],
                       ["invalid utf-8", "offset 0"])
        expect_failure("a missing prompt file", base + ["-f", os.path.join(tmp, "none.txt"), "-n", "4"],
                       ["cannot read prompt file", "none.txt"])

        runs = [run(base + ["-p", "the cat sat", "-n", "16", "--temp", "0"]) for _ in range(2)]
        check("--temp 0 twice gives identical stdout",
              all(r[0] == 0 for r in runs) and runs[0][1] == runs[1][1],
              "\n".join(describe(*r) for r in runs))
        runs = [run(base + ["-p", "the cat sat", "-n", "16", "--temp", "0.9", "-s", "7"]) for _ in range(2)]
        check("the same seed twice gives identical stdout",
              all(r[0] == 0 for r in runs) and runs[0][1] == runs[1][1],
              "\n".join(describe(*r) for r in runs))
        # "the cat sat" is 10 tokens here; 4 more fill a 14-token context.
        rc, out, err = run(base + ["-p", "the cat sat", "-c", "14", "-n", "64", "--temp", "0"])
        check("generation that fills the context stops cleanly",
              rc == 0 and "context is full" in err and "vt-generate: generated" in err,
              describe(rc, out, err))

        # A grammar holds at temperature 0.9 on random weights (the check is
        # Python's re, independent of vt); a bad one fails cleanly.
        for seed in ["1", "2", "3"]:
            rc, out, err = run(base + ["-p", "the cat", "-n", "40", "--temp", "0.9", "-s", seed,
                                       "--grammar", 'root ::= [a-z ]{1,12} "."'])
            check(f"--grammar output matches it (seed {seed})",
                  rc == 0 and re.fullmatch(rb"[a-z ]{1,12}\.", out) is not None, describe(rc, out, err))
        expect_failure("an unterminated GBNF class", base + ["-p", "hi", "--grammar", "root ::= [a-z"],
                       ["line 1", "character class"])
        expect_failure("--grammar with --regex", base + ["-p", "hi", "--grammar", "root ::= \"a\"",
                                                         "--regex", "a"], ["excludes"], prefix=False)

        # Bad option values: CLI11 rejects them before anything is loaded.
        for name, args, phrases in [
            ("-n abc", ["-n", "abc"], ["abc"]),
            ("--top-p 2", ["--top-p", "2"], ["top-p"]),
            ("--min-p -1", ["--min-p", "-1"], ["min-p"]),
            ("-n -2", ["-n", "-2"], ["n-predict"]),
            ("--temp x", ["--temp", "x"], ["temp"]),
            ("-t -1", ["-t", "-1"], ["threads"]),
            ("an unknown option", ["--frobnicate"], ["frobnicate"]),
        ]:
            expect_failure("bad option " + name, base + ["-p", "hi"] + args, phrases, prefix=False)
        expect_failure("no model option", ["-p", "hi"], ["model"], prefix=False)
        expect_failure("no prompt", base, ["prompt"])
        expect_failure("-p and -f together", base + ["-p", "x", "-f", bad_utf8], ["excludes"], prefix=False)

    return exit_status()


if __name__ == "__main__":
    sys.exit(main())
