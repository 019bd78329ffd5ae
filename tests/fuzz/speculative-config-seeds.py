#!/usr/bin/env python3
"""Writes a seed corpus for tests/fuzz/fuzz-speculative-config into DIR
(created if missing) and a libFuzzer dictionary of its keys to DICT: vLLM's
--speculative-config objects for the n-gram, suffix and draft-model methods, other methods and keys
vt refuses, wrong types, numbers out of range and broken JSON. Standard
library only.

usage: speculative-config-seeds.py DIR [DICT]
"""
import os
import sys

SEEDS = [
    '{"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4, "prompt_lookup_min": 2}',
    '{"method": "ngram", "num_speculative_tokens": 3}',
    '{"num_speculative_tokens": 3, "method": "ngram", "prompt_lookup_max": 1}',
    '{"method": "eagle", "model": "yuhuili/EAGLE-LLaMA3-Instruct-8B", "num_speculative_tokens": 5}',
    '{"method": "ngram", "num_speculative_tokens": -1}',
    '{"method": "ngram", "num_speculative_tokens": 4294967296}',
    '{"method": "ngram", "num_speculative_tokens": 2.5}',
    '{"method": 1, "num_speculative_tokens": "3"}',
    '{"method": "ngram", "method": "suffix"}',
    '{"method": "suffix", "num_speculative_tokens": 8, "suffix_decoding_max_tree_depth": 24, '
    '"suffix_decoding_max_cached_requests": 10000, "suffix_decoding_max_spec_factor": 1.0, '
    '"suffix_decoding_min_token_prob": 0.1}',
    '{"method": "suffix"}',
    '{"method": "suffix", "suffix_decoding_max_spec_factor": 1e400, "suffix_decoding_min_token_prob": -0.5}',
    '{"method": "suffix", "prompt_lookup_max": 3}',
    '{"method": "ngram", "num_speculative_tokens": 3, "suffix_decoding_max_tree_depth": 8}',
    '{"method": "draft_model", "model": "draft.gguf", "num_speculative_tokens": 4}',
    '{"model": "draft.gguf", "num_speculative_tokens": 4}',
    '{"method": "draft_model", "num_speculative_tokens": 4}',
    '{"model": "", "num_speculative_tokens": 4}',
    '{"method": "mtp", "num_speculative_tokens": 2}',
    '{"method": "mtp", "num_speculative_tokens": 2, "prompt_lookup_min": 2}',
    '{"model": 7, "num_speculative_tokens": 4}',
    '{"method": "ngram", "model": "draft.gguf", "num_speculative_tokens": 4}',
    '{"model": "draft.gguf", "num_speculative_tokens": 4, "prompt_lookup_max": 3}',
    '["ngram", 5]',
    '{"method": "ngram", ',
    '',
]
KEYS = ['"method"', '"ngram"', '"num_speculative_tokens"', '"prompt_lookup_max"', '"prompt_lookup_min"',
        '"model"', '"draft_model"', '"suffix"', '"suffix_decoding_max_tree_depth"', '"suffix_decoding_max_cached_requests"',
        '"suffix_decoding_max_spec_factor"', '"suffix_decoding_min_token_prob"', "{", "}", ":", ",", "null", "true",
        "1e400", "-0", "0.1"]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    os.makedirs(sys.argv[1], exist_ok=True)
    for i, s in enumerate(SEEDS):
        with open(os.path.join(sys.argv[1], f"seed-{i:02d}"), "wb") as f:
            f.write(s.encode())
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as f:
            for k in KEYS:
                f.write('"' + k.replace("\\", "\\\\").replace('"', '\\"') + '"\n')


if __name__ == "__main__":
    main()
