#!/usr/bin/env python3
"""Seed corpus and dictionary for fuzz-server-request: OpenAI request bodies
(chat and completions, every parameter vt-server reads, good and bad values).
Usage: server-request-seeds.py CORPUS_DIR DICT_FILE"""
import json
import os
import sys

corpus, dict_path = sys.argv[1], sys.argv[2]
os.makedirs(corpus, exist_ok=True)
msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
seeds = [
    {"model": "m", "messages": msgs},
    {"messages": msgs, "stream": True, "stream_options": {"include_usage": True}, "max_tokens": 8},
    {"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]},
    {"messages": msgs, "temperature": 0, "top_p": 0.9, "top_k": 40, "min_p": 0.05, "seed": 7, "n": 2,
     "stop": ["\n", "END"], "presence_penalty": 0.5, "frequency_penalty": -0.5, "logprobs": True, "top_logprobs": 5},
    {"messages": msgs, "max_completion_tokens": 16, "tools": [{"type": "function", "function": {"name": "f"}}],
     "chat_template_kwargs": {"enable_thinking": False}},
    {"prompt": "Once upon a time", "max_tokens": 16, "logprobs": 3, "echo": False},
    {"prompt": ["a", "b", "c"], "n": 3, "stop": "x"},
    {"prompt": [1, 2, 3], "ignore_eos": True, "repetition_penalty": 1.1},
    {"prompt": [[1, 2], [3, 4]], "stream": True},
    {"prompt": 5},
    {"messages": 5, "temperature": "hot"},
    {"prompt": "x", "max_tokens": -1, "n": 0, "top_logprobs": 99, "seed": -3},
    {"prompt": "x", "temperature": 1e309},
]
for i, s in enumerate(seeds):
    with open(os.path.join(corpus, f"seed-{i:02d}.json"), "w") as f:
        json.dump(s, f)
words = ["model", "messages", "role", "content", "system", "user", "assistant", "tool", "prompt", "max_tokens",
         "max_completion_tokens", "temperature", "top_p", "top_k", "min_p", "seed", "stop", "presence_penalty",
         "frequency_penalty", "repetition_penalty", "n", "logprobs", "top_logprobs", "stream", "stream_options",
         "include_usage", "ignore_eos", "tools", "chat_template_kwargs", "add_generation_prompt", "echo", "suffix",
         "logit_bias", "response_format", "type", "text", "null", "true", "false", "1e308", "-1", "4294967296"]
with open(dict_path, "w") as f:
    for w in words:
        f.write(json.dumps(json.dumps(w) if w not in ("null", "true", "false") and not w[0] in "-0123456789" else w) + "\n")
