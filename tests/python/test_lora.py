"""LoRA adapters from Python against PEFT, on the tiny Llama
(tests/models/tiny/llama.gguf) and its random adapters in
tests/models/tiny-lora/ (tests/models/make-tiny-loras.py: each a PEFT folder,
its GGUF conversion and a json with PEFT's float32 logits and greedy ids).

- vt.LoRA's properties are the adapter's (the json's "lora" and "gguf");
- Sequence.set_lora gives PEFT's logits at every position within 1e-2 (as
  tests/models/test-lora-tiny.cpp), scale 0 the base model's bit for bit;
- LLM.generate(lora=...) gives PEFT's greedy ids, and a list of adapters
  (and None) in one batch gives each prompt its tokens alone;
- bad adapters and arguments raise the right vt.VtError subclass.

A case skips only when the fixture it reads is absent.
"""
import gc
import json
import math
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import vt

ROOT = Path(os.environ.get("VT_SOURCE_ROOT") or Path(__file__).resolve().parents[2]) / "tests" / "models"
LORA_DIR = ROOT / "tiny-lora"
BASE = ROOT / "tiny" / "llama.gguf"
BASE_JSON = ROOT / "tiny" / "llama.json"
LLAMA_ADAPTERS = ["llama_r4", "llama_r16_rslora", "llama_r8_a", "llama_r8_b"]
# As for the base models (test-tiny-models.cpp): f16 K/V and attention
# probabilities move the tiny models' logits by up to ~2e-3.
TOL_LOGIT = 1e-2
N_THREADS = 2


def need(path):
    if not path.exists():
        pytest.skip(f"{path} is absent (tests/models/make-tiny-loras.py writes it)")
    return path


