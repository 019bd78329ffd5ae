"""A LoRA on a real model against llama.cpp: SmolLM2-135M Q4_1 (VT_TEST_MODEL,
set by tests/run.sh) with a random rank-8 GGUF LoRA that
tests/models/make-tiny-loras.py --write-smollm2-lora writes at test time
(numpy and gguf only; nothing big is committed), against
tests/models/goldens/smollm2-q4_1-lora.json: llama-cpp-python's logits with
that LoRA loaded at scale 1 (make-tiny-loras.py --smollm2-goldens; the
layout of smollm2-q4_1.json, see make-goldens.py).

The gates are test-llama-goldens.cpp's, with its SmolLM2 tolerances (kSmolLM2,
measured as llama.cpp's own noise between two builds): each prompt's
eval_ids + greedy run teacher-forced in one step with logits_all, through
vt.Sequence.set_lora; at the golden's last 32 positions every top-20 logit
within MAX_DIFF of llama.cpp's and their rms per prompt within MAX_RMS; top-1
ids agree wherever the golden's margin exceeds NOISE_MARGIN, and flips at
margins between TOP1_MARGIN and it stay under MAX_FLIP_RATE of the compared
positions (the teacher-forced ones and every step of the greedy path). And
since the adapter moves those logits by little more than the tolerances,
scale 1 must be closer to llama.cpp than scales 0 (the base), 0.5 and 1.5.
Then LLM.generate with the adapter's path: each greedy continuation is
llama.cpp's up to a divergence at a near-tie.
"""
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import vt

ROOT = Path(os.environ.get("VT_SOURCE_ROOT") or Path(__file__).resolve().parents[2]) / "tests" / "models"
GOLDEN = ROOT / "goldens" / "smollm2-q4_1-lora.json"
SCRIPT = ROOT / "make-tiny-loras.py"

# tests/models/test-llama-goldens.cpp: kSmolLM2 = {2.0, 0.4, 0.5}, TOP1_MARGIN,
# MAX_FLIP_RATE.
MAX_DIFF = 2.0
MAX_RMS = 0.4
NOISE_MARGIN = 0.5
TOP1_MARGIN = 0.05
MAX_FLIP_RATE = 0.03


