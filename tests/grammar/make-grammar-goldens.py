#!/usr/bin/env python3
"""make-grammar-goldens.py - the grammar oracle gate's goldens (xgrammar).

vt's allowed-token sets must equal xgrammar's, token for token, on real
vocabularies. This script runs xgrammar 0.2.9 live on the Hugging Face
tokenizer.json fixtures that tests/tokenizers/make-goldens.py writes (the
same files test-grammar-oracle loads with vt_tokenizer_load), walks each
constraint with seeded random token choices and records xgrammar's mask at
every step into tests/grammar/goldens/<vocabulary>.json (format: the README
there). One command regenerates everything, with fixed seeds:

  /work/torchenv/venv/bin/python tests/grammar/make-grammar-goldens.py
  ... --only smollm2,llama3        some vocabularies only

Token policy. vt (include/vt/vt_grammar.h) never allows a control token
(one whose piece is empty: the tokenizer's added tokens marked special) and
allows its end-of-generation tokens exactly when the text so far is a whole
string of the language. xgrammar's TokenizerInfo.from_huggingface instead
treats special added tokens as ordinary text ("<|im_start|>" is allowed
wherever the grammar allows those characters; its special_token_ids are only
tokens whose decoded text is empty) and stops on the tokenizer's eos alone.
Given stop_token_ids=, xgrammar also matches a stop token as its text
(qwen2's and gemma3's "</s>", or "<|im_end|>" as written) when that text
completes the language, and taking it then terminates the matcher; vt never
matches an end-of-generation token as text. To compare the grammar engines
rather than those policies, the goldens state vt's policy with xgrammar's own
means: the stop ids are vt's end-of-generation set (stop_token_ids=), and the
control and stop tokens are given an empty text (an empty text makes a
control token an xgrammar special token, never allowed, and keeps a stop
token from matching as text). Each golden records both id sets and, under
"xgrammar_default", what xgrammar does without the empty texts (README).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests" / "tokenizers"))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import stress_inputs as si  # noqa: E402  (fixtures_dir: where the tokenizer.json fixtures live)

GOLDENS = HERE / "goldens"
MAX_STEPS = 40
EXPLICIT_MAX = 300  # the smaller side of a mask is written out when it has at most this many ids


def log(msg: str) -> None:
    print(f"make-grammar-goldens: {msg}", file=sys.stderr, flush=True)


# ---- constraints ----------------------------------------------------------------
#
# (name, kind, source). kind is vt_grammar_kind's name; source is what vt
# compiles. GBNF goes to xgrammar's EBNF parser as it is, except `.`, which
# xgrammar 0.2.9 does not know: it gets `[^]` (any code point), llama.cpp's
# meaning of `.`.

GBNF = {
    "gbnf-nested": r'''# greetings: nested rules, alternation, bounded repetition
root     ::= greeting ", " names punct
greeting ::= "hello" | "hi" | "hey there" | "good " ("morning" | "evening")
names    ::= name (", " name){0,2} (" and " name)?
name     ::= [A-Z] [a-z]{1,7}
punct    ::= "!" | "." | "?"{1,3}
''',
    "gbnf-unicode": r'''# non-ASCII ranges, emoji, multi-byte literals
root  ::= word (" " word){0,3} "\n"
word  ::= greek | emoji | cjk | "naïve" | "façade"
greek ::= [α-ω]{2,5}
emoji ::= "🙂" | "🚀🚀" | [😀-😏]
cjk   ::= "日本語" | "中文" [一-龥]?
''',
    "gbnf-escapes": r'''# escapes and negated classes
root ::= "\"" [^"\\\n]{0,12} "\"" sep tail
sep  ::= "\t" | " \\ " | "\x41\u00e9"
tail ::= [^a-z0-9 \n]+ "\n"
''',
    "gbnf-dot": r'''# any character
root ::= "<" .{1,6} ">" ("[" [^\]]{0,8} "]")?
''',
    "gbnf-arith": r'''# arithmetic, no left recursion
root   ::= expr
expr   ::= term (ws [-+] ws term)*
term   ::= factor (ws [*/] ws factor)*
factor ::= number | "(" ws expr ws ")" | "-" factor
number ::= [0-9]+ ("." [0-9]{1,3})?
ws     ::= " "?
''',
    "gbnf-program": r'''# a small programming language
root   ::= stmt{1,4}
stmt   ::= assign | ifstmt | print
assign ::= ident " = " expr ";\n"
ifstmt ::= "if (" cond ") {\n" ("  " stmt){1,2} "}\n"
print  ::= "print(" (ident | string) ");\n"
cond   ::= expr (" == " | " < " | " != ") expr
expr   ::= ident | [0-9]{1,4} | ident " + " [0-9]{1,3}
ident  ::= [a-z_] [a-z0-9_]{0,7}
string ::= "\"" [^"\n]{0,10} "\""
''',
}

SCHEMAS = {
    "schema-nested": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 20},
            "age": {"type": "integer", "minimum": 0, "maximum": 150},
            "address": {
                "type": "object",
                "properties": {
                    "street": {"type": "string"},
                    "city": {"type": "string", "maxLength": 12},
                    "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
                },
                "required": ["street", "city"],
            },
            "active": {"type": "boolean"},
        },
        "required": ["name", "address"],
    },
    "schema-arrays": {
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}, "minItems": 1, "maxItems": 3},
            "scores": {"type": "array", "items": {"type": "integer"}, "maxItems": 4},
            "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}],
                     "minItems": 2, "maxItems": 2},
        },
        "required": ["tags"],
    },
    "schema-enum": {
        "type": "object",
        "properties": {
            "status": {"enum": ["active", "inactive", "pending", 3, None]},
            "version": {"const": "v1"},
            "word": {"type": "string", "enum": ["café", "naïve", "日本"]},
        },
        "required": ["status", "version"],
    },
    "schema-strings": {
        "type": "object",
        "properties": {
            "code": {"type": "string", "pattern": "^[A-Z]{2}-\\d{3}$"},
            "note": {"type": "string", "minLength": 2, "maxLength": 6},
        },
        "required": ["code", "note"],
    },
    "schema-integers": {
        "type": "object",
        "properties": {
            "small": {"type": "integer", "minimum": -5, "maximum": 12},
            "big": {"type": "integer", "minimum": 100, "maximum": 99999},
            "pos": {"type": "integer", "minimum": 1},
        },
        "required": ["small", "big"],
    },
    "schema-anyof": {
        "anyOf": [
            {"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}},
             "required": ["kind", "r"]},
            {"type": "object", "properties": {"kind": {"const": "rect"}, "w": {"type": "integer"},
                                              "h": {"type": "integer"}},
             "required": ["kind", "w", "h"]},
            {"type": "null"},
        ],
    },
    "schema-recursive": {
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "value": {"type": "integer"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2},
                },
                "required": ["value"],
            },
        },
        "$ref": "#/$defs/node",
    },
    "schema-format": {
        "type": "object",
        "properties": {
            "day": {"type": "string", "format": "date"},
            "mail": {"type": "string", "format": "email"},
        },
        "required": ["day", "mail"],
    },
}

REGEXES = {
    "regex-digits": r"\d{3}-\d{2,4}",
    "regex-email": r"[A-Za-z_]\w{0,10}@(example|test)\.(com|org)",
    "regex-alt": r"(cat|dog|bird)s?( and (cat|dog|bird)s?){0,2}",
    "regex-unicode": r"[α-ωΑ-Ω]{2,4} [äöü]+ (😀|🚀)?",
    "regex-classes": r"\[[^\]\n]{1,8}\]\s?[a-f0-9]{2,6}",
}

CHOICES = {
    "choice-prefixes": ["apple", "applesauce", "apple pie", "banana", "band", "bandana"],
    "choice-unicode": ["yes", "yes, but", "no", "nope", "не", "нет", "🙂", "🙂🙂"],
}


def constraint_list() -> list[dict]:
    out = []
    for name, src in GBNF.items():
        out.append({"name": name, "kind": "gbnf", "source": src})
    for name, schema in SCHEMAS.items():
        out.append({"name": name, "kind": "json_schema", "source": json.dumps(schema, ensure_ascii=False)})
    out.append({"name": "json", "kind": "json", "source": ""})
    for name, rx in REGEXES.items():
        out.append({"name": name, "kind": "regex", "source": rx})
    for name, strs in CHOICES.items():
        out.append({"name": name, "kind": "choice", "source": json.dumps(strs, ensure_ascii=False)})
    return out


# Which constraints run on which vocabulary: everything on SmolLM2, a
# rotating subset elsewhere (Llama 3 is 128k tokens, Gemma 3 262k).
ALL = [c["name"] for c in constraint_list()]
VOCABS = {
    "smollm2": ALL,
    "llama3": ["schema-nested", "schema-anyof", "gbnf-arith", "gbnf-unicode", "gbnf-escapes", "json",
               "regex-email", "regex-classes", "choice-unicode"],
    "gemma3": ["schema-nested", "gbnf-unicode", "gbnf-escapes", "schema-arrays", "schema-enum",
               "schema-recursive", "json", "regex-unicode", "choice-prefixes"],
    "qwen2": ["gbnf-program", "gbnf-dot", "gbnf-nested", "schema-strings", "schema-integers", "schema-anyof",
              "schema-format", "regex-digits", "regex-alt", "regex-classes", "choice-unicode"],
}
WALKS = {"smollm2": 3, "llama3": 3, "gemma3": 3, "qwen2": 3}


def gbnf_for_xgrammar(src: str) -> str:
    """GBNF -> xgrammar EBNF: `.` outside literals and classes becomes `[^]`."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if c in "\"[":
            close = '"' if c == '"' else "]"
            j = i + 1
            while j < n and src[j] != close:
                j += 2 if src[j] == "\\" else 1
            out.append(src[i:j + 1])
            i = j + 1
        elif c == "#":
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(src[i:j])
            i = j
        elif c == ".":
            out.append("[^]")
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def choice_ebnf(strings: list[str]) -> str:
    """A choice as an EBNF alternation of literals (json.dumps escapes are GBNF escapes)."""
    return "root ::= " + " | ".join(json.dumps(s, ensure_ascii=False) for s in strings) + "\n"


