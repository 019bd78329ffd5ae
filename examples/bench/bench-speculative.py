#!/usr/bin/env python3
"""bench-speculative: speculative decoding (vLLM's n-gram prompt lookup,
suffix decoding or a draft model) against the same engine without it, through the vt package, on chat tasks
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
alone. With --method draft_model, --draft names the draft model's file
(for example the model quantized further: llama-quantize --allow-requantize).
A model without a chat template (a random-weight one) gets the tasks' text
as its prompt.

--llama-bin DIR (a llama.cpp build's bin/ with llama-speculative-simple and
llama-bench) adds llama.cpp side by side on the same files and prompts (the
chat template's text, which llama.cpp tokenizes with its special tokens):
its speculative-simple with the same method (draft_model: --spec-type
draft-simple -md DRAFT; ngram: ngram-simple, n-gram size prompt_lookup_max,
k tokens) per task, as its own "decoded ... speed" line reports it, and
llama-bench's tg (the same number of tokens) as its decode without drafts.

usage: bench-speculative.py [--model PATH] [--threads 2] [--method ngram|suffix|draft_model] [--k 5]
                            [--lookup 2,4] [--suffix-cache 10000] [--draft PATH] [--max-tokens 128] [--reps 3]
                            [--concurrency 1,4,16] [--llama-bin DIR]
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
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


def llama_speculative(a, model, prompt_text):
    """llama.cpp's speculative-simple on prompt_text, greedy: (decode tok/s,
    accepted, drafted) as it prints them."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(prompt_text)
    lo, hi = (int(x) for x in a.lookup.split(","))
    method = (["--spec-type", "draft-simple", "-md", a.draft, "--spec-draft-n-max", str(a.k)]
              if a.method == "draft_model" else
              ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", str(hi),
               "--spec-ngram-simple-size-m", str(a.k)])
    cmd = [str(Path(a.llama_bin) / "llama-speculative-simple"), "-m", model, "-f", f.name, "-n", str(a.max_tokens),
           "--temp", "0", "-t", str(a.threads), *method]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    Path(f.name).unlink()
    text = out.stdout + out.stderr
    speed = re.search(r"decoded\s+\d+ tokens in\s+[\d.]+ seconds, speed:\s+([\d.]+) t/s", text)
    acc = re.search(r"n_accept\s+=\s+(\d+)", text)
    drafted = re.search(r"n_drafted\s+=\s+(\d+)", text)
    if out.returncode != 0 or not speed:
        sys.exit(f"llama-speculative-simple failed ({out.returncode}): {text[-2000:]}")
    return float(speed.group(1)), int(acc.group(1)) if acc else 0, int(drafted.group(1)) if drafted else 0


def llama_plain_decode(a, model):
    """llama-bench's tg of max_tokens tokens (its mean t/s)."""
    cmd = [str(Path(a.llama_bin) / "llama-bench"), "-m", model, "-p", "0", "-n", str(a.max_tokens),
           "-t", str(a.threads), "-r", str(a.reps), "-o", "json"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=True)
    return float(json.loads(out.stdout)[0]["avg_ts"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--method", choices=["ngram", "suffix", "draft_model"], default="ngram")
    ap.add_argument("--draft", help="draft_model: the draft model's file")
    ap.add_argument("--llama-bin", help="a llama.cpp bin/ directory: llama.cpp side by side (ngram, draft_model)")
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
    if (a.method == "draft_model") != (a.draft is not None):
        ap.error("--draft goes with --method draft_model, and that method needs it")
    if a.llama_bin and a.method == "suffix":
        ap.error("--llama-bin: llama.cpp has no suffix decoding to compare with")
    spec = ({"method": "ngram", "num_speculative_tokens": a.k, "prompt_lookup_min": lo, "prompt_lookup_max": hi}
            if a.method == "ngram" else
            {"method": "suffix", "num_speculative_tokens": a.k, "suffix_decoding_max_cached_requests": a.suffix_cache}
            if a.method == "suffix" else
            {"method": "draft_model", "model": a.draft, "num_speculative_tokens": a.k})
    m = a.method
    shared = vt.Model(model)
    if m == "draft_model":
        spec = dict(spec, model=vt.Model(a.draft))
    try:
        template = vt.ChatTemplate(model=shared)
        prompts = {name: template.tokenize(shared.tokenizer, [{"role": "user", "content": text}])
                   for name, text in TASKS.items()}
    except vt.VtNotFound:  # a random-weight model without a template: the tasks' text as it is
        print("(the model has no chat template: the tasks' text is the prompt)")
        prompts = {name: shared.tokenizer.encode(text) for name, text in TASKS.items()}
    ctxs = {"plain": vt.Context(shared, n_threads=a.threads),
            m: vt.Context(shared, n_threads=a.threads, speculative_config=spec)}
    shown = dict(spec, model=a.draft) if m == "draft_model" else spec
    print(f"model {Path(model).name}, {a.threads} threads, greedy, max_tokens {a.max_tokens}, "
          f"speculative_config {shown}\n")
    llama_plain = llama_plain_decode(a, model) if a.llama_bin else None
    extra = " llama.cpp plain / spec tok/s | llama.cpp speedup | llama.cpp accepted / drafted | vt / llama.cpp (spec) |"
    print(f"| task | tokens | plain decode tok/s | {m} decode tok/s | speedup | accepted / drafted |"
          + (extra if a.llama_bin else ""))
    print("|---|---:|---:|---:|---:|---:|" + ("---:|---:|---:|---:|" if a.llama_bin else ""))
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
        row = (f"| {name} | {len(want)} | {rates['plain']:.1f} | {rates[m]:.1f} | "
               f"{rates[m] / rates['plain']:.2f} | {acc} / {drafted} |")
        if a.llama_bin:
            text = shared.tokenizer.decode(p, render_special=True)
            runs = [llama_speculative(a, model, text) for _ in range(a.reps)]
            best = max(runs)
            row += (f" {llama_plain:.1f} / {best[0]:.1f} | {best[0] / llama_plain:.2f} | {best[1]} / {best[2]} |"
                    f" {rates[m] / best[0]:.2f} |")
        print(row)
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