@pytest.fixture(scope="module")
def golden():
    if not GOLDEN.exists():
        pytest.skip(f"{GOLDEN} is absent (tests/models/make-tiny-loras.py --smollm2-goldens writes it)")
    return json.loads(GOLDEN.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def adapter_path(golden, tmp_path_factory):
    if not SCRIPT.exists():
        pytest.skip(f"{SCRIPT} is absent")
    pytest.importorskip("gguf", reason="make-tiny-loras.py --write-smollm2-lora needs the gguf package "
                                       "(tests/run.sh installs it)")
    out = tmp_path_factory.mktemp("smollm2-lora") / "smollm2-lora.gguf"
    subprocess.run([sys.executable, str(SCRIPT), "--write-smollm2-lora", str(out)], check=True)
    # The adapter must be the one llama.cpp ran: same seed, same gguf writer.
    sha = hashlib.sha256(out.read_bytes()).hexdigest()
    assert sha == golden["lora"]["sha256"], (
        f"the adapter written here ({sha}) is not the golden's ({golden['lora']['sha256']}, gguf-py "
        f"{golden['lora'].get('gguf_py')}, numpy {golden['lora'].get('numpy')})")
    return out


@pytest.fixture(scope="module")
def lora(model, adapter_path):
    return vt.LoRA(model, adapter_path)


def eval_ids(p):
    return p["ids_special"] if p.get("eval_special") else p["ids"]


def test_adapter_properties(lora, golden):
    g = golden["lora"]
    assert lora.format == "gguf"
    assert lora.rank == g["rank"]
    assert lora.alpha == pytest.approx(g["alpha"])
    assert lora.scale == pytest.approx(g["llama_cpp_scale"])
    targets = sorted(t.split(".")[-1] for t in g["targets"])  # "blk.*.attn_q" -> "attn_q"
    assert sorted(lora.targets) == targets
    assert lora.n_weights == len(targets) * lora.model.n_layer


def teacher_forced(ctx, lora, ids, scale):
    """Every position's logits of ids, evaluated in one step with lora at scale."""
    seq = ctx.sequence(n_ctx=len(ids) + 16, logits_all=True)
    seq.set_lora(lora, scale)
    seq.feed(ids)
    seq.step()
    return np.stack([seq.logits(t) for t in range(len(ids))])


def top20_diffs(logits, tf):
    """|vt - llama.cpp| at the golden's top-20 ids, one row per tf position."""
    return np.stack([np.abs(logits[pos][ids] - np.array(vals, dtype=np.float32))
                     for pos, ids, vals in zip(tf["positions"], tf["top_ids"], tf["top_logits"])])


def rms(d):
    return float(np.sqrt(np.mean(np.square(d, dtype=np.float64))))


# Request scales whose logits must be further from llama.cpp's than scale
# 1's, over all prompts: 0 is the base model (the adapter not applied), and
# a scale convention off by a factor (alpha / r) would bring 0.5 or 1.5
# closer. This is what makes the gate about the adapter: its effect on the
# top-20 logits (rms 0.70 from the base's, 0.42 and 0.39 from scales 0.5 and
# 1.5; vt at scale 1: 0.18) is not far above the tolerances.
OTHER_SCALES = (0.0, 0.5, 1.5)


def test_teacher_forced_logits_match_llama_cpp(model, lora, golden):
    ctx = vt.Context(model, n_batch=512)
    compared = flips = n_prompts = 0
    bad, summary, all_diffs = [], [], []
    other_diffs = {s: [] for s in OTHER_SCALES}
    for p in golden["prompts"]:
        if "tf" not in p:
            continue
        n_prompts += 1
        prompt, greedy, tf = eval_ids(p), p["greedy"], p["tf"]
        logits = teacher_forced(ctx, lora, prompt + greedy, 1.0)
        d = top20_diffs(logits, tf)
        all_diffs.append(d)
        for scale in OTHER_SCALES:
            other_diffs[scale].append(top20_diffs(teacher_forced(ctx, lora, prompt + greedy, scale), tf))
        summary.append(f"{p['name']}: rms {rms(d):.3f}, max {d.max():.3f}")
        if rms(d) > MAX_RMS:
            bad.append(f"{p['name']}: rms {rms(d):.3f} > {MAX_RMS}")
        for k, j in zip(*np.nonzero(~(d <= MAX_DIFF))):
            bad.append(f"{p['name']} pos {tf['positions'][k]} id {tf['top_ids'][k][j]}: "
                       f"vt {logits[tf['positions'][k]][tf['top_ids'][k][j]]:.4f}, "
                       f"llama.cpp {tf['top_logits'][k][j]} (|diff| {d[k, j]:.3f})")
        for pos, top_ids, margin in zip(tf["positions"], tf["top_ids"], tf["margins"]):
            if margin <= TOP1_MARGIN:
                continue
            compared += 1
            top1 = int(np.argmax(logits[pos]))
            if top1 != top_ids[0]:
                flips += 1
                if margin > NOISE_MARGIN:
                    bad.append(f"{p['name']} pos {pos}: top-1 {top1}, llama.cpp {top_ids[0]} (margin {margin})")
        # Along llama.cpp's greedy path: the logits at prompt + i predict greedy[i].
        for i, (want, margin) in enumerate(zip(greedy, p["greedy_margins"])):
            if margin <= TOP1_MARGIN:
                continue
            compared += 1
            got = int(np.argmax(logits[len(prompt) - 1 + i]))
            if got != want:
                flips += 1
                if margin > NOISE_MARGIN:
                    bad.append(f"{p['name']} greedy step {i}: vt {got}, llama.cpp {want} (margin {margin})")
    assert n_prompts > 0
    total = rms(np.concatenate(all_diffs))
    others = {s: rms(np.concatenate(v)) for s, v in other_diffs.items()}
    summary.append(f"all prompts: rms {total:.3f} at scale 1; "
                   + ", ".join(f"{v:.3f} at {s:g}" for s, v in others.items())
                   + f"; top-1 flips {flips} of {compared}")
    print("\n".join(summary))
    assert not bad, "\n".join(bad[:16] + summary)
    assert compared > 70 * n_prompts
    assert flips <= MAX_FLIP_RATE * compared, f"{flips} of {compared} top-1 ids differ"
    assert all(v > total for v in others.values()), "\n".join(summary)


def test_generate_with_lora_follows_llama_cpp(model, lora, golden):
    # Through the serving engine, the adapter given by path: each 64-token
    # greedy continuation (EOS fed back, as the golden's) is llama.cpp's up to
    # its first divergence, which must be at a near-tie (test-llama-goldens.cpp's
    # greedy continuation case).
    llm = vt.LLM(model, kv_cache_memory="256MiB")  # as conftest.TEST_KV_MEMORY
    prompts = [p for p in golden["prompts"] if "greedy" in p]
    params = vt.SamplingParams(temperature=0, max_tokens=64, ignore_eos=True)
    outs = llm.generate(prompt_token_ids=[eval_ids(p) for p in prompts], sampling_params=params,
                        lora=lora.path)
    for p, out in zip(prompts, outs):
        want, margins = p["greedy"], p["greedy_margins"]
        assert out.lora is not None and out.lora.path == lora.path
        assert len(out.token_ids) == len(want)
        first = next((i for i, (a, b) in enumerate(zip(out.token_ids, want)) if a != b), len(want))
        if first < len(want):
            assert margins[first] <= NOISE_MARGIN, (
                f"{p['name']}: vt leaves llama.cpp's greedy path at step {first} ({out.token_ids[first]} "
                f"for {want[first]}) at margin {margins[first]}")
