"""make-random-gguf.py's gpt-oss and Gemma 4 shapes (issue 42): their tensor
plans and GGUF keys, as llama.cpp 0.3.36's converter writes them
(conversion/gpt_oss.py, conversion/gemma.py's Gemma4Model; checked against
what it wrote for tiny transformers 5.25 models of both configs: the same
keys in the same order, the same tensor names, shapes, F32 choices and
order, save that the MXFP4 experts are written as below).

Both are sliding-window MoE models. A plan is a list of (name, ne, kind):
ne in ggml's order (ne0 = the row length), kind as make-random-gguf.py's
F32_KINDS, "mat" (a matrix, or a stack of experts' matrices, in the file's
type) or "mxfp4" (always MXFP4, whatever the file's type).

Shapes (the real models' dims):
    gptoss-20b      arch gpt-oss, openai/gpt-oss-20b: layers 0-3 of its 24
        (sliding, full, sliding, full: the model alternates them, sliding
        first; llama.cpp derives the pattern, the converter writes no key),
        n_embd 2880, 64 heads / 8 kv heads of 64 with q/k/v/o biases and a
        sink per head, sliding window 128, yarn rope (base 150000, factor
        32 over 4096), 32 experts of 2880, 4 used, router with bias, expert
        biases; vocab 201088, separate output.weight, rms eps 1e-5. The
        experts are MXFP4 in every file, as the converter keeps the
        checkpoint's (blocks and e8m0 scales repacked to ggml's block_mxfp4,
        17 bytes per 32 weights) and writes them before every other tensor
        (generate_extra_tensors); the file's type is that of the other
        matrices: BF16 is the converter's default (--outtype auto on the
        bf16 checkpoint), Q8_0 what llama-quantize's MXFP4_MOE (and the
        converter's --outtype q8_0) make of them. Dims: transformers'
        GptOssConfig (hidden 2880, heads 64/8 of 64, window 128, vocab
        201088, yarn) with gpt-oss-20b's 24 layers, 32 experts, top 4.
    gemma4-26b-a4b  arch gemma4, google/gemma-4-26B-A4B: layers 2-5 of its
        30 (sliding x 3, full; the model repeats 5 sliding + 1 full), n_embd
        2816; sliding layers 16 heads / 8 kv heads of 256, window 1024, rope
        base 10000 on all 256 dims; full layers 16 heads / 2 kv heads of
        512 with K = V (no attn_v: attention_k_eq_v), proportional rope
        (base 1e6 on 128 of the 512 dims: rope_freqs.weight holds 64 ones
        and 192 x 1e30); q/k norms; every layer a dense GELU MLP of 2112 and
        128 experts of 704, 8 used, in parallel (fused ffn_gate_up_exps,
        router scale, per-expert down scale, their own norms), a layer
        output scale; vocab 262144, tied output, final logit softcap 30, no
        per-layer embeddings, no KV sharing. Dims: the checkpoint's
        config.json (text_config: hidden_size 2816, intermediate_size 2112,
        moe_intermediate_size 704, num_experts 128, top_k_experts 8,
        num_attention_heads 16, num_key_value_heads 8,
        num_global_key_value_heads 2, head_dim 256, global_head_dim 512,
        sliding_window 1024, attention_k_eq_v true, final_logit_softcapping
        30, vocab_size 262144), as public copies of it quote it; transformers'
        configuration_gemma4.py gives the rope defaults and names
        num_global_key_value_heads=2 for this checkpoint. At Q4_K the
        704- and 2112-wide rows (ffn_down_exps, ffn_down) fall back to Q5_0
        as llama.cpp's quantizer does.

Sizes: gptoss-20b BF16 4.2 GB, Q8_0 3.0 GB; gemma4-26b-a4b Q8_0 4.3 GB,
Q4_K 2.4 GB. The same plans with all the model's layers (24, 30) come to
13.8 GB (BF16) and 12.1 GB (Q8_0), 26.8 GB (Q8_0): the sizes of the
published GGUFs. A layer is the real one, but the output matrix weighs far
more in a decode step than in the real model: gptoss-20b's 201088 x 2880
output is 73% (BF16; Q8_0 65%) of the bytes a token reads here, 31% (24%)
in the 24-layer model; gemma4-26b-a4b's tied 262144 x 2816 one 64% (Q8_0;
Q4_K 62%) here, 19% (18%) in the model.
"""
from __future__ import annotations

from dataclasses import dataclass

Plan = list[tuple[str, tuple[int, ...], str]]


