#!/usr/bin/env python3
"""Writes a seed corpus for tests/fuzz/fuzz-harmony into DIR (created if
missing) and a libFuzzer dictionary of harmony's markers to DICT: gpt-oss
completions as openai-harmony renders them (typed here from the format's
documented shapes: analysis, final, calls with the recipient before or after
the channel, built-in tools), cut short, and text that is not harmony.
Standard library only.

usage: harmony-seeds.py DIR [DICT]
"""
import os
import sys

SEEDS = [
    "<|channel|>analysis<|message|>User asks weather.<|end|><|start|>assistant<|channel|>final<|message|>Sunny.",
    "<|channel|>analysis<|message|>Need tool.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather "
    "<|constrain|>json<|message|>{\"city\":\"Paris\"}",
    " to=functions.f<|channel|>commentary json<|message|>{}<|call|>",
    "<|channel|>commentary<|message|>Checking.<|end|><|start|>assistant to=functions.a<|channel|>commentary json"
    "<|message|>{\"x\":[1,2]}<|call|>",
    "<|channel|>analysis to=browser.search code<|message|>{\"query\":\"q\"}<|call|>",
    "<|channel|>final<|message|>a<|start|>b<|channel|>c<|end|> junk <|start|>assistant<|channel|>final<|message|>d",
    "<|channel|>final<|message|>Hello<|re",
    "<|channel|>analysis<|message|>x<|end|><|start|>assistant<|channel|>fin",
    "<|message|>no channel<|end|>",
    "{\"a\": 1}",
    "Hello there",
    "",
]
MARKERS = ["<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|return|>", "<|call|>", "<|constrain|>",
           " to=", "to=functions.", "analysis", "final", "commentary", "assistant", "json", "<|", "|>"]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    os.makedirs(sys.argv[1], exist_ok=True)
    for i, s in enumerate(SEEDS):
        with open(os.path.join(sys.argv[1], f"seed-{i:02d}"), "wb") as f:
            f.write(s.encode())
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as f:
            for m in MARKERS:
                f.write('"' + m.replace("\\", "\\\\").replace('"', '\\"') + '"\n')


if __name__ == "__main__":
    main()
