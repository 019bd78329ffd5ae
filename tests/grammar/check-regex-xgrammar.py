#!/usr/bin/env python3
"""Checks vt's regex -> GBNF converter (lib/grammar/regex-grammar.cpp) against
xgrammar 0.2.9's own regex converter, whose language vt promises to match.

For every pattern of PATTERNS, both sides must agree on whether the pattern is
accepted at all. When it is, vt's GBNF is parsed by xgrammar's own EBNF
parser, and the two grammars' token masks are compared at every step of
random walks through the language over a small vocabulary (all 256 single
bytes, some multi-byte tokens, a stop token): equal masks at every prefix
visited means the same strings, prefixes and ends. Python's `re` gives a
second opinion on whole strings where the pattern means the same there.

Usage: check-regex-xgrammar.py TOOL [--walks N] [--seed S]
TOOL is a program that prints the GBNF grammar (start rule `root`) of the
regex given as its only argument, or exits 2 with "<vt_status> <message>" on
stderr when regex_to_gbnf throws. Needs xgrammar (and torch); exits 77 (a
skip) without them. Such a tool is a few lines around regex_to_gbnf:

    std::string rules;
    try {
        std::string start = vt::grammar::regex_to_gbnf(argv[1], "re", rules);
        std::cout << "root ::= " << start << "\n" << rules;
    } catch (const vt::Error &e) {
        std::cerr << e.status() << " " << e.what() << "\n";
        return 2;
    }
"""
import argparse
import random
import re
import subprocess
import sys
import warnings

try:
    import torch
    import xgrammar as xgr
except ImportError as e:  # pragma: no cover
    print(f"skip: {e}")
    sys.exit(77)

# xgrammar's \s (ECMAScript's white space and line terminators), for `re`.
SPACE = "\\f\\n\\r\\t\\v\\x20\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
SAME = True  # `re` (with DOTALL and ASCII) means the same as xgrammar