@dataclass(frozen=True)
class SwaMoeShape:
    name: str
    label: str
    arch: str            # gpt-oss, gemma4
    pattern: str         # one letter per layer kept: S sliding window, F full attention
    n_embd: int
    n_vocab: int
    n_head: int
    n_head_kv: int       # sliding layers' (gpt-oss: every layer's)
    head_dim: int        # sliding layers' (gpt-oss: every layer's)
    n_swa: int           # sliding window
    n_expert: int
    n_expert_used: int
    n_ff_exp: int
    norm_eps: float
    n_ctx: int
    rope_base: float     # full layers' (gpt-oss: every layer's)
    tied: bool
    n_ff: int = 0        # Gemma 4's dense MLP beside the experts
    n_head_kv_full: int = 0   # Gemma 4's full layers
    head_dim_full: int = 0
    rope_base_swa: float = 0.0
    rope_partial_full: float = 1.0  # share of the full layers' head that rotates
    softcap: float = 0.0
    yarn: tuple[float, int, float, float] = ()  # factor, original context, beta fast, beta slow

    @property
    def n_layer(self) -> int:
        return len(self.pattern)

    def full(self, il: int) -> bool:
        return self.pattern[il] == "F"


SHAPES: dict[str, SwaMoeShape] = {s.name: s for s in (
    SwaMoeShape("gptoss-20b", "20B", "gpt-oss", "SFSF", 2880, 201088, 64, 8, 64, 128, 32, 4, 2880, 1e-5,
                131072, 150000.0, tied=False, yarn=(32.0, 4096, 32.0, 1.0)),
    SwaMoeShape("gemma4-26b-a4b", "26B-A4B", "gemma4", "SSSF", 2816, 262144, 16, 8, 256, 1024, 128, 8, 704,
                1e-6, 262144, 1000000.0, tied=True, n_ff=2112, n_head_kv_full=2, head_dim_full=512,
                rope_base_swa=10000.0, rope_partial_full=0.25, softcap=30.0),
)}

# The types each is measured in (compare-llama-bench.py --swa-moe): gpt-oss's
# non-expert matrices as the converter writes them (BF16) and as
# llama-quantize MXFP4_MOE does (Q8_0); Gemma 4 as the other MoE shapes.
TYPES = {"gptoss-20b": ("BF16", "Q8_0"), "gemma4-26b-a4b": ("Q4_K", "Q8_0")}


def gptoss_plan(s: SwaMoeShape) -> Plan:
    """The experts first (MXFP4, layer by layer: down, gate, up, as the
    converter's generate_extra_tensors writes them), then output, token_embd,
    each layer's other tensors in the converter's order, output_norm."""
    e, ff, hd = s.n_expert, s.n_ff_exp, s.head_dim
    q, kv = s.n_head * hd, s.n_head_kv * hd
    plan: Plan = []
    for il in range(s.n_layer):
        p = f"blk.{il}."
        plan += [(p + "ffn_down_exps.weight", (ff, s.n_embd, e), "mxfp4"),
                 (p + "ffn_gate_exps.weight", (s.n_embd, ff, e), "mxfp4"),
                 (p + "ffn_up_exps.weight", (s.n_embd, ff, e), "mxfp4")]
    plan += [("output.weight", (s.n_embd, s.n_vocab), "mat"), ("token_embd.weight", (s.n_embd, s.n_vocab), "mat")]
    for il in range(s.n_layer):
        p = f"blk.{il}."
        plan += [
            (p + "attn_norm.weight", (s.n_embd,), "norm"),
            (p + "ffn_down_exps.bias", (s.n_embd, e), "bias"),
            (p + "ffn_gate_exps.bias", (ff, e), "bias"),
            (p + "ffn_up_exps.bias", (ff, e), "bias"),
            (p + "ffn_gate_inp.bias", (e,), "bias"),
            (p + "ffn_gate_inp.weight", (s.n_embd, e), "router"),
            (p + "post_attention_norm.weight", (s.n_embd,), "norm"),
            (p + "attn_k.bias", (kv,), "bias"),
            (p + "attn_k.weight", (s.n_embd, kv), "mat"),
            (p + "attn_output.bias", (s.n_embd,), "bias"),
            (p + "attn_output.weight", (q, s.n_embd), "mat"),
            (p + "attn_q.bias", (q,), "bias"),
            (p + "attn_q.weight", (s.n_embd, q), "mat"),
            (p + "attn_sinks.weight", (s.n_head,), "bias"),
            (p + "attn_v.bias", (kv,), "bias"),
            (p + "attn_v.weight", (s.n_embd, kv), "mat"),
        ]
    return plan + [("output_norm.weight", (s.n_embd,), "norm")]