def compile_xgr(compiler, xgr, c: dict):
    kind, src = c["kind"], c["source"]
    if kind == "gbnf":
        return compiler.compile_grammar(xgr.Grammar.from_ebnf(gbnf_for_xgrammar(src)))
    if kind == "json_schema":
        # vt's language: xgrammar's defaults (lib/grammar/json-schema-grammar.h),
        # except that its length-bounded strings' class [^"\\\r\n] lets raw
        # control characters into a JSON string (invalid JSON, RFC 8259); vt
        # excludes U+0000-U+001F there as in its other strings, so xgrammar's
        # grammar is patched the same way before it computes the masks.
        ebnf = str(xgr.Grammar.from_json_schema(src, any_whitespace=True, strict_mode=True))
        bounded = '[^\\"\\\\\\r\\n]'
        ebnf = ebnf.replace(bounded, '[^\\"\\\\\\0-\\x1f]')
        return compiler.compile_grammar(xgr.Grammar.from_ebnf(ebnf))
    if kind == "json":
        return compiler.compile_builtin_json_grammar()
    if kind == "regex":
        return compiler.compile_regex(src)
    if kind == "choice":
        return compiler.compile_grammar(xgr.Grammar.from_ebnf(choice_ebnf(json.loads(src))))
    raise ValueError(kind)


