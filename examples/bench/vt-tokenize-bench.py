#!/usr/bin/env python3
"""vt-tokenize-bench: vt's tokenizers and Hugging Face `tokenizers` side by
side, in one process, on the same text, both single-threaded.

For each family it loads the same tokenizer.json into both (the fixtures of
tests/tokenizers/make-goldens.py) and times encode() on:
  war-and-peace        one 3.2 MB string
  chat x1000           1,000 short chat-sized strings: vt encode() per string,
                       HF encode_batch() (and, on its own row, HF encode() per string)
  run-a-16k/32k/64k    one 16/32/64 KiB word ("aaaa..."): the scaling rows; 4x
                       the input should cost at most ~5x the time
and prints MB/s (input UTF-8 bytes / median seconds), the vt/HF ratio and
whether the ids agree. Encoding is HF's encode(text, add_special_tokens=False),
vt's encode(text, parse_special=True): the same work on both sides.

usage: vt-tokenize-bench.py [--build build] [--reps 5] [--family gpt-2,...]
Needs: the vt Python module (<build>/bindings/python), `tokenizers`, the
fixtures (make-goldens.py --fixtures-only) and ../shared/data/tokenizers.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

# Before tokenizers is imported: one thread, as vt's single-threaded encode.
os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["RAYON_RS_NUM_CPUS"] = "1"

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "tokenizers"))
import stress_inputs as si  # noqa: E402

# family -> fixture directory (tokenizer.json loaded by both sides)
FAMILIES = {
    "gpt-2": "gpt2",
    "llama-3": "llama3",
    "mistral-v1-spm": "mistral-v1",
    "unigram": "unigram-t5",
    "wordpiece": "bert-bge",
}


def median_seconds(fn, reps: int) -> float:
    fn()  # warm-up: caches, lazy tables
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(ROOT / "build"), help="meson build directory with the vt module")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--family", default=",".join(FAMILIES), help="comma-separated: " + ", ".join(FAMILIES))
    a = ap.parse_args()

    sys.path.insert(0, str(Path(a.build) / "bindings" / "python"))
    import vt
    from tokenizers import Tokenizer

    text = si.corpus("war-and-peace")
    if text is None:
        print(f"no corpus at {si.tokenizer_data()}", file=sys.stderr)
        return 1
    chat = si.chat_strings(1000)
    synthetic = si.synthetic()
    chat_bytes = sum(len(s.encode()) for s in chat)

    rows = []
    for family in filter(None, a.family.split(",")):
        path = si.fixtures_dir() / FAMILIES[family] / "tokenizer.json"
        if not path.exists():
            print(f"{family}: {path} missing (run tests/tokenizers/make-goldens.py --fixtures-only)", file=sys.stderr)
            continue
        hf = Tokenizer.from_file(str(path))
        try:
            v = vt.Tokenizer.from_file(str(path))
        except vt.VtError as e:
            print(f"{family}: vt cannot load {path}: {e}", file=sys.stderr)
            continue

        def vt_enc(s):
            return v.encode(s, parse_special=True)

        def hf_enc(s):
            return hf.encode(s, add_special_tokens=False).ids

        def row(name, nbytes, vt_fn, hf_fn, same):
            tv, th = median_seconds(vt_fn, a.reps), median_seconds(hf_fn, a.reps)
            rows.append((family, name, nbytes / tv / 1e6, nbytes / th / 1e6, th / tv, same, tv, th))

        row("war-and-peace", len(text.encode()), lambda: vt_enc(text), lambda: hf_enc(text),
            vt_enc(text) == hf_enc(text))
        vt_chat = [vt_enc(s) for s in chat]
        row("chat x1000 (HF batch)", chat_bytes, lambda: [vt_enc(s) for s in chat],
            lambda: hf.encode_batch(chat, add_special_tokens=False),
            vt_chat == [e.ids for e in hf.encode_batch(chat, add_special_tokens=False)])
        row("chat x1000 (HF loop)", chat_bytes, lambda: [vt_enc(s) for s in chat],
            lambda: [hf_enc(s) for s in chat], vt_chat == [hf_enc(s) for s in chat])
        for name in si.SCALING:
            s = synthetic[name]
            row(name, len(s), lambda s=s: vt_enc(s), lambda s=s: hf_enc(s), vt_enc(s) == hf_enc(s))

    print(f"{'family':<15} {'input':<22} {'vt MB/s':>9} {'HF MB/s':>9} {'vt/HF':>6}  ids")
    for family, name, mv, mh, ratio, same, *_ in rows:
        print(f"{family:<15} {name:<22} {mv:9.2f} {mh:9.2f} {ratio:6.2f}  {'same' if same else 'DIFFER'}")
    print("\nscaling (time of 64 KiB / time of 16 KiB; linear = 4):")
    for family in dict.fromkeys(r[0] for r in rows):
        t = {r[1]: (r[6], r[7]) for r in rows if r[0] == family}
        if "run-a-16k" in t and "run-a-64k" in t:
            print(f"  {family:<15} vt {t['run-a-64k'][0] / t['run-a-16k'][0]:5.2f}x   "
                  f"HF {t['run-a-64k'][1] / t['run-a-16k'][1]:5.2f}x")
    slow = [r for r in rows if r[4] < 1.5 and not r[1].startswith("run-a")]
    if slow:
        print(f"\nbelow the 1.5x target: {', '.join(f'{r[0]}/{r[1]} ({r[4]:.2f}x)' for r in slow)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
