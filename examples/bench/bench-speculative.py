#!/usr/bin/env python3
"""bench-speculative: speculative decoding (vLLM's n-gram prompt lookup or
suffix decoding) against the same engine without it, through the vt package, on chat tasks
whose answers repeat their input (editing code, quoting a document, JSON
from a given record).

Greedy, so both runs make the same tokens (checked). Each request runs on
the context's engine (vt.Context submit / step / poll, the chat template
applied as vt.LLM.chat does): decode tokens/s = (output tokens - 1) / (time
from its first token's event to its last). Concurrency N: the tasks
repeated to N requests submitted at once, every request's output tokens
over the time from the first first-token event to the last event.
Acceptance per draft position from the engine's counters
(vt_engine_stats.spec_*). With --method suffix, the repetitions of a task
also match the outputs of the earlier ones (the cache of outputs, as an
agent that asks again); --suffix-cache 0 measures the request's own text
alone.

usage: bench-speculative.py [--model PATH] [--threads 2] [--method ngram|suffix] [--k 5] [--lookup 2,4]
                            [--suffix-cache 10000] [--max-tokens 128] [--reps 3] [--concurrency 1,4,16]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "models"))

TASKS = {
    "edit code": "Rename the variable `total` to `acc` in this function and give back the whole function:\n"
                 "```python\ndef sum_list(xs):\n    total = 0\n    for x in xs:\n        if x > 0:\n"
                 "            total += x\n        else:\n            total -= x\n    return total\n```",
    "quote": "Quote this paragraph exactly, word for word:\n\"The river rises in the hills to the north, "
             "runs south through the old market town, turns east below the mill, and reaches the sea at "
             "a wide estuary where the fishing boats come in each evening with the tide.\"",
    "record to JSON": "Write this record as a JSON object with the keys name, born, died, field and "
                      "known_for:\nName: Ada Lovelace\nBorn: 1815\nDied: 1852\nField: mathematics\n"
                      "Known for: the first published computer program",
}


def decode(vt, ctx, prompts, max_tokens):
    """Submits every prompt (token ids) greedy and steps to the end: (output
    token ids per prompt, decode seconds from the first token to the last)."""
    ids = [ctx.submit(p, max_tokens=max_tokens) for p in prompts]
    tokens = {i: [] for i in ids}
    first = last = None
    left = len(ids)
    while left:
        ctx.step()
        now = time.perf_counter()
        for ev in ctx.poll():
            if ev.token >= 0:
                tokens[ev.request_id].append(ev.token)
                first = first or now
                last = now
            if ev.finish_reason is not None:
                left -= 1
    return [tokens[i] for i in ids], last - first


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--method", choices=["ngram", "suffix"], default="ngram")
    ap.add_argument("--k", type=int, default=5, help="num_speculative_tokens")
    ap.add_argument("--lookup", default="2,4", help="ngram: prompt_lookup_min,prompt_lookup_max")
    ap.add_argument("--suffix-cache", type=int, default=10000, help="suffix: suffix_decoding_max_cached_requests")
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--concurrency", default="1,4,16")
    a = ap.parse_args()
    import vt
    import vt_models
    model = a.model or str(vt_models.model_path("smollm2"))
    lo, hi = (int(x) for x in a.lookup.split(","))
    spec = ({"method": "ngram", "num_speculative_tokens": a.k, "prompt_lookup_min": lo, "prompt_lookup_max": hi}
            if a.method == "ngram" else
            {"method": "suffix", "num_speculative_tokens": a.k, "suffix_decoding_max_cached_requests": a.suffix_cache})
    m = a.method
    shared = vt.Model(model)
    template = vt.ChatTemplate(model=shared)
    prompts = {name: template.tokenize(shared.tokenizer, [{"role": "user", "content": text}])
               for name, text in TASKS.items()}
    ctxs = {"plain": vt.Context(shared, n_threads=a.threads),
            m: vt.Context(shared, n_threads=a.threads, speculative_config=spec)}
    print(f"model {Path(model).name}, {a.threads} threads, greedy, max_tokens {a.max_tokens}, "
          f"speculative_config {spec}\n")
    print(f"| task | tokens | plain decode tok/s | {m} decode tok/s | speedup | accepted / drafted |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, p in prompts.items():
        rates = {}
        before = ctxs[m].stats()
        for label, ctx in ctxs.items():
            best = 0.0
            for _ in range(a.reps):
                (out,), dt = decode(vt, ctx, [p], a.max_tokens)
                best = max(best, (len(out) - 1) / dt)
                if label == "plain":
                    want = out
                elif out != want:
                    print(f"{name}: the drafting run made other tokens", file=sys.stderr)
                    return 1
            rates[label] = best
        after = ctxs[m].stats()
        acc = after["spec_num_accepted_tokens"] - before["spec_num_accepted_tokens"]
        drafted = after["spec_num_draft_tokens"] - before["spec_num_draft_tokens"]
        print(f"| {name} | {len(want)} | {rates['plain']:.1f} | {rates[m]:.1f} | "
              f"{rates[m] / rates['plain']:.2f} | {acc} / {drafted} |")
    print(f"\n| concurrency | plain tok/s | {m} tok/s | ratio |")
    print("|---:|---:|---:|---:|")
    for c in [int(x) for x in a.concurrency.split(",")]:
        batch = (list(prompts.values()) * c)[:c]
        rates = {}
        for label, ctx in ctxs.items():
            best = 0.0
            for _ in range(a.reps):
                outs, dt = decode(vt, ctx, batch, a.max_tokens)
                best = max(best, sum(len(o) for o in outs) / dt)
            rates[label] = best
        print(f"| {c} | {rates['plain']:.1f} | {rates[m]:.1f} | {rates[m] / rates['plain']:.2f} |")
    s = ctxs[m].stats()
    drafts = max(s["spec_num_drafts"], 1)
    print("\nacceptance by draft position (all runs): " +
          ", ".join(f"{i}: {n / drafts:.2f}" for i, n in enumerate(s["spec_num_accepted_per_position"][:a.k])) +
          f"; mean accepted length {1 + s['spec_num_accepted_tokens'] / drafts:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