# (pattern, python) where python is SAME, an equivalent `re` pattern, or
# None when `re` cannot express it (xgrammar quirks, surrogates).
PATTERNS = [
    ("", SAME), ("abc", SAME), ("a|b", SAME), ("a|", SAME), ("|a", SAME), ("a||b", SAME),
    ("()", SAME), ("(a|)", SAME), ("(|a)b", SAME), ("a(|)b", SAME),
    ("[a-z]+", SAME), ("[^a-z]*", SAME), ("\\d{2,4}", SAME), ("a{3}", SAME), ("a{2,}", SAME),
    ("a{0}", SAME), ("a{0,0}b", SAME), ("(ab){1,3}c", SAME), ("x{0,2}?y", SAME),
    ("a*?b+?c??", SAME), (".", SAME), (".*", SAME), ("a.c", SAME), ("[^a]", SAME),
    ("\\w+@\\w+\\.com", SAME), ("\\W\\D", SAME),
    ("\\s", "[" + SPACE + "]"), ("\\S+", "[^" + SPACE + "]+"), ("[\\s]x", "[" + SPACE + "]x"),
    ("[^\\s]", "[^" + SPACE + "]"), ("[\\S\\d]", None), ("[\\D]", SAME), ("[\\W_]", SAME),
    ("^a$", "a"), ("^(a|b)$", "(a|b)"), ("^a$|^b$", "a|b"), ("a^b", "ab"), ("a$b", "ab"),
    ("a^*", "a*"), ("(^)|a", "|a"), ("(a|$)", "(a|)"),
    ("(?:ab|cd)*e", SAME), ("(?<name>x)y", "(?P<name>x)y"), ("(?<>x)", "(x)"),
    ("(a|b|c)*abb", SAME), ("(a*)*", SAME), ("(a*)+b", SAME), ("(a?b?)*c", SAME), ("(a|b?)+", SAME),
    ("(a?){2,}", SAME), ("(a?){3}", SAME), ("(|)*x", "()*x"), ("((a|)|b)+", SAME), ("(a*b*)*", SAME),
    ("[a-]", SAME), ("[-a]", SAME), ("[a-b-c]", SAME), ("[--/]", SAME), ("[!--]", SAME),
    ("[\\d-z]", "[0-9z-]"), ("[+-\\d]", "[+-09-]"), ("[\\d-\\w]", "[-0-9a-zA-Z_]"), ("[a\\-z]", SAME),
    ("[\\]]", SAME), ("[a\\]b]", SAME), ("[!-\\]]", SAME), ("[^]", "(?s:.)"), ("[^]a]", "(?s:.)a\\]"),
    ("[\\^a]", "[^a]"), ("[\\x5e]", "(?s:.)"), ("[a^]", SAME), ("[^^]", SAME), ("[[]", "\\["), ("[a[]", "[a\\[]"),
    ("[\\b]", "[\\x08]"), ("[\\n\\t]", SAME), ('["]', SAME), ("[\\\\]", SAME), ("[.]", SAME), ("[$^]", SAME),
    ("[(){}*+?|]", SAME), ("[\\p{L}]", "[p{L}]"), ("[\\1]", "1"), ("[\\k]", "k"), ("[\\B]", "B"),
    ("[\\cA]", "\\x01"), ("[\\0]", "\\x00"), ("[\\x41-\\x5a]", "[A-Z]"), ("[a-\\x7a]", "[a-z]"),
    ("[\\u00e9-\\u00ff]+", SAME), ("[\\u{1F600}-\\u{1F64F}]", "[\\U0001F600-\\U0001F64F]"),
    ("[é-ü]", SAME), ("[😀-🙏]", SAME), ("[^😀]", SAME), ("é+😀?", SAME), ("中文|日本", SAME),
    ('"', SAME), ("'", SAME), ("\\\\", SAME), ("\\.\\/\\-", "\\./-"), ("\\q", "q"), ("\\é", "é"),
    ("\\ ", " "), ('\\"', '"'), ("\\a\\e\\f\\v\\r\\n\\t", "\\x07\\x1b\\f\\v\\r\\n\\t"),
    ("\\0", "\\x00"), ("\\00", "\\x000"), ("a\\x00b", "a\\x0b"), ("\\x41", "A"), ("\\x414", "\\u0414"),
    ("\\x4g", "\\x04g"), ("\\xgg", "xgg"), ("\\u00E9", "é"), ("\\u123z", "u123z"), ("\\ug123", "ug123"),
    ("\\U0001F600", "😀"), ("\\u{1F600}", "😀"), ("\\u{41}", "A"), ("\\cA\\cz", "\\x01\\x1a"),
    ("\\uD83D\\uDE00", None), ("[\\uD800-\\uDFFF]", None), ("\\x{41}", "x{41}"),
    ("a{1000}", SAME), ("(ab|c){2,5}d", SAME), ("[0-9a-fA-F]{8}-[0-9a-fA-F]{4}", SAME),
    ("\n", SAME), ("a\tb", SAME), ("\x7f", SAME), ("\x01", SAME),
    # JSON Schema "format"-style patterns.
    ("^\\d{4}-\\d{2}-\\d{2}$", "\\d{4}-\\d{2}-\\d{2}"),
    ("^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]{2,}$", "[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]{2,}"),
    ("^(\\+|-)?\\d+(\\.\\d+)?([eE][+-]?\\d+)?$", "(\\+|-)?\\d+(\\.\\d+)?([eE][+-]?\\d+)?"),
    ("^((25[0-5]|2[0-4]\\d|[01]?\\d\\d?)\\.){3}(25[0-5]|2[0-4]\\d|[01]?\\d\\d?)$",
     "((25[0-5]|2[0-4]\\d|[01]?\\d\\d?)\\.){3}(25[0-5]|2[0-4]\\d|[01]?\\d\\d?)"),
    ("^https?://[^\\s/$.?#].[^\\s]*$", "https?://[^" + SPACE + "/$.?#].[^" + SPACE + "]*"),
    ("^[a-zA-Z_][a-zA-Z0-9_]*$", "[a-zA-Z_][a-zA-Z0-9_]*"),
    ("a?[^\\Sa]x", "a?[" + SPACE + "]x"),
    ("[^\"\\\\\\x00-\\x1f]*", SAME), ("(\\\\[\"\\\\/bfnrt]|[^\"\\\\])*", SAME),
]