def read_json(path):
    return json.loads(need(path).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def base():
    return vt.Model(need(BASE))


@pytest.fixture(scope="module")
def base_golden():
    return read_json(BASE_JSON)


class Fixture:
    """One adapter of the tiny Llama: its golden and where its two forms are."""

    def __init__(self, name):
        self.name = name
        self.golden = read_json(LORA_DIR / f"{name}.json")
        assert self.golden["base"] == "llama"

    def path(self, source):
        return need(LORA_DIR / self.name if source == "peft" else LORA_DIR / f"{self.name}.gguf")

    def request_scale(self, source):
        # The GGUF keeps alpha but not rsLoRA (llama.cpp reads alpha / r): the
        # request scale that gives PEFT's model.
        return 1.0 if source == "peft" else self.golden["gguf"]["request_scale_for_peft_logits"]


def adapter_cases():
    return [pytest.param(n, s, id=f"{n}-{s}") for n in LLAMA_ADAPTERS for s in ("peft", "gguf")]


def logits_all(ctx, ids, adapter, scale=1.0):
    """Every position's logits of ids in a fresh sequence with adapter at scale."""
    seq = ctx.sequence(n_ctx=len(ids) + 8, logits_all=True)
    seq.set_lora(adapter, scale)
    seq.feed(ids)
    seq.step()
    return np.stack([seq.logits(t) for t in range(len(ids))])


def greedy_params(n):
    return vt.SamplingParams(temperature=0, max_tokens=n, ignore_eos=True)


@pytest.mark.parametrize("name,source", adapter_cases())
def test_properties(base, name, source):
    f = Fixture(name)
    lora = vt.LoRA(base, f.path(source))
    cfg, gg = f.golden["lora"], f.golden["gguf"]
    tensors = gg["tensors"]  # the same A and B matrices in both forms
    assert lora.rank == cfg["r"]
    assert lora.format == source
    if source == "peft":
        assert lora.alpha == pytest.approx(cfg["alpha"])
        assert lora.scale == pytest.approx(cfg["scale"])
    else:
        assert lora.alpha == pytest.approx(gg["keys"]["adapter.lora.alpha"])
        assert lora.scale == pytest.approx(gg["llama_cpp_scale"])
    assert lora.n_weights == len(tensors) // 2 == len(cfg["targets"]) * base.n_layer
    assert lora.n_params == sum(math.prod(t["ne"]) for t in tensors)
    assert sorted(lora.targets) == sorted({t["name"].split(".")[2] for t in tensors})
    assert lora.path == str(f.path(source))
    assert lora.model is base
    r = repr(lora)
    assert r.startswith(f"<vt.LoRA {source} rank {cfg['r']}") and str(f.path(source)) in r


def test_keeps_its_model_alive():
    f = Fixture("llama_r4")
    lora = vt.LoRA(vt.Model(need(BASE)), f.path("gguf"))
    gc.collect()
    assert lora.model.n_layer > 0
    ctx = vt.Context(lora.model, n_threads=N_THREADS)
    ids = f.golden["prompts"][0]["ids"]
    got = logits_all(ctx, ids, lora)
    assert np.abs(got - np.array(f.golden["prompts"][0]["logits"], dtype=np.float32)).max() <= TOL_LOGIT


@pytest.mark.parametrize("name,source", adapter_cases())
def test_sequence_logits_match_peft(base, base_golden, name, source):
    f = Fixture(name)
    lora = vt.LoRA(base, f.path(source))
    ctx = vt.Context(base, n_threads=N_THREADS)
    worst = moved = 0.0
    for p, bp in zip(f.golden["prompts"], base_golden["prompts"]):
        assert p["ids"] == bp["ids"]
        got = logits_all(ctx, p["ids"], lora, f.request_scale(source))
        want = np.array(p["logits"], dtype=np.float32)
        assert got.shape == want.shape
        worst = max(worst, float(np.abs(got - want).max()))
        moved = max(moved, float(np.abs(got - np.array(bp["logits"], dtype=np.float32)).max()))
    assert worst <= TOL_LOGIT, f"{name} ({source}): max |vt - PEFT| {worst}"
    assert moved >= 20 * TOL_LOGIT, f"{name}: the adapter moves the logits by only {moved}"


@pytest.mark.parametrize("source", ["peft", "gguf"])
def test_scale_zero_is_the_base_model(base, source):
    f = Fixture("llama_r8_a")
    lora = vt.LoRA(base, f.path(source))
    ctx = vt.Context(base, n_threads=N_THREADS)
    ids = f.golden["prompts"][-1]["ids"]
    plain = logits_all(ctx, ids, None)
    assert np.array_equal(logits_all(ctx, ids, lora, 0.0), plain)
    full = logits_all(ctx, ids, lora, 1.0)
    assert not np.array_equal(full, plain)
    # One sequence switching adapters: each reset() recomputes with the
    # adapter set last.
    seq = ctx.sequence(n_ctx=len(ids) + 8, logits_all=True)
    for adapter, scale, want in [(lora, 1.0, full), (None, 1.0, plain), (lora, 0.0, plain), (lora, 1.0, full)]:
        seq.reset()
        seq.set_lora(adapter, scale)
        seq.feed(ids)
        seq.step()
        assert np.array_equal(seq.logits(len(ids) - 1), want[-1])


def test_sequence_holds_the_adapter(base):
    # The vt.LoRA object may go before the sequence given it.
    f = Fixture("llama_r4")
    ctx = vt.Context(base, n_threads=N_THREADS)
    p = f.golden["prompts"][0]
    seq = ctx.sequence(n_ctx=len(p["ids"]) + 8, logits_all=True)
    seq.set_lora(vt.LoRA(base, f.path("peft")))
    gc.collect()
    seq.feed(p["ids"])
    seq.step()
    got = np.stack([seq.logits(t) for t in range(len(p["ids"]))])
    assert np.abs(got - np.array(p["logits"], dtype=np.float32)).max() <= TOL_LOGIT


@pytest.mark.parametrize("source", ["peft", "gguf"])
def test_generate_greedy_matches_peft(base, source):
    # make-tiny-loras.py picks seeds whose greedy margins all exceed 0.05, so
    # the ids must be PEFT's exactly.
    f = Fixture("llama_r4")
    want = f.golden["greedy"]
    prompt = f.golden["prompts"][-1]["ids"]
    llm = vt.LLM(base, n_threads=N_THREADS, kv_cache_memory="4MiB")
    lora = vt.LoRA(base, f.path(source))
    out = llm.generate(prompt_token_ids=prompt, sampling_params=greedy_params(len(want)), lora=lora)[0]
    assert out.token_ids == want
    assert out.lora is lora
    # The path form loads once and is kept by the LLM.
    by_path = llm.generate(prompt_token_ids=[prompt, prompt], sampling_params=greedy_params(len(want)),
                           lora=str(f.path(source)))
    assert [o.token_ids for o in by_path] == [want, want]
    assert by_path[0].lora is by_path[1].lora
    again = llm.generate(prompt_token_ids=prompt, sampling_params=greedy_params(4), lora=f.path(source))
    assert again[0].lora is by_path[0].lora and again[0].token_ids == want[:4]
    # The base model's own continuation is another.
    assert llm.generate(prompt_token_ids=prompt, sampling_params=greedy_params(len(want)))[0].token_ids != want
    # The single-sequence path (stops at an end-of-generation id).
    eog = next((i for i, t in enumerate(want) if llm.tokenizer.is_eog(t)), len(want))
    stream = llm.stream(prompt, vt.SamplingParams(temperature=0, max_tokens=len(want)), lora=lora)
    "".join(stream)
    assert stream.token_ids == want[:eog]
    # ... and a later stream without it is the base model again: as an LLM's
    # that never had an adapter.
    plain = vt.SamplingParams(temperature=0, max_tokens=8)
    again = llm.stream(prompt, plain)
    "".join(again)
    fresh = vt.LLM(base, n_threads=N_THREADS).stream(prompt, plain)
    "".join(fresh)
    assert again.token_ids == fresh.token_ids and again.token_ids != stream.token_ids[:8]


def test_generate_mixed_batch_equals_each_alone(base):
    fs = [Fixture(n) for n in LLAMA_ADAPTERS]
    loras = [vt.LoRA(base, f.path("peft" if i % 2 else "gguf")) for i, f in enumerate(fs)]
    longest = fs[0].golden["prompts"][-1]["ids"]
    assert len(longest) >= 32
    prompts = [longest[(i * 7) % (len(longest) - 24):][:8 + 2 * i] for i in range(10)]
    prompts[1] = prompts[0]  # one prompt, two adapters: the same tokens in, others out
    adapters = [loras[0], loras[1], None, loras[2], str(fs[3].path("gguf")), loras[0], None, loras[1],
                loras[2], loras[3]]
    scales = [1.0, 1.0, 1.0, 0.5, 1.0, 1.0, 1.0, 2.0, 1.0, 0.0]
    n = 12
    llm = vt.LLM(base, n_threads=N_THREADS, kv_cache_memory="8MiB", n_batch=48)
    together = llm.generate(prompt_token_ids=prompts, sampling_params=greedy_params(n), lora=adapters,
                            lora_scale=scales)
    assert together[4].lora is not None and together[4].lora.path == str(fs[3].path("gguf"))
    assert [o.lora for o in together][:4] == adapters[:4]
    alone_llm = vt.LLM(base, n_threads=N_THREADS, kv_cache_memory="4MiB", enable_prefix_caching=False)
    for i, (p, a, s) in enumerate(zip(prompts, adapters, scales)):
        alone = alone_llm.generate(prompt_token_ids=p, sampling_params=greedy_params(n), lora=a, lora_scale=s)[0]
        assert together[i].token_ids == alone.token_ids, f"prompt {i} ({a!r} at {s})"
        assert len(alone.token_ids) == n
    assert together[0].token_ids != together[1].token_ids
    # Scale 0 is the base model.
    assert together[9].token_ids == llm.generate(prompt_token_ids=prompts[9],
                                                 sampling_params=greedy_params(n))[0].token_ids
    s = llm.context.stats()
    assert s["kv_blocks_used"] == 0 and s["n_running"] == 0


def test_chat_takes_lora(base):
    # The tiny model has no chat template: give one.
    f = Fixture("llama_r4")
    lora = vt.LoRA(base, f.path("gguf"))
    llm = vt.LLM(base, n_threads=N_THREADS, kv_cache_memory="4MiB")
    template = "{% for m in messages %}{{ m['content'] }}\n{% endfor %}"
    convs = [[{"role": "user", "content": "The quick brown fox"}]] * 2
    outs = llm.chat(convs, greedy_params(8), chat_template=template, lora=[lora, None])
    ids = outs[0].prompt_token_ids
    assert outs[0].lora is lora and outs[1].lora is None
    assert outs[0].token_ids == llm.generate(prompt_token_ids=ids, sampling_params=greedy_params(8),
                                             lora=lora)[0].token_ids
    assert outs[1].token_ids == llm.generate(prompt_token_ids=ids, sampling_params=greedy_params(8))[0].token_ids


def test_context_submit_with_lora(base):
    # The low-level path: Context.submit(lora=...) holds the adapter itself.
    f = Fixture("llama_r4")
    want = f.golden["greedy"][:8]
    ctx = vt.Context(base, n_threads=N_THREADS, kv_cache_bytes=4 << 20)
    rid = ctx.submit(f.golden["prompts"][-1]["ids"], max_tokens=len(want), ignore_eos=True,
                     lora=vt.LoRA(base, f.path("peft")), lora_scale=1.0)
    gc.collect()
    got, done = [], False
    while not done:
        ctx.step(10)
        for ev in ctx.poll():
            assert ev.request_id == rid
            ev.check()
            if ev.token is not None:
                got.append(ev.token)
            done = ev.finish_reason is not None
    assert got == want


def test_errors(base, tmp_path):
    f = Fixture("llama_r4")
    with pytest.raises(vt.VtIOError) as e:
        vt.LoRA(base, LORA_DIR / "no-such-adapter")
    assert isinstance(e.value, OSError) and e.value.status_name == "VT_ERR_IO"
    # A folder whose config vt cannot honour, and a truncated safetensors.
    dora = tmp_path / "dora"
    shutil.copytree(f.path("peft"), dora)
    cfg = json.loads((dora / "adapter_config.json").read_text())
    cfg["use_dora"] = True
    (dora / "adapter_config.json").write_text(json.dumps(cfg))
    with pytest.raises(vt.VtUnsupportedError, match="use_dora"):
        vt.LoRA(base, dora)
    cut = tmp_path / "cut"
    shutil.copytree(f.path("peft"), cut)
    os.truncate(cut / "adapter_model.safetensors", 1000)
    with pytest.raises(vt.VtFormatError):
        vt.LoRA(base, cut)
    with pytest.raises(vt.VtInvalidArgument):
        vt.LoRA(None, f.path("gguf"))

    # An adapter of another model (the same file loaded twice is two models).
    other = vt.Model(need(BASE))
    lora = vt.LoRA(other, f.path("gguf"))
    ctx = vt.Context(base, n_threads=N_THREADS, kv_cache_bytes=4 << 20)
    with pytest.raises(vt.VtInvalidArgument):
        ctx.sequence().set_lora(lora)
    with pytest.raises(vt.VtInvalidArgument):
        ctx.submit([1, 2, 3], max_tokens=1, lora=lora)
    assert ctx.stats()["n_waiting"] == 0
    llm = vt.LLM(base, n_threads=N_THREADS, kv_cache_memory="4MiB")
    with pytest.raises(vt.VtInvalidArgument, match="another model"):
        llm.generate(prompt_token_ids=[1, 2, 3], lora=lora)

    mine = vt.LoRA(base, f.path("gguf"))
    with pytest.raises(vt.VtInvalidArgument):
        ctx.sequence().set_lora(mine, float("nan"))
    with pytest.raises(vt.VtInvalidArgument):
        ctx.submit([1, 2, 3], max_tokens=1, lora=mine, lora_scale=float("inf"))
    params = greedy_params(2)
    with pytest.raises(vt.VtInvalidArgument, match="2 LoRA adapters for 3 prompts"):
        llm.generate(prompt_token_ids=[[1, 2], [3, 4], [5, 6]], sampling_params=params, lora=[mine, None])
    with pytest.raises(vt.VtInvalidArgument, match="1 LoRA scales for 2 prompts"):
        llm.generate(prompt_token_ids=[[1, 2], [3, 4]], sampling_params=params, lora=mine, lora_scale=[1.0])
    with pytest.raises(vt.VtInvalidArgument, match="finite"):
        llm.generate(prompt_token_ids=[1, 2], sampling_params=params, lora=mine, lora_scale=float("nan"))
    with pytest.raises(vt.VtIOError):
        llm.generate(prompt_token_ids=[1, 2], sampling_params=params, lora=str(tmp_path / "missing.gguf"))
    with pytest.raises(TypeError):
        llm.generate(prompt_token_ids=[1, 2], sampling_params=params, lora=[3])
    # Nothing was left running.
    s = llm.context.stats()
    assert s["n_running"] == 0 and s["n_waiting"] == 0


def test_adapter_of_another_architecture(base):
    path = need(LORA_DIR / "qwen2_r8.gguf")
    with pytest.raises(vt.VtInvalidArgument, match="architecture"):
        vt.LoRA(base, path)