# ---- vt's token policy, reproduced from the files ------------------------------
#
# lib/tokenizer/pipeline-tokenizer.cpp: an added token is CONTROL when marked
# special (its piece is then empty), USER_DEFINED otherwise.
# lib/tokenizer/vocab.cpp (derive_specials): the end-of-generation set is the
# eos of tokenizer_config.json, the eot / eom / FIM pad, repo and file
# separator tokens found by text, and every token whose text is one of
# kEogTexts. test-grammar-oracle checks both sets against vt's own answer
# before any mask, so a drift of either side shows up as such.

EOG_TEXTS = ["<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
             "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
             "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
             "<｜end▁of▁sentence｜>"]
EOT_TEXTS = ["<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
             "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>"]
FIM_PAD_TEXTS = ["<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"]
FIM_REP_TEXTS = ["<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"]
FIM_SEP_TEXTS = ["<|file_sep|>"]


def vt_policy(fixture: Path) -> tuple[list[int], list[int]]:
    """(stop ids, control ids) as vt derives them from a tokenizer.json fixture."""
    tj = json.loads((fixture / "tokenizer.json").read_text(encoding="utf-8"))
    cfg_path = fixture / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text(encoding="utf-8")) if cfg_path.exists() else {}
    vocab = dict(tj["model"]["vocab"])
    added = list(tj.get("added_tokens") or [])
    seen = {a["content"] for a in added}
    for k, a in sorted(cfg.get("added_tokens_decoder", {}).items(), key=lambda kv: int(kv[0])):
        if a["content"] not in seen:
            added.append(dict(a, id=int(k)))
    text_to_id = dict(vocab)
    control = set()
    for a in added:
        tid = vocab.get(a["content"], a["id"])
        text_to_id[a["content"]] = tid
        if a.get("special"):
            control.add(tid)

    def cfg_id(key):
        v = cfg.get(key)
        if isinstance(v, dict):
            v = v.get("content")
        return text_to_id.get(v) if isinstance(v, str) else None

    def first(texts):
        return next((text_to_id[t] for t in texts if t in text_to_id), None)

    stop = {cfg_id("eos_token"), first(EOT_TEXTS), text_to_id.get("<|eom_id|>"),
            first(FIM_PAD_TEXTS), first(FIM_REP_TEXTS), first(FIM_SEP_TEXTS)}
    stop |= {text_to_id[t] for t in EOG_TEXTS if t in text_to_id}
    stop.discard(None)
    # Harmony-style vocabularies: <|end|> ends a message, not the generation.
    has = lambda t: t in text_to_id  # noqa: E731
    if has("<|end|>") and ((has("<|return|>") and (has("<|call|>") or has("<|calls|>")))
                           or ((has("<|call|>") or has("<|calls|>")) and has("<|flush|>"))):
        stop.discard(text_to_id["<|end|>"])
    return sorted(stop), sorted(control)