# Patterns both sides must refuse.
REFUSED = [
    "(", ")", "a)", "(a", "[", "[a", "[]", "[]a]", "*a", "a|*", "(*)", "^*", "a**", "a*??", "a{2}{3}",
    "a?+", "a*^?", "{", "a{", "a{,3}", "a{ 2}", "x{}", "x{3,2}", "\\", "a\\", "\\x", "\\xg", "\\x4",
    "\\u", "\\u1", "\\c", "\\c1", "\\cé", "\\u{}a", "\\u{41", "\\u{0000041}", "[\\x]", "[\\",
    "[z-a]", "[a--]", "[a-\\d]", "[\\w-\\d]", "[a\nb]", "[\r]", "\\1", "(a)\\1", "\\k<n>", "\\b",
    "\\B", "\\p{L}", "\\P{L}", "(?=a)", "(?!a)", "(?<=a)", "(?<!a)", "(?i)a", "(?P<n>a)", "(?",
    "(?<", "(?<n1>a)", "(?<ab", "(?:",
]

# Patterns vt refuses on purpose where xgrammar accepts them: code points
# above U+10FFFF (xgrammar matches their 4-byte non-UTF-8 "encoding").
VT_REFUSES = ["\\x110000", "\\U00110000", "\\u{110000}", "\\xFFFFFFFFF"]

EXTRA_TOKENS = ["ab", "abc", "é", "😀", "\n\n", "12", "  ", "\u2028", "中文", "a\n", '"', "\\\\", "-0", "@x"]


def make_tokenizer():
    vocab = [bytes([i]) for i in range(256)] + [t.encode() for t in EXTRA_TOKENS] + [b"<eos>"]
    return xgr.TokenizerInfo(vocab, xgr.VocabType.RAW, stop_token_ids=[len(vocab) - 1]), vocab


def vt_grammar(tool, pattern):
    """(grammar text, None) or (None, error line) from the printing tool."""
    r = subprocess.run([tool, pattern.encode()], capture_output=True)
    if r.returncode == 0:
        return r.stdout.decode(), None
    if r.returncode == 2:
        return None, r.stderr.decode().strip()
    raise RuntimeError(f"{tool} failed on {pattern!r}: {r.stderr.decode()}")


def xgr_grammar(pattern):
    try:
        return xgr.Grammar.from_regex(pattern), None
    except Exception as e:  # xgrammar raises RuntimeError and others
        return None, str(e).strip().splitlines()[-1]


def full_match(compiled, data):
    m = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
    return m.accept_string(data) and m.is_completed()


mask_noise = set()  # tokens on which xgrammar's masks and accept_token disagreed


def walk(rng, compiler_pair, vocab, max_steps):
    """One random walk; returns an error string, or (bytes, completed)."""
    a = xgr.GrammarMatcher(compiler_pair[0])
    b = xgr.GrammarMatcher(compiler_pair[1])
    mask_a = xgr.allocate_token_bitmask(1, len(vocab))
    mask_b = xgr.allocate_token_bitmask(1, len(vocab))
    eos = len(vocab) - 1
    text = b""
    for _ in range(max_steps):
        a.fill_next_token_bitmask(mask_a)
        b.fill_next_token_bitmask(mask_b)
        if not torch.equal(mask_a, mask_b):
            ia = set(torch.nonzero(xgr.testing.bitmask_to_bool_mask(mask_a, len(vocab))[0]).flatten().tolist())
            ib = set(torch.nonzero(xgr.testing.bitmask_to_bool_mask(mask_b, len(vocab))[0]).flatten().tolist())
            # NOTE: xgrammar 0.2.9's masks depend on the grammar's form in
            # places: for "a?[^\Sa]x" its mask leaves out the token "a\n"
            # that accept_token takes ("a{0,1}" instead of "a?" masks it in).
            # A token on which accept_token agrees is such a case, not a
            # difference of languages.
            real = [i for i in ia ^ ib if a.fork().accept_token(i) != b.fork().accept_token(i)]
            if real:
                only_x = sorted(vocab[i] for i in real if i in ia)[:8]
                only_v = sorted(vocab[i] for i in real if i in ib)[:8]
                return f"masks differ after {text!r}: only xgrammar {only_x}, only vt {only_v}"
            mask_noise.update(vocab[i] for i in ia ^ ib)
        done = a.is_completed()
        if done != b.is_completed():
            return f"is_completed differs after {text!r}: xgrammar {done}"
        # NOTE: the stop token's bit is no end-of-string signal: xgrammar
        # also sets it when the token's text ("<eos>") fits the grammar.
        allowed = torch.nonzero(xgr.testing.bitmask_to_bool_mask(mask_a, len(vocab))[0]).flatten().tolist()
        choices = [t for t in allowed if t != eos]
        if not choices or (done and rng.random() < 0.2):
            return text, done
        # Favour printable ASCII and multi-byte tokens, so that walks are
        # not mostly stray UTF-8 bytes where '.' or [^...] allows them.
        nice = [t for t in choices if t >= 256 or 0x20 <= t < 0x7F]
        tok = rng.choice(nice if nice and rng.random() < 0.7 else choices)
        if not (a.accept_token(tok) and b.accept_token(tok)):
            return f"a token allowed by both masks was refused after {text!r}"
        text += vocab[tok]
    return text, False