def gemma4_plan(s: SwaMoeShape) -> Plan:
    """rope_freqs (the full layers' proportional rope), token_embd (tied),
    each layer in the converter's order, output_norm. A full layer has no
    attn_v (K = V) and its own head size."""
    e, ff, n = s.n_expert, s.n_ff_exp, s.n_embd
    plan: Plan = [("rope_freqs.weight", (s.head_dim_full // 2,), "rope_freqs"),
                  ("token_embd.weight", (n, s.n_vocab), "mat")]
    for il in range(s.n_layer):
        p = f"blk.{il}."
        full = s.full(il)
        hd = s.head_dim_full if full else s.head_dim
        q, kv = s.n_head * hd, (s.n_head_kv_full if full else s.n_head_kv) * hd
        plan += [
            (p + "ffn_down_exps.weight", (ff, n, e), "mat"),
            (p + "ffn_gate_up_exps.weight", (n, 2 * ff, e), "mat"),
            (p + "attn_norm.weight", (n,), "norm"),
            (p + "layer_output_scale.weight", (1,), "norm"),
            (p + "ffn_down.weight", (s.n_ff, n), "mat"),
            (p + "ffn_gate.weight", (n, s.n_ff), "mat"),
            (p + "ffn_up.weight", (n, s.n_ff), "mat"),
            (p + "post_attention_norm.weight", (n,), "norm"),
            (p + "post_ffw_norm.weight", (n,), "norm"),
            (p + "post_ffw_norm_1.weight", (n,), "norm"),
            (p + "post_ffw_norm_2.weight", (n,), "norm"),
            (p + "ffn_norm.weight", (n,), "norm"),
            (p + "pre_ffw_norm_2.weight", (n,), "norm"),
            (p + "ffn_down_exps.scale", (e,), "norm"),
            (p + "ffn_gate_inp.weight", (n, e), "router"),
            (p + "ffn_gate_inp.scale", (n,), "norm"),
            (p + "attn_k_norm.weight", (hd,), "norm"),
            (p + "attn_k.weight", (n, kv), "mat"),
            (p + "attn_output.weight", (q, n), "mat"),
            (p + "attn_q_norm.weight", (hd,), "norm"),
            (p + "attn_q.weight", (n, q), "mat"),
        ] + ([] if full else [(p + "attn_v.weight", (n, kv), "mat")])
    return plan + [("output_norm.weight", (n,), "norm")]


def tensor_plan(s: SwaMoeShape) -> Plan:
    return gptoss_plan(s) if s.arch == "gpt-oss" else gemma4_plan(s)


def rope_freqs(s: SwaMoeShape) -> list[float]:
    """Gemma 4's full layers' rope frequency factors: 1 for the rotated
    pairs, 1e30 (no rotation) for the rest (the converter's
    generate_extra_tensors)."""
    n_rot = int(s.head_dim_full * s.rope_partial_full / 2)
    return [1.0] * n_rot + [1e30] * (s.head_dim_full // 2 - n_rot)


def add_keys(w, s: SwaMoeShape, file_type: int) -> None:
    """The keys the converter writes for the shape's arch, in its order
    (tokenizer keys aside). w: a gguf.GGUFWriter."""
    import gguf
    w.add_block_count(s.n_layer)
    w.add_context_length(s.n_ctx)
    w.add_embedding_length(s.n_embd)
    if s.arch == "gpt-oss":
        factor, orig, fast, slow = s.yarn
        w.add_feed_forward_length(s.n_ff_exp)
        w.add_head_count(s.n_head)
        w.add_head_count_kv(s.n_head_kv)
        w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        w.add_rope_scaling_factor(factor)
        w.add_rope_scaling_orig_ctx_len(orig)
        w.add_rope_scaling_yarn_beta_fast(fast)
        w.add_rope_scaling_yarn_beta_slow(slow)
        w.add_rope_freq_base(s.rope_base)
        w.add_layer_norm_rms_eps(s.norm_eps)
        w.add_expert_count(s.n_expert)
        w.add_expert_used_count(s.n_expert_used)
        w.add_key_length(s.head_dim)
        w.add_value_length(s.head_dim)
        w.add_file_type(file_type)
        w.add_sliding_window(s.n_swa)
        w.add_expert_feed_forward_length(s.n_ff_exp)
    else:
        w.add_feed_forward_length(s.n_ff)
        w.add_head_count(s.n_head)
        w.add_head_count_kv([s.n_head_kv_full if s.full(il) else s.n_head_kv for il in range(s.n_layer)])
        w.add_rope_freq_base(s.rope_base)
        w.add_rope_freq_base_swa(s.rope_base_swa)
        w.add_layer_norm_rms_eps(s.norm_eps)
        w.add_expert_count(s.n_expert)
        w.add_expert_used_count(s.n_expert_used)
        w.add_key_length(s.head_dim_full)
        w.add_value_length(s.head_dim_full)
        w.add_file_type(file_type)
        w.add_final_logit_softcapping(s.softcap)
        w.add_sliding_window(s.n_swa)
        w.add_shared_kv_layers(0)
        w.add_embedding_length_per_layer_input(0)
        w.add_sliding_window_pattern([not s.full(il) for il in range(s.n_layer)])
        w.add_key_length_swa(s.head_dim)
        w.add_value_length_swa(s.head_dim)
        w.add_expert_feed_forward_length(s.n_ff_exp)
        w.add_rope_dimension_count(s.head_dim_full)
        w.add_rope_dimension_count_swa(s.head_dim)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
