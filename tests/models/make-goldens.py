#!/usr/bin/env python3
"""Writes tests/models/goldens/<golden>.json from the llama.cpp oracle, for
each real model vt is gated on (GOLDENS below: SmolLM2-135M Q4_1, Gemma 3
270M Q4_K_M).

Run from the repository root (re-runnable, deterministic):
    .venv/bin/python tests/models/make-goldens.py [--name smollm2|gemma3-270m] [--out PATH] [--model PATH]

Needs llama-cpp-python 0.3.36 (pip install llama-cpp-python==0.3.36); installs
nothing itself. The model is located through examples/models/vt_models.py.

What it records, per prompt (see PROMPTS):
  ids          llm.tokenize(text, add_bos=False, special=False). SmolLM2's GGUF
               says tokenizer.ggml.add_bos_token = false, so no BOS is added.
  ids_special  the same with special=True (chat prompt only: control-token
               text such as <|im_start|> becomes the control token).
  eval_ids     the prompt ids the model is run on: ids_special for the chat
               prompt, ids otherwise. Empty prompt: no model run at all.
  greedy       64 ids: argmax of the raw logits (no sampler, no penalties;
               ties go to the lowest id), one token fed per step, from a fresh
               context holding only eval_ids. EOS policy: generation does NOT
               stop at EOS/EOG; an EOS is fed back like any token, so there are
               always exactly 64 ids. first_eog gives the index of the first
               end-of-generation id in greedy, or null.
  greedy_margins  top1 - top2 logit at each greedy step (4 decimals).
  tf           teacher-forced logits of seq = eval_ids + greedy, evaluated in
               ONE batch (logits_all) in a fresh context. For the last 32
               positions p of seq (all if shorter): top_ids[k] / top_logits[k]
               are the 20 largest logits at p (descending, 4 decimals) and
               margins[k] = top1 - top2. The logits at p predict seq[p + 1].
  tokenize_only  extra strings with their ids (tokenizer coverage only).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "examples" / "models"))
import vt_models  # noqa: E402

LLAMA_CPP_PYTHON_VERSION = "0.3.36"
N_CTX = 2048
N_THREADS = 2
SEED = 0
N_GREEDY = 64
N_TF_POSITIONS = 32
TOP_K = 20

LONG_PARAGRAPH = (
    "The history of computing is often told as a sequence of machines, but it is "
    "just as much a history of ideas about what a machine should be asked to do. "
    "Early mechanical calculators could add and multiply, yet they had no notion of "
    "a stored program; each new problem meant a new arrangement of gears or wires. "
    "The stored-program computer changed that: instructions became data, and data "
    "could be rewritten by the very program that read it. From that single step "
    "came compilers, operating systems, databases and, much later, networks that "
    "tie millions of such machines together. Each layer hid the one below it behind "
    "an interface, and each interface was a promise: if you call me this way, I will "
    "answer that way, today and tomorrow. When the promise held, people built upon "
    "it for decades; when it broke, whole ecosystems had to be rebuilt. Engineers "
    "who design libraries today still face the same trade-off between changing "
    "things quickly and keeping the promises that others depend on."
)

CHAT = (
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by "
    "Hugging Face<|im_end|>\n<|im_start|>user\nWhat is the capital of France? "
    "Answer in one sentence.<|im_end|>\n<|im_start|>assistant\n"
)
GEMMA_CHAT = (
    "<start_of_turn>user\nWhat is the capital of France? Answer in one sentence."
    "<end_of_turn>\n<start_of_turn>model\n"
)

# Longer than Gemma 3's 512-token sliding window (about 800 tokens), so that
# its teacher-forced positions and greedy steps see only part of the prompt
# in five of every six layers.
PAST_THE_WINDOW = " ".join([LONG_PARAGRAPH] * 2 + [
    "In the same way, a language model served to many users is a promise about "
    "latency, memory and exactness. A serving engine keeps the keys and values of "
    "every request in blocks, shares the blocks of a common prefix, and frees "
    "them when a request ends. Layers that attend only to a recent window need "
    "only the blocks of that window, which is why such models can read long "
    "documents on small machines. Whether the answer is the same with or without "
    "those savings is a question for tests, not for hope.",
    LONG_PARAGRAPH])

# (name, text, is_chat). Every non-empty prompt gets greedy + teacher-forced data.
PROMPTS: list[tuple[str, str, bool]] = [
    ("prose", "The quick brown fox jumps over the lazy dog. It was a bright cold day "
              "in April, and the clocks were striking thirteen.", False),
    ("chat", CHAT, True),
    ("code", "def fibonacci(n: int) -> list[int]:\n    \"\"\"Return the first n Fibonacci "
             "numbers.\"\"\"\n    a, b = 0, 1\n    out = []\n    for _ in range(n):\n"
             "        out.append(a)\n", False),
    ("arithmetic", "Q: What is 17 * 23?\nA: 17 * 23 = 391.\nQ: What is 1234 + 5678?\nA:", False),
    ("numbers", "Pi is 3.14159, e is 2.71828, one million is 1,000,000 and the date "
                "is 2024-11-29; 0x1F = 31, 1e-5, 100% and $42.50.", False),
    ("accents", "Café au lait, naïve façade, über Straße, señor, crème brûlée, "
                "Ångström, Dvořák.", False),
    ("cjk", "日本語のテキストと中文字符，还有한국어 문장도 있습니다. 東京は日本の首都です。", False),
    ("emoji", "I love pizza 🍕 and rockets 🚀! Family: 👨‍👩‍👧, thumbs 👍🏽, flag 🇫🇷. ✨", False),
    ("whitespace", "line one\n\n\tindented with a tab\n    four spaces\n\n\n  trailing   "
                   "spaces   \t\tend\r\nwindows line\n", False),
    ("empty", "", False),
    ("long", LONG_PARAGRAPH, False),
    ("short", "Hello", False),
    ("json", '{"name": "vt", "version": [0, 1, 0], "ok": true, "tags": ["llm", "c-abi"]}\n',
     False),
    ("markdown", "# Shopping list\n\n- apples\n- bread\n\n1. first step\n2. second step\n\n"
                 "**Note:** buy `milk` too.", False),
]

# Per golden: the model (examples/models/vt_models.py), its chat prompt, the
# batch that teacher forcing runs in (it holds the longest sequence) and
# prompts of its own.
GOLDENS = {
    "smollm2": {"model": "smollm2", "out": "smollm2-q4_1.json", "chat": CHAT, "n_batch": 512,
                "extra": []},
    "gemma3-270m": {"model": "gemma3-270m", "out": "gemma3-270m-q4_k_m.json", "chat": GEMMA_CHAT,
                    "n_batch": 1024, "extra": [("past_the_window", PAST_THE_WINDOW, False)]},
}
N_BATCH = 512  # set from GOLDENS in main()

# Tokenizer-only coverage: pre-tokenizer edge cases (contractions, digits,
# runs of spaces/newlines, control-token text with special=False, lone
# combining marks, long repeated characters, mixed scripts).
TOKENIZE_ONLY: list[str] = [
    " leading space",
    "  two leading spaces",
    "trailing space ",
    "don't can't I'll we've they're it's He'S",
    "1234567890 12 123 1234 12345",
    "a\nb\n\nc\n\n\nd \n e",
    "<|im_start|>user\nnot special here<|im_end|>",
    "e\u0301 cafe\u0301 (combining acute)",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "Hello,world!How are-you?(fine)[ok]{yes}",
    "Привет мир, Γειά σου Κόσμε, مرحبا بالعالم, שלום עולם",
    "\t\t\tx",
    "x" + " " * 20 + "y",
    "😀😃😄 🤖",
    "naïve",
]


def die(msg: str) -> None:
    print(f"make-goldens: {msg}", file=sys.stderr)
    sys.exit(1)


try:
    import llama_cpp
    from llama_cpp import Llama
except ImportError:
    die(f"llama-cpp-python is not installed in {sys.executable}.\n"
        f"  Install the oracle with: {sys.executable} -m pip install "
        f"llama-cpp-python=={LLAMA_CPP_PYTHON_VERSION}\n"
        f"  (it builds llama.cpp from source; takes a while)")


def new_llm(model_path: str) -> "Llama":
    # Fresh context each time: a clean KV cache and no state from other prompts.
    return Llama(model_path=model_path, n_ctx=N_CTX, n_batch=N_BATCH, n_ubatch=N_BATCH,
                 n_threads=N_THREADS, n_threads_batch=N_THREADS, logits_all=True,
                 flash_attn=False, seed=SEED, verbose=False)


def r4(x) -> float:
    return round(float(x), 4)


def top_k(row: np.ndarray, k: int) -> tuple[list[int], list[float], float]:
    # Stable sort on -logit: ties ordered by id, so the output is reproducible.
    order = np.argsort(-row, kind="stable")[:k]
    vals = row[order]
    return [int(i) for i in order], [r4(v) for v in vals], r4(vals[0] - vals[1])


def greedy(model_path: str, prompt_ids: list[int]) -> tuple[list[int], list[float]]:
    llm = new_llm(model_path)
    llm.eval(prompt_ids)
    ids, margins = [], []
    for _ in range(N_GREEDY):
        row = np.asarray(llm.scores[llm.n_tokens - 1], dtype=np.float32)
        tok = int(np.argmax(row))  # lowest id on ties
        second = np.partition(row, -2)[-2]
        ids.append(tok)
        margins.append(r4(row[tok] - second))
        llm.eval([tok])  # EOS too: never stop early
    del llm
    return ids, margins


def teacher_forced(model_path: str, seq: list[int]) -> dict:
    if len(seq) > N_BATCH:
        die(f"sequence of {len(seq)} tokens does not fit one batch of {N_BATCH}")
    llm = new_llm(model_path)
    llm.eval(seq)  # one llama_decode call: len(seq) <= n_batch = n_ubatch
    scores = np.asarray(llm.scores[: len(seq)], dtype=np.float32)
    positions = list(range(max(0, len(seq) - N_TF_POSITIONS), len(seq)))
    out = {"positions": positions, "top_ids": [], "top_logits": [], "margins": []}
    for p in positions:
        ids, vals, margin = top_k(scores[p], TOP_K)
        out["top_ids"].append(ids)
        out["top_logits"].append(vals)
        out["margins"].append(margin)
    del llm
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--name", default="smollm2", choices=sorted(GOLDENS))
    ap.add_argument("--out", help="default: tests/models/goldens/<the name's file>")
    ap.add_argument("--model", help="GGUF path (default: vt_models.py path <model>)")
    a = ap.parse_args()
    cfg = GOLDENS[a.name]
    global N_BATCH
    N_BATCH = cfg["n_batch"]
    MODEL = cfg["model"]
    a.out = a.out or str(REPO / "tests/models/goldens" / cfg["out"])
    chat_text = cfg["chat"]
    prompt_list = [(n, chat_text if is_chat else t, is_chat) for n, t, is_chat in PROMPTS] + cfg["extra"]

    if llama_cpp.__version__ != LLAMA_CPP_PYTHON_VERSION:
        die(f"llama-cpp-python {llama_cpp.__version__} found, goldens are pinned to "
            f"{LLAMA_CPP_PYTHON_VERSION}: pip install llama-cpp-python=={LLAMA_CPP_PYTHON_VERSION}")
    model_path = a.model or str(vt_models.model_path(MODEL))
    spec = vt_models.MODELS[MODEL]
    sha = vt_models.sha256_file(Path(model_path))
    if sha != spec.sha256:
        die(f"{model_path}: sha256 {sha} is not the pinned {spec.sha256}")

    tok_llm = new_llm(model_path)
    add_bos = bool(tok_llm.metadata.get("tokenizer.ggml.add_bos_token", "false") == "true")
    n_vocab = tok_llm.n_vocab()

    def tokenize(text: str, special: bool) -> list[int]:
        return [int(t) for t in tok_llm.tokenize(text.encode("utf-8"), add_bos=add_bos,
                                                 special=special)]

    def is_eog(t: int) -> bool:
        return bool(llama_cpp.llama_vocab_is_eog(tok_llm._model.vocab, t))

    prompts = []
    for name, text, is_chat in prompt_list:
        entry: dict = {"name": name, "text": text, "ids": tokenize(text, False)}
        if is_chat:
            entry["ids_special"] = tokenize(text, True)
        eval_ids = entry["ids_special"] if is_chat else entry["ids"]
        entry["eval_special"] = is_chat
        if eval_ids:
            g, gm = greedy(model_path, eval_ids)
            entry["greedy"] = g
            entry["greedy_margins"] = gm
            eog = [i for i, t in enumerate(g) if is_eog(t)]
            entry["first_eog"] = eog[0] if eog else None
            entry["tf"] = teacher_forced(model_path, eval_ids + g)
            # The batch run must agree with the step-by-step run wherever the
            # choice is clear; report (not fail) the rest.
            tf, seq = entry["tf"], eval_ids + g
            disagree = [p for k, p in enumerate(tf["positions"])
                        if p + 1 < len(seq) and p + 1 >= len(eval_ids)
                        and tf["top_ids"][k][0] != seq[p + 1]]
            print(f"{name:11s} n_ids={len(entry['ids']):3d} eval={len(eval_ids):3d} "
                  f"first_eog={entry['first_eog']} min_greedy_margin={min(gm):.4f} "
                  f"min_tf_margin={min(tf['margins']):.4f} batch/step top1 disagreements={disagree}",
                  file=sys.stderr)
        else:
            print(f"{name:11s} empty: tokenization only", file=sys.stderr)
        prompts.append(entry)

    golden = {
        "format": 1,
        "generator": "tests/models/make-goldens.py",
        "model": {"name": MODEL, "file": spec.filename, "sha256": spec.sha256,
                  "n_vocab": n_vocab, "add_bos": add_bos,
                  "bos": int(tok_llm.token_bos()), "eos": int(tok_llm.token_eos())},
        "oracle": {
            "llama_cpp_python": llama_cpp.__version__,
            "system_info": llama_cpp.llama_print_system_info().decode().strip(),
            "n_ctx": N_CTX, "n_batch": N_BATCH, "n_ubatch": N_BATCH,
            "n_threads": N_THREADS, "n_threads_batch": N_THREADS,
            "flash_attn": False, "type_k": "f16", "type_v": "f16", "seed": SEED,
            "logits_all": True,
        },
        "method": {
            "tokenize": "llm.tokenize(text, add_bos=model default, special=False); "
                        "ids_special: special=True (chat prompt)",
            "greedy": f"{N_GREEDY} ids, argmax of raw logits (lowest id on ties), one token "
                      "per step from a fresh context holding eval_ids; EOS/EOG is fed back "
                      "and generation continues (never stops early)",
            "empty_prompt": "tokenization only (empty ids); no greedy, no logits",
            "tf": f"seq = eval_ids + greedy evaluated in one batch; last {N_TF_POSITIONS} "
                  f"positions; top-{TOP_K} ids/logits (4 decimals), margin = top1 - top2; "
                  "logits at position p predict seq[p+1]",
        },
        "prompts": prompts,
        "tokenize_only": [{"text": t, "ids": tokenize(t, False)} for t in TOKENIZE_ONLY],
    }
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    # Compact but diffable: one line per prompt.
    lines = ["{"]
    keys = list(golden)
    for i, k in enumerate(keys):
        comma = "," if i + 1 < len(keys) else ""
        v = golden[k]
        if isinstance(v, list):
            lines.append(f"  {json.dumps(k)}: [")
            for j, item in enumerate(v):
                c = "," if j + 1 < len(v) else ""
                lines.append("    " + json.dumps(item, ensure_ascii=False,
                                                 separators=(",", ":")) + c)
            lines.append("  ]" + comma)
        else:
            lines.append(f"  {json.dumps(k)}: "
                         + json.dumps(v, ensure_ascii=False, separators=(", ", ": ")) + comma)
    lines.append("}")
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    json.loads(tmp.read_text(encoding="utf-8"))  # sanity
    os.replace(tmp, out)
    print(f"wrote {out} ({out.stat().st_size} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