# ---- masks --------------------------------------------------------------------

FNV_OFFSET, FNV_PRIME, MASK64 = 0xCBF29CE484222325, 0x100000001B3, (1 << 64) - 1


def fnv1a64(ids: np.ndarray) -> str:
    """FNV-1a 64 of the sorted ids as little-endian int32 bytes, as 16 hex digits."""
    h = FNV_OFFSET
    for b in np.asarray(ids, dtype="<i4").tobytes():
        h = ((h ^ b) * FNV_PRIME) & MASK64
    return f"{h:016x}"


def allowed_ids(bitmask, n_vocab: int) -> np.ndarray:
    words = bitmask.numpy().reshape(-1).view(np.uint32)
    bits = np.unpackbits(words.view(np.uint8), bitorder="little")[:n_vocab]
    return np.flatnonzero(bits).astype(np.int64)


def delta(ids: np.ndarray) -> list[int]:
    return [int(ids[0])] + np.diff(ids).tolist() if len(ids) else []


def step_record(allowed: np.ndarray, n_vocab: int) -> dict:
    rec = {"n": int(len(allowed)), "h": fnv1a64(allowed)}
    n_rej = n_vocab - len(allowed)
    if len(allowed) <= n_rej and len(allowed) <= EXPLICIT_MAX:
        rec["a"] = delta(allowed)
    elif n_rej < len(allowed) and n_rej <= EXPLICIT_MAX:
        rec["r"] = delta(np.setdiff1d(np.arange(n_vocab), allowed))
    return rec


# ---- walks --------------------------------------------------------------------

class Features:
    """Per-token facts the walks' choices are biased by."""
    CLOSERS = set(b'"}]),;!?.\n>')

    def __init__(self, pieces: list[bytes]):
        self.length = np.array([len(p) for p in pieces])
        self.ws = np.array([len(p) > 0 and all(b in b" \t\r\n" for b in p) for p in pieces])
        self.closes = np.array([any(b in self.CLOSERS for b in p) for p in pieces])