def mutations(rng, s, alphabet):
    out = []
    for _ in range(6):
        t = bytearray(s)
        k = rng.randrange(3)
        i = rng.randrange(len(t) + 1)
        if k == 0:
            t[i:i] = rng.choice(alphabet)
        elif k == 1 and t:
            del t[min(i, len(t) - 1)]
        elif t:
            t[min(i, len(t) - 1):min(i, len(t) - 1) + 1] = rng.choice(alphabet)
        out.append(bytes(t))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tool")
    ap.add_argument("--walks", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    warnings.simplefilter("ignore", FutureWarning)  # re's notes on "[--/]" and the like
    tokenizer, vocab = make_tokenizer()
    compiler = xgr.GrammarCompiler(tokenizer, cache_enabled=False)
    alphabet = [t.encode() for t in ["a", "b", "c", "0", "9", "-", "]", "^", "\n", " ", "é", "😀", "\x00", "\u00a0",
                                      "x", "_", ".", "@", "\\", '"', "A", "z", "\u2028"]]
    failures = []
    walks = re_checks = 0

    for pattern in REFUSED:
        text, err = vt_grammar(args.tool, pattern)
        _, xerr = xgr_grammar(pattern)
        if xerr is None:
            failures.append(f"{pattern!r}: xgrammar accepts it now (this list is out of date)")
        if err is None:
            failures.append(f"{pattern!r}: vt accepts it, xgrammar refuses it ({xerr})")

    for pattern in VT_REFUSES:
        if vt_grammar(args.tool, pattern)[1] is None:
            failures.append(f"{pattern!r}: vt accepts it")

    for pattern, python in PATTERNS:
        text, err = vt_grammar(args.tool, pattern)
        xg, xerr = xgr_grammar(pattern)
        if err is not None or xerr is not None:
            failures.append(f"{pattern!r}: refused (vt: {err}; xgrammar: {xerr})")
            continue
        try:
            ours = compiler.compile_grammar(xgr.Grammar.from_ebnf(text, root_rule_name="root"))
        except Exception as e:
            failures.append(f"{pattern!r}: xgrammar cannot read vt's GBNF {text!r}: {e}")
            continue
        theirs = compiler.compile_grammar(xg)
        py = None if python is None else re.compile(pattern if python is SAME else python, re.DOTALL | re.ASCII)
        samples = []
        for _ in range(args.walks):
            r = walk(rng, (theirs, ours), vocab, 40)
            if isinstance(r, str):
                failures.append(f"{pattern!r}: {r}; vt's GBNF: {text.strip()!r}")
                break
            walks += 1
            samples.append(r[0])
            if r[1] and py is not None:
                try:
                    s = r[0].decode("utf-8")
                except UnicodeDecodeError:
                    continue  # a surrogate, which negated classes and '.' allow (as xgrammar does)
                re_checks += 1
                if not py.fullmatch(s):
                    failures.append(f"{pattern!r}: re refuses {s!r}, which both grammars accept")
        # Whole strings, in and out of the language, against `re`.
        if py is not None:
            for s in [x for smp in samples for x in [smp] + mutations(rng, smp, alphabet)]:
                try:
                    u = s.decode("utf-8")
                except UnicodeDecodeError:
                    continue
                re_checks += 1
                want = py.fullmatch(u) is not None
                got_x, got_v = full_match(theirs, s), full_match(ours, s)
                if got_x != want or got_v != want:
                    failures.append(f"{pattern!r}: {u!r}: re {want}, xgrammar {got_x}, vt {got_v}")
                    break

    if mask_noise:
        print(f"note: xgrammar's own masks and accept_token disagreed on tokens {sorted(mask_noise)[:12]}")
    for f in failures:
        print("FAIL", f)
    print(f"{len(PATTERNS)} patterns compared ({walks} walks, {re_checks} strings checked with re), "
          f"{len(REFUSED) + len(VT_REFUSES)} refusals checked, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
