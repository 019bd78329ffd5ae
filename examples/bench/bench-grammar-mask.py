#!/usr/bin/env python3
"""bench-grammar-mask: token-mask time per token, xgrammar vs vt, side by
side in one process on the same vocabulary and the same token sequence.

The vocabulary is Llama 3's (128,256 tokens: the tokenizer.json fixture of
tests/tokenizers/make-goldens.py, which both sides load); the constraint a
nested JSON Schema. The token sequence is a few JSON documents valid against
the schema, tokenized by the Hugging Face tokenizer, each followed by an
end-of-generation token. For every token both sides fill the whole mask
(xgrammar's fill_next_token_bitmask, vt's vt_grammar_matcher_fill_mask) and
accept the token; the fills are timed and reported as p50 / p99 / mean per
token, and the masks are compared (they must be equal: the oracle gate is
tests/grammar/test-grammar-oracle). Compile time of the schema is reported
too: xgrammar's GrammarCompiler (cache off, one thread and its default
eight) and vt_grammar_compile.

vt is reached through ctypes on libvt.so (public ABI only, as
examples/dlopen/vt_ctypes.py). xgrammar is told vt's token policy (stop ids
= vt's end-of-generation tokens, control tokens never allowed), as the
goldens do (tests/grammar/goldens/README.md), so both compute the same mask.

usage: bench-grammar-mask.py [--lib build/libvt.so] [--fixture DIR] [--reps 3] [--kind schema|gbnf]
Needs: xgrammar, transformers, torch (e.g. /work/torchenv/venv/bin/python).
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import sys
import time
from ctypes import POINTER, byref, c_bool, c_char_p, c_int, c_int32, c_size_t, c_uint32, c_void_p
from pathlib import Path

import numpy as np

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "tokenizers"))
import stress_inputs as si  # noqa: E402

VT_GRAMMAR_GBNF = 0
VT_GRAMMAR_JSON_SCHEMA = 1

# --kind gbnf: a JSON grammar in GBNF that both sides parse (the documents
# below are in its language), for a vt figure while the schema converter is
# not there, and to see the GBNF path alone.
JSON_GBNF = r'''root   ::= object
value  ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws (member ("," ws member)*)? "}"
member ::= string ws ":" ws value ws
array  ::= "[" ws (value ws ("," ws value ws)*)? "]"
string ::= "\"" ([^"\\\x00-\x1f] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}))* "\""
number ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]+)? ([eE] [-+]? [0-9]+)?
ws     ::= [ \t\n]*
'''

SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "integer", "minimum": 1, "maximum": 999999},
        "name": {"type": "string", "minLength": 1, "maxLength": 40},
        "email": {"type": "string", "format": "email"},
        "address": {
            "type": "object",
            "properties": {
                "street": {"type": "string"},
                "city": {"type": "string"},
                "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
                "geo": {"type": "object",
                        "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
                        "required": ["lat", "lon"]},
            },
            "required": ["street", "city"],
        },
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 16}, "maxItems": 5},
        "orders": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "sku": {"type": "string"},
                    "qty": {"type": "integer", "minimum": 1},
                    "status": {"enum": ["new", "paid", "shipped"]},
                },
                "required": ["sku", "qty", "status"],
            },
        },
        "active": {"type": "boolean"},
    },
    "required": ["id", "name", "address"],
}

DOCUMENTS = [
    {"id": 42, "name": "Ada Lovelace", "email": "ada@example.com",
     "address": {"street": "12 St James's Square", "city": "London", "zip": "12345",
                 "geo": {"lat": 51.507, "lon": -0.136}},
     "tags": ["math", "engines"],
     "orders": [{"sku": "AE-1843", "qty": 2, "status": "paid"}, {"sku": "NOTE-G", "qty": 1, "status": "new"}],
     "active": True},
    {"id": 7, "name": "Grace Hopper", "address": {"street": "Navy Yard", "city": "Arlington"},
     "orders": [{"sku": "COBOL-59", "qty": 10, "status": "shipped"}], "active": False},
    {"id": 99999, "name": "Søren Kierkegaard", "email": "soren@test.dk",
     "address": {"street": "Nytorv 2", "city": "København", "geo": {"lat": 55.676, "lon": 12.568}},
     "tags": ["philosophy", "angst", "either/or"]},
]


class VtGrammar:
    """vt's tokenizer and grammar entry points through ctypes."""

    def __init__(self, lib_path: str, fixture: Path):
        lib = ctypes.CDLL(lib_path)
        self.lib = lib
        lib.vt_last_error.restype = c_char_p
        lib.vt_tokenizer_load.argtypes = [c_char_p, POINTER(c_void_p)]
        lib.vt_tokenizer_n_vocab.argtypes = [c_void_p]
        lib.vt_tokenizer_n_vocab.restype = c_uint32
        lib.vt_token_is_eog.argtypes = [c_void_p, c_int32]
        lib.vt_token_is_eog.restype = c_bool
        lib.vt_token_to_piece.argtypes = [c_void_p, c_int32, c_bool, c_char_p, c_size_t, POINTER(c_size_t)]
        self.tok = c_void_p()
        self.check(lib.vt_tokenizer_load(str(fixture / "tokenizer.json").encode(), byref(self.tok)), "load")
        self.n_vocab = lib.vt_tokenizer_n_vocab(self.tok)
        self.has_grammar = hasattr(lib, "vt_grammar_compile")
        if self.has_grammar:
            lib.vt_grammar_compile.argtypes = [c_void_p, c_int, c_char_p, c_size_t, POINTER(c_void_p)]
            lib.vt_grammar_destroy.argtypes = [c_void_p]
            lib.vt_grammar_matcher_create.argtypes = [c_void_p, POINTER(c_void_p)]
            lib.vt_grammar_matcher_destroy.argtypes = [c_void_p]
            lib.vt_grammar_matcher_fill_mask.argtypes = [c_void_p, POINTER(c_uint32), c_size_t]
            lib.vt_grammar_matcher_accept.argtypes = [c_void_p, c_int32]
            lib.vt_grammar_matcher_reset.argtypes = [c_void_p]

    def check(self, status: int, what: str) -> None:
        if status != 0:
            raise RuntimeError(f"vt {what}: {self.lib.vt_last_error().decode(errors='replace')}")

    def policy(self) -> tuple[list[int], list[int]]:
        """(end-of-generation ids, control ids = empty piece)."""
        eog, control = [], []
        buf, need = ctypes.create_string_buffer(256), c_size_t()
        for t in range(self.n_vocab):
            if self.lib.vt_token_is_eog(self.tok, t):
                eog.append(t)
            self.check(self.lib.vt_token_to_piece(self.tok, t, False, buf, 256, byref(need)), "token_to_piece")
            if need.value == 0:
                control.append(t)
        return eog, control

    def compile(self, kind: int, source: str) -> c_void_p:
        g = c_void_p()
        src = source.encode()
        self.check(self.lib.vt_grammar_compile(self.tok, kind, src, len(src), byref(g)), "compile")
        return g


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default=str(ROOT / "build" / "libvt.so"))
    ap.add_argument("--fixture", default=str(si.fixtures_dir() / "llama3"))
    ap.add_argument("--reps", type=int, default=3, help="passes over the documents")
    ap.add_argument("--kind", choices=["schema", "gbnf"], default="schema",
                    help="the nested JSON Schema (default) or a JSON grammar in GBNF")
    args = ap.parse_args()

    import torch  # noqa: F401
    import xgrammar as xgr
    from transformers import AutoTokenizer

    fixture = Path(args.fixture)
    vt = VtGrammar(args.lib, fixture)
    eog, control = vt.policy()
    hf = AutoTokenizer.from_pretrained(str(fixture))
    base = xgr.TokenizerInfo.from_huggingface(hf, stop_token_ids=eog)
    n_vocab = base.vocab_size
    assert n_vocab == vt.n_vocab, (n_vocab, vt.n_vocab)
    encoded = [""] * n_vocab
    for text, i in hf.get_vocab().items():
        if i < n_vocab:
            encoded[i] = text
    for i in control:
        encoded[i] = ""
    info = xgr.TokenizerInfo(encoded, vocab_type=base.vocab_type, vocab_size=n_vocab, stop_token_ids=eog,
                             add_prefix_space=base.add_prefix_space)
    schema = json.dumps(SCHEMA)
    source = schema if args.kind == "schema" else JSON_GBNF
    vt_kind = VT_GRAMMAR_JSON_SCHEMA if args.kind == "schema" else VT_GRAMMAR_GBNF

    def xgr_compile(comp):
        if args.kind == "schema":
            # As tests/grammar/make-grammar-goldens.py: xgrammar's grammar with
            # its length-bounded string class kept from control characters,
            # as vt's (valid JSON). Compiled from the patched text, so the
            # timing includes xgrammar's parse of it.
            ebnf = str(xgr.Grammar.from_json_schema(schema, any_whitespace=True, strict_mode=True))
            ebnf = ebnf.replace('[^\\"\\\\\\r\\n]', '[^\\"\\\\\\0-\\x1f]')
            return comp.compile_grammar(xgr.Grammar.from_ebnf(ebnf))
        return comp.compile_grammar(xgr.Grammar.from_ebnf(JSON_GBNF))

    # ---- compile ----
    rows = []
    for threads in (1, 8):
        times = []
        for _ in range(3):
            comp = xgr.GrammarCompiler(info, max_threads=threads, cache_enabled=False)
            t0 = time.perf_counter()
            compiled = xgr_compile(comp)
            times.append(time.perf_counter() - t0)
        rows.append((f"xgrammar ({threads} thread{'s' if threads > 1 else ''})", statistics.median(times)))
    vt_grammar, vt_missing = None, None
    if not vt.has_grammar:
        vt_missing = f"{args.lib} has no vt_grammar_compile"
    else:
        times = []
        try:
            for _ in range(3):
                t0 = time.perf_counter()
                g = vt.compile(vt_kind, source)
                times.append(time.perf_counter() - t0)
                if vt_grammar is None:
                    vt_grammar = g
                else:
                    vt.lib.vt_grammar_destroy(g)
            rows.append(("vt", statistics.median(times)))
        except RuntimeError as e:
            vt_missing = str(e)

    # ---- masks ----
    seqs = [hf.encode(json.dumps(d, ensure_ascii=False), add_special_tokens=False) + [eog[0]] for d in DOCUMENTS]
    n_words = (n_vocab + 31) // 32
    xmask = xgr.allocate_token_bitmask(1, n_vocab)
    vmask = (c_uint32 * n_words)()
    xm = xgr.GrammarMatcher(compiled)
    vm = c_void_p()
    if vt_grammar is not None:
        vt.check(vt.lib.vt_grammar_matcher_create(vt_grammar, byref(vm)), "matcher_create")
    x_times, v_times, differ = [], [], 0
    for _ in range(args.reps):
        for seq in seqs:
            xm.reset()
            if vm:
                vt.lib.vt_grammar_matcher_reset(vm)
            for t in seq:
                t0 = time.perf_counter()
                xm.fill_next_token_bitmask(xmask)
                x_times.append(time.perf_counter() - t0)
                if vm:
                    t0 = time.perf_counter()
                    vt.check(vt.lib.vt_grammar_matcher_fill_mask(vm, vmask, n_words), "fill_mask")
                    v_times.append(time.perf_counter() - t0)
                    mine = np.frombuffer(vmask, dtype=np.uint32)
                    differ += not np.array_equal(mine, xmask.numpy().reshape(-1).view(np.uint32)[:n_words])
                    vt.check(vt.lib.vt_grammar_matcher_accept(vm, t), f"accept({t})")
                if not xm.accept_token(t):
                    raise RuntimeError(f"xgrammar refused token {t} of a valid document")

    what = "JSON Schema" if args.kind == "schema" else "JSON GBNF"
    print(f"{what} ({len(source)} bytes) on {fixture.name} ({n_vocab} tokens), "
          f"{len(x_times)} masks ({args.reps} passes over {len(seqs)} documents)")
    print()
    print(f"{'compile':<24}{'ms':>10}")
    for name, s in rows:
        print(f"{name:<24}{s * 1e3:>10.1f}")
    if vt_missing:
        print(f"{'vt':<24}{'n/a':>10}  ({vt_missing})")
    print()
    print(f"{'mask per token (us)':<24}{'p50':>10}{'p99':>10}{'mean':>10}")
    for name, ts in (("xgrammar", x_times), ("vt", v_times)):
        if ts:
            us = [t * 1e6 for t in ts]
            print(f"{name:<24}{percentile(us, 0.5):>10.1f}{percentile(us, 0.99):>10.1f}{statistics.mean(us):>10.1f}")
    if v_times:
        ratio = statistics.median(v_times) / statistics.median(x_times)
        print(f"\nvt / xgrammar p50: {ratio:.2f}x; masks differing: {differ} of {len(v_times)}")
        vt.lib.vt_grammar_matcher_destroy(vm)
        vt.lib.vt_grammar_destroy(vt_grammar)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