def choose(rng: random.Random, allowed: np.ndarray, stop: list[int], feat: Features, step: int,
           style: str, matcher) -> int:
    """A random allowed token, biased so that walks make progress and end:
    whitespace-only tokens are rare (JSON allows any amount), multi-byte
    tokens are preferred, a stop token is taken more often as the walk gets
    longer, and from a style-dependent step on the walk looks ahead for a
    token that completes the language, else prefers tokens holding closing
    characters (quotes, brackets, punctuation)."""
    is_stop = np.isin(allowed, stop)
    stops, cand = allowed[is_stop].tolist(), allowed[~is_stop]
    if stops and (len(cand) == 0 or rng.random() < 0.3 + 0.6 * step / MAX_STEPS):
        return rng.choice(stops)
    if len(cand) == 0:
        raise RuntimeError("empty mask")
    pick = lambda ids: int(ids[rng.randrange(len(ids))])  # noqa: E731
    not_ws = cand[~feat.ws[cand]]
    if len(not_ws) and rng.random() < 0.95:
        cand = not_ws
    close_from = {"closer": 2, "long": 12, "uniform": 24}[style]
    if step >= close_from:
        closing = cand[feat.closes[cand]]
        tries = [pick(closing) for _ in range(min(16, len(closing)))] + [pick(cand) for _ in range(8)]
        for t in tries:
            fork = matcher.fork()
            if fork.accept_token(t) and fork.is_completed():
                return t
        if len(closing) and rng.random() < 0.6:
            return pick(closing)
    if style != "uniform":
        longer = cand[feat.length[cand] > 1]
        if len(longer) and rng.random() < 0.8:
            return pick(longer)
    return pick(cand)


def walk(xgr, compiled, n_vocab: int, stop: list[int], feat: Features, seed: int, style: str) -> dict:
    rng = random.Random(seed)
    matcher = xgr.GrammarMatcher(compiled)
    bitmask = xgr.allocate_token_bitmask(1, n_vocab)
    tokens, steps, after = [], [], []
    while True:
        matcher.fill_next_token_bitmask(bitmask)
        allowed = allowed_ids(bitmask, n_vocab)
        steps.append(step_record(allowed, n_vocab))
        if after:
            # vt's is_completed: accepting and nothing but a stop token allowed.
            after[-1][2] = int(after[-1][0] and bool(np.isin(allowed, stop).all()))
        if len(tokens) >= MAX_STEPS or len(allowed) == 0:
            break
        t = choose(rng, allowed, stop, feat, len(tokens), style, matcher)
        if not matcher.accept_token(t):
            raise RuntimeError(f"xgrammar refused token {t} that its own mask allowed")
        tokens.append(t)
        term = matcher.is_terminated()
        after.append([int(matcher.is_completed()), int(term), int(term)])
        if term:
            break
    return {"seed": seed, "style": style, "tokens": tokens, "steps": steps, "after": after}


# ---- one vocabulary -------------------------------------------------------------

def ranges(ids: list[int]) -> list[list[int]]:
    """Sorted ids as [first, last] runs."""
    out: list[list[int]] = []
    for i in ids:
        if out and out[-1][1] == i - 1:
            out[-1][1] = i
        else:
            out.append([i, i])
    return out


def default_policy_probe(xgr, tok, stop: list[int], control: list[int]) -> dict:
    """What xgrammar's from_huggingface does with no help: its stop and
    special ids, which of vt's control tokens it allows inside a JSON string
    (as text) and which of vt's stop ids it allows after a JSON value; and,
    given vt's stop ids, which of them it allows as their text."""
    info = xgr.TokenizerInfo.from_huggingface(tok)
    n = info.vocab_size
    compiled = xgr.GrammarCompiler(info, max_threads=2).compile_builtin_json_grammar()
    bitmask = xgr.allocate_token_bitmask(1, n)
    m = xgr.GrammarMatcher(compiled)
    m.accept_string('["')
    m.fill_next_token_bitmask(bitmask)
    in_string = set(allowed_ids(bitmask, n).tolist())
    m = xgr.GrammarMatcher(compiled)
    m.accept_string("[1]")
    m.fill_next_token_bitmask(bitmask)
    at_end = set(allowed_ids(bitmask, n).tolist())
    text_control = [i for i in control if i in in_string]
    default_stop, default_special = list(info.stop_token_ids), list(info.special_token_ids)

    # A stop token whose text is not empty is matched as text too: with the
    # grammar `"x" TEXT`, after "x" it is allowed (not accepting yet), and
    # taking it terminates the matcher.
    info = xgr.TokenizerInfo.from_huggingface(tok, stop_token_ids=stop)
    n = info.vocab_size
    compiler = xgr.GrammarCompiler(info, max_threads=2)
    stop_as_text = []
    for i in stop:
        text = info.decoded_vocab[i].decode("utf-8", errors="replace")
        m = xgr.GrammarMatcher(compiler.compile_grammar(
            xgr.Grammar.from_ebnf("root ::= " + json.dumps("x" + text, ensure_ascii=False))))
        m.accept_string("x")
        m.fill_next_token_bitmask(bitmask)
        allowed = i in set(allowed_ids(bitmask, n).tolist())
        if allowed and m.accept_token(i):
            stop_as_text.append([i, text, int(m.is_terminated())])
    return {
        "stop_ids": default_stop,
        "special_ids": default_special,
        "control_allowed_in_json_string": len(text_control),
        "control_allowed_in_json_string_examples": [[i, tok.convert_ids_to_tokens(i)] for i in text_control[:8]],
        "vt_stop_ids_allowed_after_json_value": sorted(i for i in stop if i in at_end),
        "stop_ids_allowed_as_their_text_then_terminated": stop_as_text,
    }


