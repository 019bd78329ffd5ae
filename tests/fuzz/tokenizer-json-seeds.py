#!/usr/bin/env python3
"""Writes a seed corpus of small tokenizer.json documents (each followed by a
"#TEXT" line and a text to encode) for tests/fuzz/fuzz-tokenizer-json into
DIR, and a libFuzzer dictionary of the format's keywords to DICT. Every
component type vt reads appears in some seed. Standard library only.

usage: tokenizer-json-seeds.py DIR [DICT]
"""
import json
import os
import sys

BPE = {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "<0x41>": 3, "<unk>": 4, "##b": 5, "c</w>": 6},
       "merges": ["a b", ["a", "##b"]], "unk_token": "<unk>", "byte_fallback": True, "fuse_unk": True,
       "ignore_merges": True, "continuing_subword_prefix": None, "end_of_word_suffix": None, "dropout": None}
WORDPIECE = {"type": "WordPiece", "vocab": {"[UNK]": 0, "a": 1, "##b": 2, "[CLS]": 3, "[SEP]": 4},
             "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 5}
UNIGRAM = {"type": "Unigram", "unk_id": 0, "byte_fallback": True,
           "vocab": [["<unk>", 0.0], ["a", -1.0], ["ab", -1.5], ["▁", -2.0], ["<0x41>", -5.0]]}
WORDLEVEL = {"type": "WordLevel", "vocab": {"[UNK]": 0, "a": 1, "b": 2}, "unk_token": "[UNK]"}

NORMALIZERS = [
    None, {"type": "NFC"}, {"type": "NFKC"}, {"type": "NFD"}, {"type": "NFKD"}, {"type": "Lowercase"},
    {"type": "Strip", "strip_left": True, "strip_right": True}, {"type": "StripAccents"},
    {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
    {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
    {"type": "Prepend", "prepend": "▁"},
    {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "strip_accents": None,
     "lowercase": True},
    {"type": "Precompiled", "precompiled_charsmap": ""},
    {"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}]},
]
PRE_TOKENIZERS = [
    None, {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
    {"type": "Split", "pattern": {"Regex": "\\p{N}{1,3}"}, "behavior": "Isolated", "invert": False},
    {"type": "Split", "pattern": {"String": "b"}, "behavior": "MergedWithNext", "invert": True},
    {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": True},
    {"type": "Digits", "individual_digits": True}, {"type": "Whitespace"}, {"type": "WhitespaceSplit"},
    {"type": "Punctuation", "behavior": "Contiguous"}, {"type": "BertPreTokenizer"},
    {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, {"type": "Digits",
                                                                        "individual_digits": False}]},
]
DECODERS = [
    None, {"type": "ByteLevel"}, {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always",
                                  "split": True},
    {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
                                      {"type": "ByteFallback"}, {"type": "Fuse"},
                                      {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
    {"type": "WordPiece", "prefix": "##", "cleanup": True}, {"type": "BPEDecoder", "suffix": "</w>"},
]
POST = [
    None, {"type": "ByteLevel", "trim_offsets": False},
    {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                                              {"Sequence": {"id": "A", "type_id": 0}}],
     "pair": [], "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [3], "tokens": ["[CLS]"]}}},
    {"type": "BertProcessing", "sep": ["[SEP]", 4], "cls": ["[CLS]", 3]},
    {"type": "RobertaProcessing", "sep": ["[SEP]", 4], "cls": ["[CLS]", 3], "trim_offsets": True,
     "add_prefix_space": True},
]
ADDED = [{"id": 7, "content": "<s>", "single_word": False, "lstrip": True, "rstrip": True,
          "normalized": False, "special": True},
         {"id": 8, "content": "xy", "single_word": True, "lstrip": False, "rstrip": False,
          "normalized": True, "special": False}]
TEXTS = ["ab abc <s> xy 123 Führer \t\n", "AAAA b a_b ##b 日本語 🚀", ""]


def seeds():
    models = [BPE, WORDPIECE, UNIGRAM, WORDLEVEL]
    n = 0
    for i, model in enumerate(models):
        for j in range(max(len(NORMALIZERS), len(PRE_TOKENIZERS), len(DECODERS), len(POST))):
            doc = {"version": "1.0", "added_tokens": ADDED if j % 2 else [],
                   "normalizer": NORMALIZERS[(i + j) % len(NORMALIZERS)],
                   "pre_tokenizer": PRE_TOKENIZERS[(i + 2 * j) % len(PRE_TOKENIZERS)],
                   "post_processor": POST[(i + j) % len(POST)],
                   "decoder": DECODERS[(i + 3 * j) % len(DECODERS)], "model": model}
            yield f"seed-{n:03d}", json.dumps(doc, ensure_ascii=False) + "\n#TEXT\n" + TEXTS[n % len(TEXTS)]
            n += 1


def keywords():
    words = set()

    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                words.add(k)
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
        elif isinstance(x, str) and x[:1].isupper():
            words.add(x)
    walk([BPE, WORDPIECE, UNIGRAM, WORDLEVEL, NORMALIZERS, PRE_TOKENIZERS, DECODERS, POST, ADDED])
    return sorted(words)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, data in seeds():
        with open(os.path.join(out, name), "w", encoding="utf-8") as f:
            f.write(data)
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w", encoding="utf-8") as f:
            for w in keywords():
                f.write(json.dumps(json.dumps(w)) + "\n")


if __name__ == "__main__":
    main()
