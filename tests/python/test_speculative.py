"""Speculative decoding from Python: vt.LLM(speculative_config=...) as vLLM
spells it ("ngram", "suffix", "draft_model") makes the tokens of the same LLM without it (greedy and seeded),
its acceptance shows in Context.stats(), a config vt cannot honour raises
ValueError naming it; models with recurrent layers draft too, as target and as
draft model."""
import pytest

import vt

from tiny_files import TINY

KV = "64MiB"  # the engine's pool: meson test's MALLOC_PERTURB_ writes all of it
SPEC = {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 3, "prompt_lookup_min": 1}


SUFFIX = {"method": "suffix", "num_speculative_tokens": 6, "suffix_decoding_max_tree_depth": 12,
          "suffix_decoding_max_spec_factor": 2.0, "suffix_decoding_min_token_prob": 0.05,
          "suffix_decoding_max_cached_requests": 100}


@pytest.mark.parametrize("config", [SPEC, SUFFIX], ids=["ngram", "suffix"])
def test_drafts_keep_the_tokens_greedy_and_seeded(model, config):
    plain = vt.LLM(model, n_threads=2, kv_cache_memory=KV)
    spec = vt.LLM(model, n_threads=2, kv_cache_memory=KV, speculative_config=config)
    prompts = ["Repeat after me: one two three four five six. one two three four five six. one",
               "a b c d a b c d a b c d a b",
               "The capital of France is"]
    params = [vt.SamplingParams(temperature=0, max_tokens=24),
              vt.SamplingParams(temperature=0.8, top_p=0.9, seed=7, max_tokens=24),
              vt.SamplingParams(temperature=0, max_tokens=24, presence_penalty=0.5)]
    for p in params:
        want = [o.token_ids for o in plain.generate(prompts, p)]
        assert [o.token_ids for o in spec.generate(prompts, p)] == want
    s = spec.context.stats()
    assert s["spec_num_drafts"] > 0
    assert 0 < s["spec_num_accepted_tokens"] <= s["spec_num_draft_tokens"]
    assert sum(s["spec_num_accepted_per_position"]) == s["spec_num_accepted_tokens"]
    assert plain.context.stats()["spec_num_drafts"] == 0


def test_a_draft_model_keeps_the_tokens(model, model_path):
    # The draft is the model itself, loaded a second time from its path by
    # vt.LLM: greedy drafts are all accepted, sampled ones not always.
    plain = vt.LLM(model, n_threads=2, kv_cache_memory=KV)
    spec = vt.LLM(model_path, n_threads=2, kv_cache_memory=KV,
                  speculative_config={"model": model_path, "num_speculative_tokens": 3})
    prompts = ["The capital of France is", "Write a haiku about the sea:"]
    for p in [vt.SamplingParams(temperature=0, max_tokens=20),
              vt.SamplingParams(temperature=0.9, seed=11, max_tokens=20)]:
        want = [o.token_ids for o in plain.generate(prompts, p)]
        assert [o.token_ids for o in spec.generate(prompts, p)] == want
    s = spec.context.stats()
    assert s["spec_num_drafts"] > 0
    assert 0 < s["spec_num_accepted_tokens"] <= s["spec_num_draft_tokens"]
    # A vt.Model is taken as it is, by vt.Context too; a path only by vt.LLM.
    ctx = vt.Context(model, kv_cache_bytes=64 << 20,
                     speculative_config={"method": "draft_model", "model": model, "num_speculative_tokens": 2})
    assert ctx.stats()["spec_num_drafts"] == 0
    with pytest.raises(TypeError, match="vt.Model"):
        vt.Context(model, speculative_config={"model": model_path, "num_speculative_tokens": 2})


def test_models_with_recurrent_layers_draft_as_target_and_draft():
    # The tiny Llama and Qwen3.5 share their trained vocabulary: each drafts
    # for the other, and Qwen3.5 for itself; n-gram drafts for Qwen3.5. Its
    # state is rolled back where a draft is rejected: the tokens stay.
    llama, qwen = TINY / "llama.gguf", TINY / "qwen3_5.gguf"
    if not llama.exists() or not qwen.exists():
        pytest.skip("tests/models/tiny fixtures are missing")
    prompts = ["a b c d a b c d a b", "The capital of France is", "one two three one two three one"]
    params = [vt.SamplingParams(temperature=0, max_tokens=30, ignore_eos=True),
              vt.SamplingParams(temperature=0.8, top_p=0.9, seed=5, max_tokens=30, ignore_eos=True)]
    for target, config in [(llama, {"model": str(qwen), "num_speculative_tokens": 3}),
                           (qwen, {"model": str(llama), "num_speculative_tokens": 3}),
                           (qwen, {"model": str(qwen), "num_speculative_tokens": 4}),
                           (qwen, SPEC)]:
        plain = vt.LLM(str(target), n_threads=2, kv_cache_memory=KV)
        spec = vt.LLM(str(target), n_threads=2, kv_cache_memory=KV, speculative_config=config)
        for p in params:
            want = [o.token_ids for o in plain.generate(prompts, p)]
            assert [o.token_ids for o in spec.generate(prompts, p)] == want, (target.name, config)
        s = spec.context.stats()
        assert s["spec_num_drafts"] > 0, (target.name, config)
        if config.get("model") == str(qwen) and target == qwen:
            assert s["spec_num_accepted_tokens"] > 0  # its own greedy drafts