class Oracle:
    """xgrammar's view of one fixture vocabulary, with vt's token policy
    stated through xgrammar's own means (module docstring)."""

    def __init__(self, name: str):
        import torch  # noqa: F401  (xgrammar's bitmasks are torch tensors)
        import transformers
        import xgrammar as xgr
        from transformers import AutoTokenizer
        transformers.logging.set_verbosity_error()
        self.xgr, self.name = xgr, name
        self.fixture = si.fixtures_dir() / name
        if not (self.fixture / "tokenizer.json").exists():
            raise SystemExit(f"{self.fixture}/tokenizer.json is missing: "
                             "run tests/tokenizers/make-goldens.py --fixtures-only")
        self.tok = AutoTokenizer.from_pretrained(str(self.fixture))
        self.stop, self.control = vt_policy(self.fixture)
        stop, control = self.stop, self.control

        self.base = base = xgr.TokenizerInfo.from_huggingface(self.tok, stop_token_ids=stop)
        self.n_vocab = n_vocab = base.vocab_size
        encoded = [""] * n_vocab
        for text, i in self.tok.get_vocab().items():
            if i < n_vocab:
                encoded[i] = text
        # An empty text makes a control token special (never allowed), and
        # keeps a stop token from being matched as its text (xgrammar allows
        # a stop token whose text completes the language, README).
        for i in control + stop:
            encoded[i] = ""
        self.info = info = xgr.TokenizerInfo(encoded, vocab_type=base.vocab_type, vocab_size=n_vocab,
                                             stop_token_ids=stop, add_prefix_space=base.add_prefix_space)
        assert sorted(info.stop_token_ids) == stop, (info.stop_token_ids, stop)
        assert sorted(info.special_token_ids) == sorted(set(control) - set(stop)), "control ids did not become special"
        self.pieces = [bytes(p) for p in info.decoded_vocab]
        blank = set(control) | set(stop)
        assert [p for i, p in enumerate(self.pieces) if i not in blank] == \
            [bytes(p) for i, p in enumerate(base.decoded_vocab) if i not in blank], "texts changed"
        self.compiler = xgr.GrammarCompiler(info, max_threads=2, cache_enabled=False)


def make_vocab(name: str, constraints: list[dict]) -> dict:
    import transformers
    o = Oracle(name)
    xgr, tok, stop, control, base, n_vocab, compiler = o.xgr, o.tok, o.stop, o.control, o.base, o.n_vocab, o.compiler
    fixture, pieces = o.fixture, o.pieces
    feat = Features(pieces)
    fixture_bytes = (fixture / "tokenizer.json").read_bytes()
    out = {
        "oracle": f"xgrammar {xgr_version()} (transformers {transformers.__version__})",
        "vocab": name,
        "loads": {"root": "fixtures", "path": f"{name}/tokenizer.json",
                  "size": len(fixture_bytes), "fnv1a64": fnv1a64_bytes(fixture_bytes)},
        "n_vocab": n_vocab,
        "vocab_type": str(base.vocab_type).split(".")[-1],
        "stop_ids": stop,
        "control_ranges": ranges(control),
        "xgrammar_default": default_policy_probe(xgr, tok, stop, control),
        "constraints": [],
        "walks": [],
    }
    styles = ["long", "closer", "uniform"]
    for ci, c in enumerate(constraints):
        t0 = time.perf_counter()
        compiled = compile_xgr(compiler, xgr, c)
        ms = (time.perf_counter() - t0) * 1e3
        entry = {"name": c["name"], "kind": c["kind"], "source": c["source"]}
        if c["kind"] == "gbnf" and gbnf_for_xgrammar(c["source"]) != c["source"]:
            entry["xgrammar_source"] = gbnf_for_xgrammar(c["source"])
        if c["kind"] == "choice":
            entry["xgrammar_source"] = choice_ebnf(json.loads(c["source"]))
        out["constraints"].append(entry)
        for w in range(WALKS[name]):
            seed = 1000 * ci + w + sum(name.encode())
            rec = walk(xgr, compiled, n_vocab, stop, feat, seed, styles[w % len(styles)])
            rec["constraint"] = ci
            out["walks"].append(rec)
            log(f"{name} {c['name']} walk {w}: {len(rec['tokens'])} tokens, "
                f"{'terminated' if rec['after'] and rec['after'][-1][1] else 'open'} (compile {ms:.0f} ms)")
    return out


