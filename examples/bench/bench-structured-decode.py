#!/usr/bin/env python3
"""bench-structured-decode: decode tokens/s with a JSON Schema constraint
against the same requests unconstrained, through the vt package (one
LLM, the engine's continuous batching), at batch sizes 1 and 16.

Each request decodes from the same chat prompt, seeded, at temperature 1.
A constrained request ends when its JSON value is complete, so both runs
are measured as generated tokens over the time of the generate() call
(which includes the prefill of the short prompt). The mask cost shows as
the ratio constrained / unconstrained; the grammar is compiled once before
timing (vt.Grammar), as a server's cache would hold it.

usage: bench-structured-decode.py [--model PATH] [--threads 2] [--batches 1,16] [--max-tokens 128]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "models"))

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 40},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "email": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 6},
        "address": {"type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                    "required": ["street", "city"]},
        "bio": {"type": "string"},
    },
    "required": ["name", "age", "email", "tags", "address", "bio"],
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batches", default="1,16")
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--reps", type=int, default=2)
    a = ap.parse_args()
    import vt
    import vt_models
    model = a.model or str(vt_models.model_path("smollm2"))
    llm = vt.LLM(model, n_threads=a.threads)
    grammar = vt.Grammar(llm, json_schema=SCHEMA)
    msg = [{"role": "user", "content": "Describe a person as JSON with name, age, email, tags, address and bio."}]
    print(f"model {Path(model).name}, {a.threads} threads, max_tokens {a.max_tokens}, temperature 1\n")
    print("| batch | unconstrained tok/s | JSON Schema tok/s | ratio |")
    print("|---|---|---|---|")
    for b in [int(x) for x in a.batches.split(",")]:
        rates = {}
        for name, extra in (("free", {}), ("schema", {"grammar": grammar})):
            best = 0.0
            for rep in range(a.reps):
                params = [vt.SamplingParams(temperature=1.0, seed=1000 * rep + i, max_tokens=a.max_tokens, **extra)
                          for i in range(b)]
                t0 = time.perf_counter()
                outs = llm.chat([msg] * b, params)
                dt = time.perf_counter() - t0
                n = sum(len(o.token_ids) for o in outs)
                best = max(best, n / dt)
                if extra:
                    for o in outs:  # the constraint held (complete ones parse)
                        if o.finish_reason == "stop":
                            json.loads(o.text)
            rates[name] = best
        print(f"| {b} | {rates['free']:.1f} | {rates['schema']:.1f} | {rates['schema'] / rates['free']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