def test_a_models_own_mtp_layer_drafts_and_keeps_the_tokens():
    # The tiny Qwen3.5 with a multi-token-prediction layer, from its GGUF and
    # its folder, and DeepSeek-V3's folder with its next-n layer; one without
    # the layer is refused by name.
    for src in [TINY / "qwen3_5_mtp.gguf", TINY / "qwen3_5_mtp", TINY / "deepseek_v3_mtp"]:
        if not src.exists():
            pytest.skip(f"{src} is missing")
        plain = vt.LLM(str(src), n_threads=2, kv_cache_memory=KV)
        spec = vt.LLM(str(src), n_threads=2, kv_cache_memory=KV,
                      speculative_config={"method": "mtp", "num_speculative_tokens": 2})
        prompts = ["a b c d a b c d a b", "The capital of France is"]
        for p in [vt.SamplingParams(temperature=0, max_tokens=30, ignore_eos=True),
                  vt.SamplingParams(temperature=0.8, seed=9, max_tokens=30, ignore_eos=True)]:
            assert [o.token_ids for o in spec.generate(prompts, p)] == [o.token_ids for o in plain.generate(prompts, p)]
        assert spec.context.stats()["spec_num_drafts"] > 0
    with pytest.raises(vt.VtInvalidArgument, match="multi-token-prediction"):
        vt.LLM(str(TINY / "qwen3_5.gguf"), kv_cache_memory=KV,
               speculative_config={"method": "mtp", "num_speculative_tokens": 2})


def test_a_draft_model_of_another_vocabulary_is_refused(model):
    src = TINY / "llama.gguf"
    if not src.exists():
        pytest.skip("tests/models/tiny/llama.gguf is missing")
    with pytest.raises(vt.VtInvalidArgument, match="vocabulary"):
        vt.LLM(model, kv_cache_memory=KV, speculative_config={"model": str(src), "num_speculative_tokens": 2})


@pytest.mark.parametrize("config, says", [
    ({"method": "eagle", "num_speculative_tokens": 3}, "method 'eagle'"),
    ({"method": "ngram"}, "num_speculative_tokens"),
    ({"method": "ngram", "num_speculative_tokens": 3, "model": "x"}, "'model' is not supported"),
    ({"method": "draft_model", "num_speculative_tokens": 3}, "needs 'model'"),
    ({"model": "x", "num_speculative_tokens": 3, "prompt_lookup_min": 2}, "'prompt_lookup_min' is not supported"),
    ({"method": "ngram", "num_speculative_tokens": -2}, "out of range"),
    ({"method": "suffix", "prompt_lookup_min": 2}, "'prompt_lookup_min' is not supported with method 'suffix'"),
    ({"method": "suffix", "suffix_decoding_max_cached_requests": -1}, "out of range"),
    ({"method": "mtp", "num_speculative_tokens": 2, "prompt_lookup_min": 2}, "'prompt_lookup_min' is not supported with method 'mtp'"),
    ({"method": "mtp"}, "num_speculative_tokens"),
])
def test_bad_configs_raise_value_error(model, config, says):
    with pytest.raises(ValueError, match=says):
        vt.LLM(model, kv_cache_memory=KV, speculative_config=config)


def test_out_of_range_sizes_are_refused_by_libvt(model):
    with pytest.raises(vt.VtInvalidArgument):
        vt.LLM(model, kv_cache_memory=KV, speculative_config={"method": "ngram", "num_speculative_tokens": 17})


def test_per_request_drafts_and_counters(model):
    # A context that drafts 6 n-gram tokens; one request takes at most 1 a
    # step: its events count its own drafts, which add up to the context's.
    ctx = vt.Context(model, n_threads=2, kv_cache_bytes=64 << 20, speculative_config=SPEC | {
        "num_speculative_tokens": 6})
    prompt = model.tokenizer.encode("a b c d a b c d a b c d a b c d a b")
    ids = [ctx.submit(prompt, max_tokens=24), ctx.submit(prompt, max_tokens=24, num_speculative_tokens=1)]
    last = {}
    while len(last) < 2:
        ctx.step()
        for ev in ctx.poll():
            assert ev.n_accepted_tokens <= ev.n_draft_tokens
            if ev.finish_reason is not None:
                last[ev.request_id] = ev
    full, short = last[ids[0]], last[ids[1]]
    s = ctx.stats()
    assert full.n_draft_tokens + short.n_draft_tokens == s["spec_num_draft_tokens"]
    assert full.n_accepted_tokens + short.n_accepted_tokens == s["spec_num_accepted_tokens"]
    assert full.n_draft_tokens > short.n_draft_tokens > 0
    assert short.n_draft_tokens <= short.n_output_tokens  # one token a draft at most