def fnv1a64_bytes(data: bytes) -> str:
    # The file's hash, to tell a regenerated fixture from the one used here.
    h = FNV_OFFSET
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & MASK64
    return f"{h:016x}"


def xgr_version() -> str:
    from importlib.metadata import version
    return version("xgrammar")


def dump(g: dict) -> str:
    """One top-level key a line, one walk a line: small, diffable."""
    lines = ["{"]
    keys = list(g)
    for k in keys:
        comma = "," if k != keys[-1] else ""
        if k in ("constraints", "walks"):
            lines.append(f'  "{k}": [')
            for i, item in enumerate(g[k]):
                sep = "," if i + 1 < len(g[k]) else ""
                lines.append("    " + json.dumps(item, ensure_ascii=False, separators=(",", ":")) + sep)
            lines.append("  ]" + comma)
        else:
            lines.append(f'  "{k}": ' + json.dumps(g[k], ensure_ascii=False, separators=(",", ":")) + comma)
    lines.append("}")
    return "\n".join(lines) + "\n"


def explain(spec: str, against: str | None) -> int:
    """Replays walk WALK of GOLDEN (goldens/<vocab>.json) with xgrammar up to
    STEP and prints the allowed ids there with their texts; with a file of
    vt's allowed ids (whitespace-separated, as test-grammar-oracle writes
    them under VT_GRAMMAR_DUMP_DIR), only the ids on which the two differ."""
    name, wi, si_ = spec.split(":")
    g = json.loads((GOLDENS / f"{name}.json").read_text(encoding="utf-8"))
    w = g["walks"][int(wi)]
    c = g["constraints"][w["constraint"]]
    o = Oracle(name)
    m = o.xgr.GrammarMatcher(compile_xgr(o.compiler, o.xgr, c))
    for t in w["tokens"][:int(si_)]:
        assert m.accept_token(t)
    bitmask = o.xgr.allocate_token_bitmask(1, o.n_vocab)
    m.fill_next_token_bitmask(bitmask)
    xs = set(allowed_ids(bitmask, o.n_vocab).tolist())
    text = b"".join(o.pieces[t] for t in w["tokens"][:int(si_)])
    print(f"{c['name']} ({c['kind']}) walk {wi} step {si_}; text so far: {text!r}")
    print(f"xgrammar allows {len(xs)}")
    show = lambda ids: " ".join(f"{i}:{o.pieces[i]!r}" for i in sorted(ids)[:200])  # noqa: E731
    if against:
        vs = {int(x) for x in Path(against).read_text().split()}
        print(f"vt allows {len(vs)}")
        print("only xgrammar:", show(xs - vs))
        print("only vt:", show(vs - xs))
    else:
        print(show(xs))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="comma-separated vocabularies (default: all)")
    ap.add_argument("--explain", metavar="VOCAB:WALK:STEP",
                    help="print xgrammar's allowed ids at one step of a golden walk (diagnosis)")
    ap.add_argument("--against", metavar="FILE", help="with --explain: vt's allowed ids, to print the difference")
    args = ap.parse_args()
    if args.explain:
        return explain(args.explain, args.against)
    names = args.only.split(",") if args.only else list(VOCABS)
    by_name = {c["name"]: c for c in constraint_list()}
    GOLDENS.mkdir(exist_ok=True)
    for name in names:
        g = make_vocab(name, [by_name[c] for c in VOCABS[name]])
        path = GOLDENS / f"{name}.json"
        path.write_text(dump(g), encoding="utf-8")
        log(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
