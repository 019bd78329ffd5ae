#!/usr/bin/env python3
"""Writes tests/models/tiny/: a tiny random-weight model per architecture,
written by Hugging Face transformers, converted to GGUF by llama.cpp's own
convert_hf_to_gguf.py, with transformers' float32 logits as the golden.

Run from the repository root (re-runnable, deterministic: fixed seeds):
    PY=/path/to/venv/bin/python   # torch, transformers==5.25.0, tokenizers==0.23.3
    $PY tests/models/make-tiny-models.py --llama-cpp DIR [--only NAME,...]
(The fixtures before the hybrid ones were made with transformers 5.24.0;
qwen3_5, qwen3_5_moe, qwen3_next, kimi_linear, lfm2, lfm2_moe, nemotron_h and
nemotron_h_moe, the Mamba-2 hybrids, gemma4 / gemma4_moe, laguna, laguna_elem
and muse_glimmer need 5.25, which the script checks. Each golden records the
versions that made it.)
DIR is llama.cpp's source tree, e.g. the vendor/llama.cpp folder of the
llama-cpp-python 0.3.36 sdist (pip download --no-deps --no-binary :all:
llama-cpp-python==0.3.36). torch runs here only: CI reads the committed
fixtures and needs none of it.

Per architecture (CONFIGS), tests/models/tiny/<name>/ (the folder that
save_pretrained writes: config.json, model.safetensors, tokenizer files,
generation_config.json), <name>.gguf (its conversion, float32 weights) and
<name>.json:
  prompts   text, ids (the HF tokenizer's, no special tokens added),
            logits: every position's full float32 logits row (6 decimals)
  greedy    32 ids: argmax of transformers' float32 logits, one token per
            step with the whole sequence recomputed, from prompts[-1];
            greedy_margins: top1 - top2 at each step.
The configs are chosen to exercise each feature: prompts longer than the
sliding windows, q/k/v biases, q/k norms, head sizes that are not
n_embd / n_head, tied and untied outputs, Llama 3 rope scaling; mixtures of
experts (8 routed, 2 used): softmax routers with and without renormalised
weights (Qwen3-MoE, Mixtral, OLMoE), DeepSeek V2 and V3 multi-head latent
attention with and without a low-rank q, YaRN with DeepSeek's mscale, a
dense first layer, shared experts, routed_scaling_factor, and V3's sigmoid
router with a score correction bias and group-limited selection; hybrids of
linear attention and full attention (HYBRID): Qwen3.5 and Qwen3-Next gated
delta nets (more V heads than K heads, K and V head sizes that differ in
Qwen3.5), their gated full attention with partial rope, Qwen's softmax
routers with a sigmoid-gated shared expert, and Kimi-Linear's KDA (a decay
per key channel) beside MLA without rope, LFM2's gated short convs (a
state of the conv tail only) beside GQA attention, dense and with experts;
each (Mamba-2 with grouped B/C and its gated norm per group, attention
without rope, relu2 MLPs or relu2 experts behind DeepSeek-V3's router with a
latent projection and a shared expert); gated attention (Laguna, Muse
Glimmer): softplus gates per head and per channel over per-layer query head
counts, a soft-capped sigmoid router, YaRN on partial rope, a sigmoid gate,
centred norms, layers without rope, logits scaled then soft-capped. The
hybrids get a third prompt of
170 tokens, longer than two chunks of 64 of the chunked delta rule, and
random norm weights, A_log and dt_bias (their inits are constants, which
would leave the norm conventions untested). Gemma 4 (gemma4: per-layer embeddings, KV
sharing, double-wide MLPs; gemma4_moe: K = V global layers, the dense MLP and
experts in parallel; both: global layers of another head size with
proportional rope, sliding windows shorter than the prompts, soft-capped
logits) gets random norms, layer scalars and router scales (gemma4_init). For a
mixture of experts the script prints how many distinct experts each MoE
layer routed the prompts' tokens to (all 8, or the routing is not tested).

The tokenizer is a byte-level BPE of 384 tokens trained on the first 64 KB of
../shared/data/tokenizers/corpus/war-and-peace.txt, so each fixture stays
small. The converter refuses a pre-tokenizer it does not know by hash; this
script tells it the pre-tokenizer is GPT-2's (which it is: ByteLevel with
GPT-2's split pattern) instead of growing the fixtures with a real vocabulary.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "tests" / "models" / "tiny"
CORPUS = REPO.parent / "shared" / "data" / "tokenizers" / "corpus" / "war-and-peace.txt"
VOCAB = 384
N_GREEDY = 32
SEED = 1234
# Seeds for the mixtures of experts, found by trying (most seeds give some
# greedy step within 0.01 of a tie, and vt's f16 K, V and attention
# probabilities move logits by up to ~4e-3): every greedy margin above 0.05,
# 4 to 8 distinct greedy tokens, the routers' top-k gaps above 5e-5 and all
# 8 experts of every MoE layer chosen by some prompt token. The hybrids'
# seeds meet the same bounds (their greedy runs do not loop: 28 to 31
# distinct tokens, so a seed with no margin under 0.05 is rare, about 1 in
# 6000 for the Qwen mixtures); qwen3_5's dense seed too. LFM2's are the best
# of a shorter search (60 and 200 seeds): the largest smallest greedy margin
# (0.030 and 0.008), with LFM2-MoE's routing bounds met.
SEEDS = {"qwen3_moe": 1590, "mixtral": 1274, "olmoe": 1308, "deepseek_v2": 1399, "deepseek_v2_qlora": 1403,
         "deepseek_v3": 1508, "qwen3_5": 1236, "qwen3_5_moe": 301822, "qwen3_next": 122658, "kimi_linear": 1617,
         "lfm2": 1272, "lfm2_moe": 1378, "nemotron_h": 79, "nemotron_h_moe": 74}

PROMPTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Prince Andrew looked at the sky, high and infinite, and thought that all of it was "
    "vanity and deception, all but that endless sky.",
]
# The hybrids' prompts: PROMPTS and 170 tokens (three chunks of the chunked
# delta rule, the last partial); greedy continues from the long one.
HYBRID_PROMPTS = PROMPTS + [
    "Each visitor performed the ceremony of greeting this old aunt whom not one of them knew, not one of them "
    "wanted to know, and not one of them cared about; Anna Pavlovna observed these greetings with mournful and "
    "solemn interest and silent approval. The aunt spoke to each of them in the same words, about their health "
    "and her own.",
]

# name: (transformers class, config class, config kwargs). Small widths; head
# sizes differ from n_embd / n_head where the architecture allows it.
COMMON = dict(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
              max_position_embeddings=512, rms_norm_eps=1e-6)
# DeepSeek V2: MLA (kv_lora_rank 32, nope 16 + rope 8 per q/k head, v 16), a
# dense first layer, two shared experts, softmax greedy top-k without
# renormalising, routed_scaling_factor 1.5, YaRN with DeepSeek's mscale (the
# softmax scale times mscale(4, 0.707)^2). scoring_func is not a transformers
# parameter, but the real configs carry it and the converter reads it for
# the gating function.
DEEPSEEK = dict(hidden_size=64, intermediate_size=128, moe_intermediate_size=32, num_hidden_layers=3,
                num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=512, rms_norm_eps=1e-6,
                tie_word_embeddings=False, q_lora_rank=None, kv_lora_rank=32, qk_nope_head_dim=16,
                qk_rope_head_dim=8, v_head_dim=16, first_k_dense_replace=1, n_routed_experts=8,
                num_experts_per_tok=2, n_shared_experts=2, topk_method="greedy", n_group=None, topk_group=None,
                norm_topk_prob=False, routed_scaling_factor=1.5, scoring_func="softmax",
                rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                                 "original_max_position_embeddings": 128, "mscale": 0.707,
                                 "mscale_all_dim": 0.707, "beta_fast": 32, "beta_slow": 1})
# Hybrids of linear and full attention (transformers 5.25). Qwen3.5 and
# Qwen3-Next: four layers, the fourth full attention (the real models'
# full_attention_interval 4); gated delta nets with 2 K heads of 16 and 4 V
# heads (two per K head), conv kernel 4; full attention of 4 heads of 32 over
# 2 kv heads with q_proj emitting a query and a gate per head, q/k norms, rope
# on the first quarter of each head (8 of 32 dims) at theta 1e7 as the real
# models. Qwen3.5's rope is interleaved M-RoPE (sections of 2, 1, 1 pairs);
# text positions are equal in all sections, so it is plain partial rope.
QWEN_HYBRID = dict(hidden_size=64, intermediate_size=64, num_hidden_layers=4, num_attention_heads=4,
                   num_key_value_heads=2, head_dim=32, max_position_embeddings=512, rms_norm_eps=1e-6,
                   layer_types=["linear_attention"] * 3 + ["full_attention"], linear_conv_kernel_dim=4,
                   linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=16, linear_value_head_dim=16,
                   rope_parameters={"rope_type": "default", "rope_theta": 10000000.0, "partial_rotary_factor": 0.25})
QWEN35_ROPE = {"rope_type": "default", "rope_theta": 10000000.0, "partial_rotary_factor": 0.25,
               "mrope_section": [2, 1, 1], "mrope_interleaved": True}
# Qwen's mixtures in the hybrids: 8 routed experts of 8, 2 used, softmax then
# top-k then renormalised, plus a shared expert of 16 scaled by
# sigmoid(shared_expert_gate . x), in every layer. (Narrow experts and a dense
# width of 64 keep each fixture's folder and GGUF to about 1.6 MB.)
QWEN_HYBRID_MOE = dict(num_experts=8, num_experts_per_tok=2, moe_intermediate_size=8,
                       shared_expert_intermediate_size=16)
# LFM2 (transformers 5.25): gated short convs (conv_L_cache 3: a state of two
# inputs per channel) and, in some layers, GQA attention with per-head q/k
# norms (4 heads of 16 over 2 kv heads); the final norm is transformers'
# embedding_norm. LFM2's FFN width is auto-adjusted from intermediate_size
# (int(2/3 100) = 66, times 1.3 = 85, up to a multiple of 16: 96), as the
# converter computes it too. LFM2-MoE: a dense first layer (num_dense_layers),
# then 8 experts of 16, 2 used: sigmoid scores chosen by score + expert_bias
# (random, see build), weighted by the unbiased scores renormalised; its
# output is tied (the converter has no output.weight for lfm2moe), LFM2's not.
LFM2 = dict(hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
            max_position_embeddings=512, norm_eps=1e-5, conv_L_cache=3, conv_bias=False,
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})
# NemotronH (transformers 5.25): blocks of one mixer each after a pre-norm,
# Mamba-2 ("linear_attention", M), attention without rope ("full_attention",
# *), a relu2 MLP ("mlp", -) or relu2 experts ("moe", E). Mamba-2 of 8 heads
# of 16 (d_inner 128), state 16, 2 groups, conv 4, chunks of 32 (the third
# prompt's 170 tokens cross five); attention of 4 heads of 16 over 2 kv heads.
NEMOTRON_H = dict(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                  max_position_embeddings=512, layer_norm_epsilon=1e-5, mamba_num_heads=8, mamba_head_dim=16,
                  ssm_state_size=16, n_groups=2, conv_kernel=4, chunk_size=32, use_conv_bias=True,
                  tie_word_embeddings=False)
HYBRID = {"qwen3_5", "qwen3_5_moe", "qwen3_next", "kimi_linear", "lfm2", "lfm2_moe", "nemotron_h",
          "nemotron_h_moe"}
CONFIGS = {
    "llama": ("LlamaForCausalLM", "LlamaConfig", dict(
        COMMON, num_hidden_layers=2, tie_word_embeddings=False,
        rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                         "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 64})),
    "mistral": ("MistralForCausalLM", "MistralConfig", dict(
        COMMON, num_hidden_layers=2, tie_word_embeddings=False, head_dim=32, sliding_window=None,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})),
    "qwen2": ("Qwen2ForCausalLM", "Qwen2Config", dict(
        COMMON, num_hidden_layers=2, tie_word_embeddings=True,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})),
    "qwen3": ("Qwen3ForCausalLM", "Qwen3Config", dict(
        COMMON, num_hidden_layers=2, tie_word_embeddings=True, head_dim=32,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})),
    # LongRoPE: transformers uses the short factors while a sequence is
    # within original_max_position_embeddings (256; every test sequence is),
    # vt and llama.cpp while the context a sequence may reach is; the
    # magnitude term sqrt(1 + ln(512/256) / ln 256) applies to both.
    "phi3": ("Phi3ForCausalLM", "Phi3Config", dict(
        COMMON, num_hidden_layers=2, tie_word_embeddings=False, sliding_window=None,
        original_max_position_embeddings=256,
        rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0,
                         "short_factor": [1.0, 1.1, 1.3, 1.6, 2.0, 2.5, 3.0, 4.0],
                         "long_factor": [1.0, 1.5, 2.5, 4.0, 6.0, 9.0, 13.0, 16.0],
                         "original_max_position_embeddings": 256})),
    # Six layers: five sliding (window 8, shorter than both prompts) and one
    # global, the pattern llama.cpp assumes for Gemma 3 files without one.
    "gemma3": ("Gemma3ForCausalLM", "Gemma3TextConfig", dict(
        COMMON, num_hidden_layers=6, head_dim=32, query_pre_attn_scalar=32, sliding_window=8,
        hidden_activation="gelu_pytorch_tanh", final_logit_softcapping=None, attn_logit_softcapping=None,
        tie_word_embeddings=True,
        layer_types=["sliding_attention"] * 5 + ["full_attention"],
        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})),
    # Mixtures of experts: 8 routed experts, 2 used per token, expert width 32.
    "qwen3_moe": ("Qwen3MoeForCausalLM", "Qwen3MoeConfig", dict(
        COMMON, num_hidden_layers=2, tie_word_embeddings=False, head_dim=32,
        num_experts=8, num_experts_per_tok=2, moe_intermediate_size=32, norm_topk_prob=True,
        decoder_sparse_step=1, mlp_only_layers=[],
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})),
    "mixtral": ("MixtralForCausalLM", "MixtralConfig", dict(
        COMMON, num_hidden_layers=2, tie_word_embeddings=False, intermediate_size=32, sliding_window=None,
        num_local_experts=8, num_experts_per_tok=2,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})),
    # OLMoE: q/k norms over the whole projections, so as many kv heads as
    # heads (llama.cpp's OLMoE wants k_norm n_embd wide); the converter
    # writes an rms eps of 1e-5 whatever the config says, hence 1e-5.
    "olmoe": ("OlmoeForCausalLM", "OlmoeConfig", dict(
        COMMON, num_hidden_layers=2, num_key_value_heads=4, rms_norm_eps=1e-5, tie_word_embeddings=False,
        intermediate_size=32, num_experts=8, num_experts_per_tok=2, norm_topk_prob=False,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0})),
    # DEEPSEEK, with q as is and through a low-rank q (q_lora_rank 24).
    "deepseek_v2": ("DeepseekV2ForCausalLM", "DeepseekV2Config", DEEPSEEK),
    "deepseek_v2_qlora": ("DeepseekV2ForCausalLM", "DeepseekV2Config", dict(DEEPSEEK, q_lora_rank=24)),
    # DeepSeek V3: sigmoid router with a score correction bias (random, see
    # make), 4 groups of 2 experts of which the best 2 by top-2 sum stay
    # eligible, renormalised weights times 2.5, one shared expert, YaRN with
    # mscale 1, no multi-token-prediction layer.
    "deepseek_v3": ("DeepseekV3ForCausalLM", "DeepseekV3Config", dict(
        DEEPSEEK, q_lora_rank=24, n_shared_experts=1, topk_method="noaux_tc", n_group=4, topk_group=2,
        norm_topk_prob=True, routed_scaling_factor=2.5, scoring_func="sigmoid", rope_interleave=True,
        num_mtp_layers=0,
        rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                         "original_max_position_embeddings": 128, "mscale": 1.0, "mscale_all_dim": 1.0,
                         "beta_fast": 32, "beta_slow": 1})),
    # Qwen3.5 dense: K heads of 16 and V heads of 24 (the real models have
    # both 128; llama.cpp assumes them equal, transformers and the converter
    # do not); tied output.
    "qwen3_5": ("Qwen3_5ForCausalLM", "Qwen3_5TextConfig", dict(
        QWEN_HYBRID, linear_value_head_dim=24, tie_word_embeddings=True, rope_parameters=dict(QWEN35_ROPE))),
    # Qwen3.5-MoE: every layer a mixture; its config has no intermediate_size.
    "qwen3_5_moe": ("Qwen3_5MoeForCausalLM", "Qwen3_5MoeTextConfig", dict(
        {k: v for k, v in QWEN_HYBRID.items() if k != "intermediate_size"}, **QWEN_HYBRID_MOE,
        tie_word_embeddings=False, rope_parameters=dict(QWEN35_ROPE))),
    # Qwen3-Next: plain partial rope, fused in_proj_qkvz / in_proj_ba in the
    # checkpoint (grouped per K head), the mixture in every layer.
    "qwen3_next": ("Qwen3NextForCausalLM", "Qwen3NextConfig", dict(
        QWEN_HYBRID, **QWEN_HYBRID_MOE, tie_word_embeddings=False, norm_topk_prob=True, decoder_sparse_step=1,
        mlp_only_layers=[])),
    # Kimi-Linear: KDA layers (4 heads of 16, per-key-channel decay through the
    # low-rank f_a/f_b, q/k/v short convs of 4, output gate g_a/g_b into a
    # sigmoid-gated RMSNorm) and the fourth layer MLA without rope (4 heads,
    # kv_lora_rank 32, nope 16 + rope-part 8 per q/k head, v 16, no low-rank q,
    # num_key_value_heads = num_attention_heads as the converter's kv_b split
    # wants); a dense first layer, then DeepSeek-V3-style mixtures of 8
    # experts of 8, 2 used: sigmoid router with a score correction bias, one
    # group, renormalised weights times 2.5, two shared experts (one MLP of
    # 2 x 8). linear_attn_config and moe_router_activation_func are what the
    # real config.json carries and what the converter reads (transformers
    # reads linear_attn_config too, and saves neither by itself).
    "kimi_linear": ("KimiLinearForCausalLM", "KimiLinearConfig", dict(
        hidden_size=64, intermediate_size=128, moe_intermediate_size=8, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=512, rms_norm_eps=1e-5,
        tie_word_embeddings=False, layer_types=["linear_attention"] * 3 + ["full_attention"],
        linear_num_heads=4, linear_head_dim=16, linear_conv_kernel_dim=4,
        linear_attn_config={"full_attn_layers": [4], "kda_layers": [1, 2, 3], "num_heads": 4, "head_dim": 16,
                            "short_conv_kernel_size": 4},
        q_lora_rank=None, kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16,
        num_local_experts=8, num_experts_per_tok=2, n_shared_experts=2, n_group=1, topk_group=1,
        norm_topk_prob=True, routed_scaling_factor=2.5, first_k_dense_replace=1,
        moe_router_activation_func="sigmoid")),
    "lfm2": ("Lfm2ForCausalLM", "Lfm2Config", dict(
        LFM2, intermediate_size=100, block_auto_adjust_ff_dim=True, block_ffn_dim_multiplier=1.3,
        block_multiple_of=16, tie_word_embeddings=False, layer_types=["conv", "conv", "full_attention", "conv"])),
    "lfm2_moe": ("Lfm2MoeForCausalLM", "Lfm2MoeConfig", dict(
        LFM2, intermediate_size=96, moe_intermediate_size=16, num_dense_layers=1, num_experts=8,
        num_experts_per_tok=2, use_expert_bias=True, norm_topk_prob=True, routed_scaling_factor=1.0,
        tie_word_embeddings=True, layer_types=["conv", "full_attention", "conv", "conv"])),
    # NemotronH dense: M - M * - M (the real models' kinds, in a short pattern).
    "nemotron_h": ("NemotronHForCausalLM", "NemotronHConfig", dict(
        NEMOTRON_H, layers_block_type=["linear_attention", "mlp", "linear_attention", "full_attention", "mlp",
                                       "linear_attention"])),
    # NemotronH with experts (Nemotron-3-Nano's kinds): M E M * E M E; 8 relu2
    # experts of 16 over a latent of 32 (fc1/fc2_latent_proj around them), 2
    # used, DeepSeek-V3's sigmoid router with a score correction bias, 4 groups
    # of which 2 stay eligible, renormalised weights times 2.5; a shared relu2
    # expert of 32 on the block's input.
    "nemotron_h_moe": ("NemotronHForCausalLM", "NemotronHConfig", dict(
        NEMOTRON_H, layers_block_type=["linear_attention", "moe", "linear_attention", "full_attention", "moe",
                                       "linear_attention", "moe"],
        n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=16, moe_shared_expert_intermediate_size=32,
        moe_latent_size=32, n_group=4, topk_group=2, norm_topk_prob=True, routed_scaling_factor=2.5)),
}
# Extra converter arguments: Qwen3-Next's and Qwen3.5's converters count
# multi-token-prediction layers and assert there is one unless told not to.
CONVERT_ARGS = {"qwen3_5": ["--no-mtp"], "qwen3_5_moe": ["--no-mtp"], "qwen3_next": ["--no-mtp"]}
# The converter reads a config through transformers' AutoConfig where it
# can, and NemotronHConfig (transformers 5) fills in every MoE default: the
# converter then takes the dense model for nemotron_h_moe (it tests for
# num_experts_per_tok) without its MLP layers. Read as written (as without
# a transformers that knows nemotron_h), config.json converts to nemotron_h.
RAW_CONFIG = {"nemotron_h"}
# A checkpoint that carries a multi-token-prediction (MTP) layer, as the
# real Qwen3.5 / Qwen3.6 ones do (config mtp_num_hidden_layers, tensors
# mtp.*; Qwen3.5-MoE / Qwen3.6-35B-A3B's an expert block, Qwen3-Next's too,
# not counted in its config): the base model of the fixture named (the same
# seed, so the same trunk), its MTP layer random. The converter keeps it by default (the
# nextn block after the trunk, <arch>.nextn_predict_layers); transformers
# 5.25's Qwen3.5 ignores it on load. The goldens add the MTP layer's logits
# (MTP_GOLDENS).
# DeepSeek-V3's next-n layer likewise (config num_nextn_predict_layers,
# tensors model.layers.<n>.*, per expert, with the copies of the embedding
# and output the real checkpoints carry); llama.cpp's converter drops it
# from a deepseek2 GGUF, so that fixture is a folder only (NO_GGUF) and
# holds the 170-token prompt too (chunks for the engine's drafts).
MTP_OF = {"qwen3_5_mtp": "qwen3_5", "qwen3_5_moe_mtp": "qwen3_5_moe", "qwen3_next_mtp": "qwen3_next",
          "deepseek_v3_mtp": "deepseek_v3"}
NO_GGUF = {"deepseek_v3_mtp"}
PAD_VOCAB_8 = {"nemotron_h", "nemotron_h_moe"}

# Mamba-2 hybrids with muP multipliers (transformers 5.25), every multiplier
# != 1 so that each is exercised. Mamba-2 heads of 16, state 16, 2 groups,
# conv 4, chunks of 32 (the third prompt's 170 tokens cross five).
# Granite 4.0-H (granitemoehybrid): M M * M, attention without rope as the
# real Granite 4.0-H models ("nope"), 4 heads of 16 over 2 kv heads, scale
# attention_multiplier; 8 Mamba heads (d_inner = 2 * hidden, which
# llama.cpp's loader asserts); 8 experts of 8, 2 used (softmax over the top
# k logits), a shared SwiGLU MLP of 16 in every layer; tied output as the
# real models. save() writes layer_types as the real config.json does
# ("mamba" / "attention"), which the converter reads and transformers
# remaps. Falcon-H1: attention and Mamba-2 side by side in every layer
# (4 heads of 32 over 2 kv heads, rope theta 1e11 as the real models; 6
# Mamba heads, mamba_d_ssm 96 != 2 * hidden), no gated norm (mamba_rms_norm
# false, as the real models), SwiGLU of 64, untied output (the converter
# folds lm_head_multiplier into the output and embedding_multiplier into
# the embeddings, which tying would mix up).
MAMBA2 = dict(hidden_size=64, max_position_embeddings=512, rms_norm_eps=1e-5, num_attention_heads=4,
              num_key_value_heads=2, mamba_d_head=16, mamba_n_groups=2, mamba_d_state=16, mamba_d_conv=4,
              mamba_expand=2, mamba_chunk_size=32, mamba_conv_bias=True, mamba_proj_bias=False)
CONFIGS.update({
    "granitemoehybrid": ("GraniteMoeHybridForCausalLM", "GraniteMoeHybridConfig", dict(
        MAMBA2, num_hidden_layers=4, intermediate_size=8, shared_intermediate_size=16, num_local_experts=8,
        num_experts_per_tok=2, mamba_n_heads=8, position_embedding_type="nope", tie_word_embeddings=True,
        layer_types=["linear_attention", "linear_attention", "full_attention", "linear_attention"],
        embedding_multiplier=2.0, attention_multiplier=0.0625, residual_multiplier=0.5, logits_scaling=0.5)),
    "falcon_h1": ("FalconH1ForCausalLM", "FalconH1Config", dict(
        MAMBA2, num_hidden_layers=3, intermediate_size=64, head_dim=32, mamba_n_heads=6, mamba_d_ssm=96,
        mamba_rms_norm=False, mamba_norm_before_gate=False, tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 1e11},
        embedding_multiplier=5.66, lm_head_multiplier=3.0, mlp_multipliers=[0.88, 0.59], key_multiplier=0.39,
        attention_in_multiplier=1.5, attention_out_multiplier=0.94, ssm_in_multiplier=1.25,
        ssm_multipliers=[1.2, 2.5, 4.0, 3.0, 1.4], ssm_out_multiplier=1.8)),
})
HYBRID |= {"granitemoehybrid", "falcon_h1"}

# Laguna (transformers 5.25): per-layer query head counts over 2 kv heads of
# 16, per-head q/k norms, a softplus output gate from g_proj (one per head,
# broadcast over head_dim: gating true; or one per channel), full layers with
# rope on half of each head at theta 500000 (laguna: with YaRN, factor 4 over
# 128 positions, as the real models' full layers) and sliding ones (window 8, full
# rope at theta 10000) in llama.cpp's period-4 pattern (full at il % 4 == 0:
# its converter writes no pattern), a dense first layer, then 8 experts of 32,
# 2 used: sigmoid of the router logits soft-capped at 1.5, chosen by score +
# e_score_correction_bias, renormalised, times moe_routed_scaling_factor 1.5,
# plus a shared expert of 32. laguna_elem: the per-element gate, two dense
# layers first, narrower FFNs. (One full layer in four: the engine test's
# small pools give sliding layers up to half, and two full layers of four or
# five would then not hold max_model_len.)
LAGUNA = dict(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
              max_position_embeddings=512, rms_norm_eps=1e-6, tie_word_embeddings=False, sliding_window=8,
              num_experts=8, num_experts_per_tok=2, moe_intermediate_size=32, shared_expert_intermediate_size=32,
              moe_routed_scaling_factor=1.5, moe_router_logit_softcapping=1.5)
CONFIGS.update({
    "laguna": ("LagunaForCausalLM", "LagunaConfig", dict(
        LAGUNA, num_hidden_layers=4, num_attention_heads_per_layer=[4, 8, 2, 6], gating=True,
        rope_parameters={"full_attention": {"rope_type": "yarn", "rope_theta": 500000.0, "partial_rotary_factor": 0.5,
                                            "factor": 4.0, "original_max_position_embeddings": 128,
                                            "beta_fast": 32.0, "beta_slow": 1.0},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0,
                                               "partial_rotary_factor": 1.0}},
        layer_types=["full_attention", "sliding_attention", "sliding_attention", "sliding_attention"],
        mlp_layer_types=["dense", "sparse", "sparse", "sparse"])),
    "laguna_elem": ("LagunaForCausalLM", "LagunaConfig", dict(
        LAGUNA, num_hidden_layers=4, num_attention_heads_per_layer=[6, 4, 2, 4], gating="per-element",
        intermediate_size=32, moe_intermediate_size=16, shared_expert_intermediate_size=16,
        layer_types=["full_attention", "sliding_attention", "sliding_attention", "sliding_attention"],
        mlp_layer_types=["dense", "dense", "sparse", "sparse"])),
    # Muse Glimmer's text model, as MuseGlimmerForConditionalGeneration with a
    # one-layer vision tower (what the checkpoints are): 4 layers, 4 heads of
    # 16 over 2 kv heads, the default layer kinds (full attention without
    # rope at layer 3, every 4th counted back from the last; sliding window 8
    # with rope elsewhere), centred norms (1 + w, w random: see build), a
    # weightless q/k norm with q times qk_scale_factor, a sigmoid gate per
    # channel, logits times 0.75 then soft-capped at 2 (tanh bends the largest
    # by a quarter). qk_scale_factor 2.5, below the real 3.87: sharper
    # attention magnifies the rounding of vt's f16 K past the tolerance.
    "muse_glimmer": ("MuseGlimmerForConditionalGeneration", "MuseGlimmerConfig", dict(
        text_config=dict(hidden_size=64, intermediate_size=64, num_hidden_layers=4, num_attention_heads=4,
                         num_key_value_heads=2, head_dim=16, max_position_embeddings=512, rms_norm_eps=1e-5,
                         sliding_window=8, final_logit_softcapping=2.0, output_multiplier=0.75,
                         qk_scale_factor=2.5, tie_word_embeddings=False,
                         rope_parameters={"rope_type": "default", "rope_theta": 500000.0}),
        vision_config=dict(patch_size=14, pos_emb_height=4, pos_emb_width=4, num_attention_heads=2,
                           num_hidden_layers=1, hidden_size=32, intermediate_size=64,
                           max_position_embeddings=16),
        out_hidden_size=128, projector_hidden_size=32, tie_word_embeddings=False)),
})
# Seeds: the best of 40 to 60 tried (greedy margins are small here: Muse
# Glimmer's logits are soft-capped to about +-1.5). laguna: smallest greedy
# margin 0.019, every expert of the three MoE layers chosen; laguna_elem:
# 0.020, all experts; muse_glimmer: 0.020 (29 distinct greedy tokens).
SEEDS.update({"laguna": 37, "laguna_elem": 24, "muse_glimmer": 38})
# Their norms start as constants (ones, or zeros for 1 + w): moved by N(0, 0.1)
# as the hybrids' (hybrid_init), or the conventions would go untested.
NORM_JITTER = {"laguna", "laguna_elem", "muse_glimmer"}
# The text config of a multimodal config class gets the vocabulary and ids.
COMPOSITE = {"muse_glimmer"}
# gpt-oss (transformers 5.25): two layers, the first sliding (window 8,
# shorter than both prompts), the second full (the config's default
# layer_types); 4 heads of 32 over 2 kv heads with biases on q, k, v and o
# and a sink per head; 8 experts of 32 (gate_up interleaved, transposed, as
# transformers keeps them), 3 used, a router with a bias (see build), the
# clamped SwiGLU;
# YaRN (factor 32, beta 32/1, original context 256; truncate true, the
# transformers default, which is what llama.cpp computes: the real config's
# truncate false moves the ramp's ends off whole dimensions, which a GGUF
# cannot say; vt's folder path reads it, see lib/models/gpt-oss.cpp and the
# ROPE yarn_exact test). Sinks and every bias get N(0, 1) values (the
# init's zeros would leave them untested).
CONFIGS["gpt_oss"] = ("GptOssForCausalLM", "GptOssConfig", dict(
    hidden_size=64, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
    head_dim=32, max_position_embeddings=8192, rms_norm_eps=1e-5, sliding_window=8, tie_word_embeddings=False,
    num_local_experts=8, num_experts_per_tok=3, attention_bias=True,
    layer_types=["sliding_attention", "full_attention"],
    rope_parameters={"rope_type": "yarn", "rope_theta": 150000.0, "factor": 32.0, "beta_fast": 32.0,
                     "beta_slow": 1.0, "truncate": True, "original_max_position_embeddings": 256}))
NEEDS_5_25 = {"gpt_oss"}
# Every greedy margin above 0.05 (7 distinct tokens), all 8 experts of both
# layers chosen, router top-k gaps above 2e-4: the first such seed from 1000.
SEEDS["gpt_oss"] = 1003
# Granite 4.0-H: every greedy margin above 0.05 (28 distinct tokens), all 8
# experts chosen; Falcon-H1: margins above 0.05 (7 distinct tokens).
SEEDS["granitemoehybrid"] = 1242
SEEDS["falcon_h1"] = 3004
# The Granite converter pads the vocabulary to a multiple of 8, as NemotronH's.
PAD_VOCAB_8 |= {"granitemoehybrid"}

# Gemma 4 (transformers 5.25), two text models. Both: six layers, sliding
# (window 8, shorter than every prompt) but for two global ones; sliding
# layers 4 heads of 16 over 2 KV heads, rope theta 1e4; global layers heads
# of 32 (global_head_dim), "proportional" rope at theta 1e6 on a quarter of
# each head's pairs (4 of 16: the others stay unrotated in place); q/k norms,
# an unweighted v norm, scaling 1.0, final logits soft-capped at 30.
# gemma4 (E2B-like): layers 3 and 5 global, per-layer embeddings of 8 per
# layer, the last two layers KV-shared (layer 4 reads layer 2's cache, layer 5
# layer 3's: the last unshared layer global and the one before it sliding, as
# in E2B/E4B and as llama.cpp's loader assumes), their MLPs double wide.
# gemma4_moe: layers 2 and 5 global. gemma4_moe (26B-A4B-like): the global layers' keys are their
# values (attention_k_eq_v, one global KV head), and every layer runs a dense
# MLP and 8 experts of 16 (2 used) in parallel. build() randomizes what
# transformers initializes to constants (norm weights, layer_scalar, the
# router's scale and per-expert scale).
GEMMA4 = dict(COMMON, intermediate_size=64, num_hidden_layers=6, head_dim=16, global_head_dim=32,
              sliding_window=8, hidden_activation="gelu_pytorch_tanh", final_logit_softcapping=30.0,
              tie_word_embeddings=True, max_position_embeddings=512,
              layer_types=["sliding_attention", "sliding_attention", "full_attention"] * 2,
              rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                               "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                                  "rope_theta": 1000000.0}})
CONFIGS.update({
    "gemma4": ("Gemma4ForCausalLM", "Gemma4TextConfig", dict(
        GEMMA4, layer_types=["sliding_attention"] * 3 + ["full_attention", "sliding_attention", "full_attention"],
        hidden_size_per_layer_input=8, num_kv_shared_layers=2, use_double_wide_mlp=True,
        attention_k_eq_v=False, enable_moe_block=False)),
    "gemma4_moe": ("Gemma4ForCausalLM", "Gemma4TextConfig", dict(
        GEMMA4, hidden_size_per_layer_input=0, num_kv_shared_layers=0, attention_k_eq_v=True,
        num_global_key_value_heads=1, enable_moe_block=True, num_experts=8, top_k_experts=2,
        moe_intermediate_size=16)),
})
GEMMA4_NAMES = {"gemma4", "gemma4_moe"}
# Gemma 4: the best of searches of about 200 seeds each (smallest greedy
# margin 0.045 with 24 distinct tokens; gemma4_moe 0.029 with 17, every
# router's top-k gap above 5e-5 and all 8 experts of each layer chosen).
SEEDS["gemma4"] = 2046
SEEDS["gemma4_moe"] = 3006


# gpt_oss_mxfp4: the gpt_oss model (same seed) with its experts stored as
# the released gpt-oss checkpoints store them: MXFP4 pairs <name>_blocks
# (n_expert, n_out, n_in / 32, 16) U8, e2m1 codes two per byte (element 2i in
# the low nibble), and <name>_scales (n_expert, n_out, n_in / 32) U8, e8m0
# exponents (scale 2^(s - 127)); quantization_config quant_method mxfp4.
# The oracle is transformers loading that folder (Mxfp4Config(dequantize=
# True): on a CPU it dequantizes to float32), so the goldens are the model
# whose experts are exactly the MXFP4 values; llama.cpp's converter keeps
# them in MXFP4 in the GGUF.
MXFP4_OF = {"gpt_oss_mxfp4": "gpt_oss"}
E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def mxfp4_quantize(w):
    """OCP MXFP4 of w (..., n), n a multiple of 32, along its last axis:
    (blocks (..., n / 32, 16) uint8, scales (..., n / 32) uint8). A block's
    scale 2^e puts its largest magnitude within e2m1's range (e = floor(log2
    amax) - 2: 6 = 1.5 * 2^2); each value/2^e to the nearest e2m1 magnitude
    (ties to the lower), the sign in bit 3."""
    import numpy as np
    x = np.asarray(w, dtype=np.float64).reshape(*w.shape[:-1], -1, 32)
    amax = np.abs(x).max(-1)
    e = np.where(amax > 0, np.floor(np.log2(np.where(amax > 0, amax, 1.0))) - 2, -127).clip(-127, 127)
    v = x / np.exp2(e)[..., None]
    code = np.abs(np.abs(v)[..., None] - np.array(E2M1)).argmin(-1).astype(np.uint8)
    code |= (np.signbit(v) & (code != 0)).astype(np.uint8) << 3
    blocks = (code[..., 0::2] | (code[..., 1::2] << 4)).astype(np.uint8)
    return blocks, (e + 127).astype(np.uint8)


def mxfp4_dequantize(blocks, scales):
    import numpy as np
    lut = np.array(E2M1 + [-v for v in E2M1], dtype=np.float64)
    vals = np.stack([lut[blocks & 15], lut[blocks >> 4]], -1).reshape(*blocks.shape[:-1], 32)
    return (vals * np.exp2(scales.astype(np.float64) - 127)[..., None]).reshape(*blocks.shape[:-2], -1)


def save_mxfp4_experts(folder: Path) -> None:
    """Rewrites the saved gpt_oss folder's experts as MXFP4 pairs (see MXFP4_OF)."""
    import numpy as np
    import torch
    from safetensors.torch import load_file, save_file
    st = folder / "model.safetensors"
    tensors = load_file(st)
    for name in [k for k in tensors if k.endswith(("mlp.experts.gate_up_proj", "mlp.experts.down_proj"))]:
        w = tensors.pop(name).numpy()  # (n_expert, n_in, n_out): x @ w
        blocks, scales = mxfp4_quantize(np.ascontiguousarray(w.transpose(0, 2, 1)))  # rows: outputs
        tensors[name + "_blocks"] = torch.from_numpy(blocks)
        tensors[name + "_scales"] = torch.from_numpy(scales)
    save_file(tensors, st, metadata={"format": "pt"})
    cfg_path = folder / "config.json"
    cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    cfg["quantization_config"] = {"quant_method": "mxfp4", "modules_to_not_convert": [
        "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}
    cfg_path.write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")


def load_mxfp4_oracle(folder: Path, f32_model):
    """transformers' own load of the MXFP4 folder, dequantized to float32,
    checked against mxfp4_dequantize and against the float32 model it came
    from (the experts moved by the quantization, nothing else)."""
    import numpy as np
    import torch
    import transformers
    from safetensors.numpy import load_file
    model = transformers.GptOssForCausalLM.from_pretrained(
        folder, quantization_config=transformers.Mxfp4Config(dequantize=True), dtype=torch.float32).eval()
    st = load_file(folder / "model.safetensors")
    ref = dict(model.named_parameters())
    moved = 0
    for n, p in f32_model.named_parameters():
        got = ref[n].detach().numpy()
        if n.endswith(("experts.gate_up_proj", "experts.down_proj")):
            want = mxfp4_dequantize(st[n + "_blocks"], st[n + "_scales"]).transpose(0, 2, 1)
            assert np.array_equal(got, want.astype(np.float32)), n
            moved += int(not np.array_equal(got, p.detach().numpy()))
        else:
            assert np.array_equal(got, p.detach().numpy()), n
    assert moved > 0
    return model


def train_tokenizer(folder: Path):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    text = CORPUS.read_text(encoding="utf-8")[:65536]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB - 1, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator([text[i:i + 4096] for i in range(0, len(text), 4096)], trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>",
                                   unk_token=None)
    fast.save_pretrained(folder)
    return fast


# llama.cpp 0.3.36's Laguna converter drops moe_router_logit_softcapping
# (and its graph has no router soft-cap). The fixtures' GGUFs carry it under
# llama.cpp's own key for it, <arch>.router_logit_softcapping (Grok's), added
# in the converter's child process as a converter that kept it would.
LAGUNA_SOFTCAP = (
    "import conversion.laguna as laguna\n"
    "_set = laguna.LagunaModel.set_gguf_parameters\n"
    "def _with_softcap(self):\n"
    "    _set(self)\n"
    "    cap = float(self.hparams.get('moe_router_logit_softcapping') or 0.0)\n"
    "    if cap > 0: self.gguf_writer.add_router_logit_softcapping(cap)\n"
    "laguna.LagunaModel.set_gguf_parameters = _with_softcap\n")
CONVERT_PATCH = {"laguna": LAGUNA_SOFTCAP, "laguna_elem": LAGUNA_SOFTCAP}


def convert(llama_cpp: Path, folder: Path, out: Path, extra: list[str] = (), raw_config: bool = False,
            patch: str = "") -> None:
    # The converter in a child process, with get_vocab_base_pre answering
    # "gpt-2" for this tokenizer (see the docstring). raw_config: the
    # converter reads config.json itself instead of through transformers'
    # AutoConfig (see RAW_CONFIG).
    code = (
        "import sys, runpy\n"
        f"sys.path.insert(0, {str(llama_cpp)!r})\n"
        f"sys.path.insert(1, {str(llama_cpp / 'gguf-py')!r})\n"
        "import conversion.base as base\n"
        "base.TextModel.get_vocab_base_pre = lambda self, tokenizer: 'gpt-2'\n"
        # Gemma 4's converter reads a SentencePiece-style vocabulary
        # (LlamaHfVocab); this BPE one goes through Gemma 3's GPT-2 path.
        "import conversion.gemma as gemma\n"
        "gemma.Gemma4Model.set_vocab = gemma.Gemma3Model.set_vocab\n"
        + patch
        + ("class _NoAutoConfig:\n"
           "    @staticmethod\n"
           "    def from_pretrained(*a, **k): raise ValueError('config.json as written')\n"
           "base.AutoConfig = _NoAutoConfig\n" if raw_config else "") +
        f"sys.argv = ['convert_hf_to_gguf.py', {str(folder)!r}, '--outtype', 'f32', '--outfile', {str(out)!r}]"
        f" + {list(extra)!r}\n"
        f"runpy.run_path({str(llama_cpp / 'convert_hf_to_gguf.py')!r}, run_name='__main__')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"make-tiny-models: convert_hf_to_gguf.py failed on {folder}:\n{r.stdout}{r.stderr}")


def hybrid_init(model) -> None:
    """Random values for the hybrids' parameters that transformers
    initialises to constants: norm weights (zero-centred 1 + w in Qwen's, w in
    Kimi's) moved by N(0, 0.1); dt_bias N(0, 0.5); A = exp(A_log) uniform in
    [0.02, 1], so that the decays exp(g) are mostly 0.5 to 0.99 and the
    recurrent state carries across the 64-token chunks."""
    import torch
    for n, p in model.named_parameters():
        if n.endswith("A_log"):
            p.copy_(torch.empty_like(p).uniform_(0.02, 1.0).log())
        elif n.endswith("dt_bias"):
            p.copy_(torch.randn_like(p) * 0.5)
        elif n.endswith("norm.weight"):
            p.add_(torch.randn_like(p) * 0.1)
        elif n.endswith(".D"):  # Mamba-2's skip, ones at init
            p.copy_(1.0 + torch.randn_like(p) * 0.5)


def gemma4_init(model) -> None:
    """Random values for what Gemma 4 initializes to ones: norm weights
    (plain w, not 1 + w) N(1, 0.1), layer_scalar uniform in [0.5, 1.5], the
    router's input scale N(1, 0.2) and per-expert scale uniform in [0.5, 1.5];
    the router's projection 8 times wider than the other matrices."""
    import torch
    for n, p in list(model.named_parameters()) + list(model.named_buffers()):
        if n.endswith("norm.weight") or re.search(r"layernorm(_\d)?\.weight$", n):
            p.add_(torch.randn_like(p) * 0.1)
        elif n.endswith("layer_scalar") or n.endswith("per_expert_scale"):
            p.copy_(torch.empty_like(p).uniform_(0.5, 1.5))
        elif n.endswith("router.scale"):
            p.add_(torch.randn_like(p) * 0.2)
        elif n.endswith("router.proj.weight"):
            p.mul_(8.0)  # decisive routing: top-k gaps far above the f16 KV cache's noise


def build(name: str, folder: Path, seed: int | None = None):
    """The tokenizer (saved into folder) and the random model of CONFIGS[name]."""
    import torch
    import transformers
    if (name in HYBRID | NEEDS_5_25 or name in GEMMA4_NAMES or name in NORM_JITTER) and tuple(int(x) for x in transformers.__version__.split(".")[:2]) < (5, 25):
        sys.exit(f"make-tiny-models: {name} needs transformers 5.25 or newer, not {transformers.__version__}")
    cls_name, cfg_name, kwargs = CONFIGS[name]
    tok = train_tokenizer(folder)
    # NemotronH's converter pads the vocabulary to a multiple of 8 (as the
    # real models' 131072 is) and llama.cpp wants that many embedding rows:
    # one more special token makes the 383 of the tokenizer 384.
    if name in PAD_VOCAB_8 and len(tok) % 8:
        tok.add_tokens([f"<|pad{i}|>" for i in range(8 - len(tok) % 8)], special_tokens=True)
        tok.save_pretrained(folder)
    n_vocab = len(tok)
    if name in GEMMA4_NAMES:  # the per-layer embedding table has a row per token
        kwargs = dict(kwargs, vocab_size_per_layer_input=n_vocab)
    ids = dict(vocab_size=n_vocab, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=None)
    if name in COMPOSITE:
        kwargs = dict(kwargs, text_config=dict(kwargs["text_config"], **ids))
        cfg = getattr(transformers, cfg_name)(**kwargs)
    else:
        cfg = getattr(transformers, cfg_name)(**ids, **kwargs)
    torch.manual_seed(SEEDS.get(name, SEED) if seed is None else seed)
    model = getattr(transformers, cls_name)(cfg).to(torch.float32).eval()
    # Random init gives logits of a few hundredths; widen the spread so
    # that greedy margins are far above float32 noise.
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2:
                p.mul_(4.0)
        # DeepSeek V3's router bias starts at zero: give it the size of
        # the sigmoid scores, so that it changes which experts win.
        for m in model.modules():
            if getattr(m, "e_score_correction_bias", None) is not None:
                m.e_score_correction_bias.copy_(torch.randn_like(m.e_score_correction_bias) * 0.1)
            if isinstance(getattr(m, "expert_bias", None), torch.Tensor):  # LFM2-MoE's, beside its router
                m.expert_bias.copy_(torch.randn_like(m.expert_bias) * 0.1)
        if name == "gpt_oss":
            # Sinks and biases (zeros, or a router bias of the init's 0.02)
            # random; the router 4x wider again, so that the tokens choose
            # the experts (all 8 chosen by some token).
            for n, p in model.named_parameters():
                if n.endswith(("sinks", "bias")):
                    # Biases of the size of what they are added to: larger
                    # ones (o_proj's, down_proj's) would make every token's
                    # residual alike and route all tokens the same way.
                    p.copy_(torch.randn_like(p) * (1.0 if n.endswith("sinks") else 0.1))
                if n.endswith("router.weight"):
                    p.mul_(4.0)
        elif name in HYBRID:
            hybrid_init(model)
        if name in GEMMA4_NAMES:
            gemma4_init(model)
        if name in NORM_JITTER:
            for n, p in model.named_parameters():
                if n.endswith("norm.weight") or n.endswith("layernorm.weight"):
                    p.add_(torch.randn_like(p) * 0.1)
        if name == "lfm2_moe":
            # Tied output: with the embeddings widened as well, each token's own
            # row dominates its logits and greedy repeats one token forever.
            model.model.embed_tokens.weight.mul_(0.25)
    return tok, cfg, model


def save(name: str, model, folder: Path) -> None:
    model.save_pretrained(folder, safe_serialization=True)
    if name == "phi3":
        # The converter reads a BPE vocabulary for Phi only when the
        # config names GPT2Tokenizer (as Phi-4's does), else it wants
        # tokenizer.model.
        tc_path = folder / "tokenizer_config.json"
        tc = json.loads(tc_path.read_text(encoding="utf-8"))
        tc["tokenizer_class"] = "GPT2Tokenizer"
        tc_path.write_text(json.dumps(tc, indent=2), encoding="utf-8")
    if name == "kimi_linear":
        # transformers saves by reversing its load-time renames, and its
        # block_sparse_moe. -> mlp. comes back for the dense first layer too;
        # the real checkpoints (and the converter) have that one under mlp.
        from safetensors.torch import load_file, save_file
        st = folder / "model.safetensors"
        tensors = {re.sub(r"\.block_sparse_moe\.(gate_proj|up_proj|down_proj)\.", r".mlp.\1.", k): v
                   for k, v in load_file(st).items()}
        save_file(tensors, st, metadata={"format": "pt"})
    if name == "granitemoehybrid":
        # The real checkpoints' layer names, which the converter looks for.
        cfg_path = folder / "config.json"
        cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
        cfg["layer_types"] = [{"linear_attention": "mamba", "full_attention": "attention"}[t]
                              for t in cfg["layer_types"]]
        cfg_path.write_text(json.dumps(cfg, indent=2), encoding="utf-8")
    if name == "nemotron_h":
        # transformers saves every MoE default (n_routed_experts,
        # num_experts_per_tok...) and the layer kinds as a list; the
        # converter takes num_experts_per_tok for a model with experts and
        # finds dense MLP layers only in the pattern string. The real dense
        # checkpoints (Nemotron-H 8B, Nano 9B v2) carry no MoE key,
        # hybrid_override_pattern and num_hidden_layers: so does this one
        # (transformers reads it).
        cfg_path = folder / "config.json"
        cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
        pattern = {"linear_attention": "M", "full_attention": "*", "mlp": "-", "moe": "E"}
        cfg["hybrid_override_pattern"] = "".join(pattern[t] for t in cfg.pop("layers_block_type"))
        cfg["num_hidden_layers"] = len(cfg["hybrid_override_pattern"])
        for k in ("n_routed_experts", "num_experts_per_tok", "moe_intermediate_size", "moe_latent_size",
                  "moe_shared_expert_intermediate_size", "moe_shared_expert_overlap", "n_group", "topk_group",
                  "norm_topk_prob", "routed_scaling_factor", "n_shared_experts", "mtp_layers_block_type",
                  "num_nextn_predict_layers"):
            cfg.pop(k, None)
        cfg_path.write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")


def add_mtp(folder: Path, model, counted=True):
    """Writes a random MTP layer into folder's checkpoint under the real
    Qwen3.5 names (mtp.fc, mtp.pre_fc_norm_embedding, mtp.pre_fc_norm_hidden,
    mtp.layers.0.*, mtp.norm; experts one by one) and, where the real
    configs count it (Qwen3.5 / 3.6, not Qwen3-Next: counted), its
    mtp_num_hidden_layers into its config;
    returns transformers' own MTP model (modeling_layers.MtpModel) read back
    from the folder through its checkpoint renames, as generate(use_mtp=True)
    reads one. transformers 5.25's Qwen3.5 config has no num_mtp_layers, so
    the in-memory config is given it (and the MTP layer's type, full
    attention, as the checkpoints' is)."""
    cfg = model.config
    cfg.num_mtp_layers = 1
    cfg.mtp_layer_types = ["full_attention"]

    def name_of(n):
        return "mtp." + (n.replace("mtp_block.", "layers.0.").replace("eh_proj", "fc")
                         .replace("enorm", "pre_fc_norm_embedding").replace("hnorm", "pre_fc_norm_hidden")
                         .replace("post_norm", "norm"))

    return write_mtp(folder, model, name_of, norm_centre=0.0, extra={},
                     config={"mtp_num_hidden_layers": 1, "mtp_use_dedicated_embeddings": False} if counted else {})


def add_deepseek_mtp(folder: Path, model):
    """DeepSeek-V3's layout of the same: model.layers.<n>.{enorm, hnorm,
    eh_proj, shared_head.norm} and the decoder block's own names (experts
    one by one, as the checkpoints store them), plus the copies of the
    embedding and the output (embed_tokens, shared_head.head) that the real
    checkpoints carry; num_nextn_predict_layers 1. transformers finds MTP
    weights by the layer index of DeepSeekV3's _keys_to_ignore_on_load_
    unexpected (61, the real models'): the model is told this one's."""
    import torch
    cfg = model.config
    n = cfg.num_hidden_layers
    cfg.num_mtp_layers = 1
    model._keys_to_ignore_on_load_unexpected = [rf"model\.layers\.{n}\..*"]
    pre = f"model.layers.{n}."

    def name_of(k):
        if k.startswith("mtp_block."):
            return pre + k[len("mtp_block."):]
        return pre + k.replace("post_norm", "shared_head.norm")

    extra = {pre + "embed_tokens.weight": model.model.embed_tokens.weight.detach().clone(),
             pre + "shared_head.head.weight": model.lm_head.weight.detach().clone()}
    return write_mtp(folder, model, name_of, norm_centre=1.0, extra=extra, config={"num_nextn_predict_layers": 1})


def split_experts(ckpt):
    """transformers' fused (X, 2F, E) gate_up and (X, E, F) down, one tensor
    per expert and projection, as the trunk's are saved and the real
    checkpoints store their MTP layers' experts."""
    for k in [k for k in ckpt if k.endswith(("experts.gate_up_proj", "experts.down_proj"))]:
        w, base = ckpt.pop(k), k.rsplit(".", 1)[0]
        for e in range(w.shape[0]):
            if k.endswith("gate_up_proj"):
                gate, up = w[e].chunk(2, dim=0)
                ckpt[f"{base}.{e}.gate_proj.weight"] = gate.contiguous()
                ckpt[f"{base}.{e}.up_proj.weight"] = up.contiguous()
            else:
                ckpt[f"{base}.{e}.down_proj.weight"] = w[e].contiguous()


def write_mtp(folder: Path, model, name_of, norm_centre, extra, config):
    """A random MTP layer (transformers' MtpModel over model, one layer),
    written into folder's checkpoint under name_of(its parameter name), with
    extra tensors and config keys; read back through MtpModel.from_pretrained
    and checked equal. norm_centre: 0 for the zero-centred norms (1 + w), 1
    for plain ones."""
    import torch
    from safetensors.torch import load_file, save_file
    from transformers.modeling_layers import MtpModel
    torch.manual_seed(4321)
    mtp = MtpModel(model, 1).to(torch.float32).eval()
    ckpt = {}
    with torch.no_grad():
        for n, p in mtp.layers[0].named_parameters():
            if p.dim() >= 2:
                p.normal_(0.0, 0.02 * 4.0)  # the trunk's init, widened as build() widens it
            elif n.endswith("norm.weight"):
                p.copy_(norm_centre + torch.randn_like(p) * 0.1)
        for n, b in mtp.layers[0].named_buffers():
            if n.endswith("e_score_correction_bias"):  # as build() gives the trunk's
                b.copy_(torch.randn_like(b) * 0.1)
        for n, t in mtp.layers[0].state_dict().items():
            ckpt[name_of(n)] = t.detach().clone().contiguous()
    split_experts(ckpt)
    ckpt.update(extra)
    st = folder / "model.safetensors"
    tensors = load_file(st)
    tensors.update(ckpt)
    save_file(tensors, st, metadata={"format": "pt"})
    cfg_path = folder / "config.json"
    raw = json.loads(cfg_path.read_text(encoding="utf-8"))
    raw.update(config)
    cfg_path.write_text(json.dumps(raw, indent=2) + "\n", encoding="utf-8")
    model.config.name_or_path = str(folder)
    model.config.dtype = torch.float32  # from_pretrained takes a torch dtype, not build()'s name of one
    loaded = MtpModel.from_pretrained(model).to(torch.float32).eval()
    want, got = mtp.state_dict(), loaded.state_dict()
    if sorted(want) != sorted(got):
        sys.exit(f"make-tiny-models: the MTP layer read back with other tensors: {sorted(set(want) ^ set(got))}")
    for n in want:
        if not torch.equal(want[n], got[n]):
            sys.exit(f"make-tiny-models: the MTP layer's {n} did not read back from the checkpoint")
    return loaded


def mtp_rows(model, mtp, ids):
    """The MTP layer's logits over a sequence, as generate(use_mtp=True)
    drafts: row p from the trunk's last hidden state at position p (after the
    final norm) and the token at p + 1, at position p + 1; it predicts the
    token at p + 2."""
    import torch
    from transformers.cache_utils import MtpCache
    with torch.no_grad():
        ids = torch.tensor([ids])
        h = model(ids, output_hidden_states=True).hidden_states[-1]
        n = ids.shape[1]
        cache = MtpCache(config=model.config.get_mtp_config())
        pos = torch.arange(1, n).unsqueeze(0)
        hidden = mtp.forward_layer(0, h[:, :-1], pos, cache, input_ids=ids[:, 1:])
        return mtp._project_to_logits(hidden)[0].float()


def mtp_goldens(model, mtp, prompts, greedy):
    """The MTP layer's logits over the first prompts (mtp_logits), and over
    the last prompt and its greedy continuation the greedy token and its
    margin of every row from the prompt's last position on (mtp_greedy: what
    an engine drafting one token a step proposes after each step)."""
    import torch
    logits = [[[round(float(v), 6) for v in row] for row in mtp_rows(model, mtp, p["ids"])] for p in prompts[:2]]
    seq = prompts[-1]["ids"] + greedy
    rows = mtp_rows(model, mtp, seq)[len(prompts[-1]["ids"]) - 1:]
    top = torch.topk(rows, 2, dim=-1)
    return logits, {"first_row": len(prompts[-1]["ids"]) - 1, "tokens": top.indices[:, 0].tolist(),
                    "margins": [round(float(a - b), 6) for a, b in top.values.tolist()]}


def goldens(name: str, model, tok, long=False):
    """Every prompt's logits, the greedy continuation of the last prompt with
    its margins, and per MoE router (mlp.gate) the experts its top-k chose
    over the prompts and the smallest gap between the k-th and the next
    expert's selection score."""
    import torch
    routed: dict[str, set[int]] = {}
    gaps: dict[str, float] = {}

    def on_router(m, args, out, n):
        routed.setdefault(n, set()).update(out[2].flatten().tolist())
        logits = out[0].float()
        bias = getattr(m, "e_score_correction_bias", biases.get(n))
        score = logits.sigmoid() + bias if bias is not None else logits.softmax(-1)
        if n.endswith(".router"):  # Gemma 4's router returns its probabilities first
            score = logits
        if getattr(m, "num_group", 1) not in (None, 1):
            return  # group-limited choice: the plain k-th gap does not apply
        top = score.sort(-1, descending=True).values
        k = out[2].shape[-1]
        gaps[n] = min(gaps.get(n, 1.0), float((top[:, k - 1] - top[:, k]).min()))

    # LFM2-MoE's router is feed_forward.gate, its selection bias the block's expert_bias.
    biases = {n + ".gate": m.expert_bias for n, m in model.named_modules()
              if isinstance(getattr(m, "expert_bias", None), torch.Tensor)}
    hooks = [m.register_forward_hook(lambda m, args, out, n=n: on_router(m, args, out, n))
             for n, m in model.named_modules()
             if n.endswith((".mlp.gate", ".feed_forward.gate", ".mixer.gate", ".mlp.router"))]
    prompts = []
    with torch.no_grad():
        hooks += [m.register_forward_hook(lambda m, args, out, n=n: on_router(m, args, out, n))
                  for n, m in model.named_modules()
                  if n.endswith(".block_sparse_moe.router") or (name in GEMMA4_NAMES and n.endswith(".router"))]
        for text in HYBRID_PROMPTS if name in HYBRID or long else PROMPTS:
            ids = tok(text, add_special_tokens=False)["input_ids"]
            logits = model(torch.tensor([ids])).logits[0].float()
            prompts.append({"text": text, "ids": ids,
                            "logits": [[round(float(v), 6) for v in row] for row in logits]})
        for h in hooks:
            h.remove()
        seq = list(prompts[-1]["ids"])
        greedy, margins = [], []
        for _ in range(N_GREEDY):
            row = model(torch.tensor([seq])).logits[0, -1].float()
            top = torch.topk(row, 2)
            greedy.append(int(top.indices[0]))
            margins.append(round(float(top.values[0] - top.values[1]), 6))
            seq.append(greedy[-1])
    return prompts, greedy, margins, routed, gaps


def make(name: str, llama_cpp: Path) -> None:
    import torch
    import transformers
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / name
        mtp = None
        if name in MTP_OF:
            tok, cfg, model = build(MTP_OF[name], folder)
            save(MTP_OF[name], model, folder)
            mtp = (add_deepseek_mtp(folder, model) if MTP_OF[name].startswith("deepseek")
                   else add_mtp(folder, model, counted=MTP_OF[name] != "qwen3_next"))
        elif name in MXFP4_OF:
            tok, cfg, f32_model = build(MXFP4_OF[name], folder)
            save(MXFP4_OF[name], f32_model, folder)
            save_mxfp4_experts(folder)
            model = load_mxfp4_oracle(folder, f32_model)
            cfg = model.config
        else:
            tok, cfg, model = build(name, folder)
            save(name, model, folder)
        OUT.mkdir(parents=True, exist_ok=True)
        if name not in NO_GGUF:
            convert(llama_cpp, folder, OUT / f"{name}.gguf", CONVERT_ARGS.get(name, []), name in RAW_CONFIG,
                    CONVERT_PATCH.get(name, ""))
        kept = OUT / name
        shutil.rmtree(kept, ignore_errors=True)
        shutil.copytree(folder, kept)

        prompts, greedy, margins, routed, gaps = goldens(MTP_OF.get(name, name), model, tok, long=name in MTP_OF)
        golden = {
            "format": 1, "generator": "tests/models/make-tiny-models.py", "architecture": name,
            "transformers": transformers.__version__, "torch": torch.__version__,
            "config": json.loads(cfg.to_json_string()), "n_vocab": getattr(cfg, "text_config", cfg).vocab_size,
            "prompts": prompts, "greedy": greedy, "greedy_margins": margins,
        }
        if mtp is not None:
            golden["mtp_logits"], golden["mtp_greedy"] = mtp_goldens(model, mtp, prompts, greedy)
        if name in MXFP4_OF:
            # vt and llama.cpp read MXFP4 experts through Q8_0 activations
            # (ggml's vec_dot_type for MXFP4), transformers in float32.
            golden["tol_logit"] = 0.04
            golden["tol_logit_why"] = ("MXFP4 experts read with Q8_0 activations (vt and llama.cpp; transformers "
                                       "dequantizes to float32): measured 0.018 for llama.cpp and 0.016 for vt "
                                       "against transformers (llama-cpp-tiny-logits.py), twice that")
        path = OUT / f"{name}.json"
        path.write_text(json.dumps(golden, separators=(",", ":")) + "\n", encoding="utf-8")
        size = (OUT / f"{name}.gguf").stat().st_size if name not in NO_GGUF else 0
        print(f"{name}: {size} + {path.stat().st_size} bytes, "
              f"min greedy margin {min(margins):.4f}, {len(set(greedy))} distinct greedy tokens"
              + (f", experts used per MoE layer {[len(e) for e in routed.values()]}" if routed else "")
              + (f", smallest router top-k gap {min(gaps.values()):.2e}" if gaps else ""),
              file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llama-cpp", required=True, type=Path, help="llama.cpp source tree (convert_hf_to_gguf.py)")
    ap.add_argument("--only", help="comma-separated subset of " + ",".join(list(CONFIGS) + list(MXFP4_OF) + list(MTP_OF)))
    a = ap.parse_args()
    names = a.only.split(",") if a.only else list(CONFIGS) + list(MXFP4_OF) + list(MTP_OF)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    for n in names:
        make(n, a.llama_cpp)


if __name__ == "__main__":
    main()
