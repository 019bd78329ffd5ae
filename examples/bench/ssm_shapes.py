"""make-random-gguf.py's Mamba-2 hybrid and LFM2 shapes: their tensor plans
and GGUF keys, as llama.cpp's converter writes them for the real checkpoints
(conversion/nemotron.py, granite.py, mamba.py, lfm2.py; checked against the
files it wrote for the tiny fixtures of tests/models/tiny: the same keys and
tensor names, shapes and order).

A plan is a list of (name, ne, kind): ne in ggml's order (ne0 = the row
length), kind as make-random-gguf.py's F32_KINDS or "mat" (a matrix, or a
stack of experts' matrices, in the file's type). F32, as llama-quantize
leaves them: norms, the router, ssm_a, ssm_d, ssm_dt.bias, ssm_norm, the conv
taps and biases, the router's expert bias.

Shapes (the real models' dims; "pattern" = the layers kept, one letter each:
M Mamba-2, * attention, E mixture of experts, C LFM2's gated short conv,
A LFM2's attention):
    nemotronh-30b-a3b  arch nemotron_h_moe, NVIDIA-Nemotron-3-Nano-30B-A3B:
        layers 2-6 of its 52 ("MEM*E"; the model's pattern is
        MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME, 23 M, 23 E, 6 *),
        n_embd 2688; Mamba-2 64 heads of 64 (d_inner 4096), state 128,
        8 groups, conv kernel 4 with bias, D, grouped norm; attention 32
        heads / 2 kv heads of 128, no rope; 128 relu^2 experts of 1856,
        6 used (sigmoid router with expert bias, weights normalized, scale
        2.5, 1 group), a shared relu^2 expert of 3712, no latent
        projections (moe_latent_size: none in Nano); vocab 131072,
        separate output.weight, rms eps 1e-5. n_embd 2688 and the experts'
        1856 / 3712 are not multiples of 256: at Q4_K those matrices fall
        back to Q5_0 as llama.cpp's quantizer does (only ssm_out and
        attn_output, 4096 wide, stay Q4_K).
    granite4-h-tiny    arch granitehybrid, IBM Granite-4.0-H-Tiny: layers
        0-9 of its 40 ("MMMMM*MMMM": attention at 5, 15, 25, 35 in the
        model), n_embd 1536; Mamba-2 48 heads of 64 (d_inner 3072), state
        128, 1 group, conv kernel 4 with bias; attention 12 heads / 4 kv
        heads of 128, no rope; every layer: 64 SwiGLU experts of 512, 6 used
        (softmax router), a shared SwiGLU MLP of 1024; vocab 100352, tied
        output; muP scales (embedding 12, attention 1/128, residual 0.22,
        logits 6) as GGUF keys (they cost nothing at run time).
    lfm2-2.6b          arch lfm2, LiquidAI LFM2-2.6B, all 30 layers: 22
        gated short-conv layers (kernel 3) and 8 attention layers (32 heads /
        8 kv heads of 64, q/k norms); assumed at 2, 6, 10, 14, 18, 21, 24, 27
        (where they sit does not change the speed); n_embd 2048, SwiGLU
        n_ff 10752 (llama.cpp's size for 2.6B), vocab 65536, tied output,
        rope base 1000000.
"""
from __future__ import annotations

from dataclasses import dataclass

import gguf

Plan = list[tuple[str, tuple[int, ...], str]]


@dataclass(frozen=True)
class SsmShape:
    name: str
    label: str
    arch: str           # nemotron_h_moe, granitehybrid, lfm2
    pattern: str        # one letter per layer (module docstring)
    n_embd: int
    n_vocab: int
    n_head: int
    n_head_kv: int
    head_dim: int
    norm_eps: float
    tied: bool
    # Mamba-2 mixer
    ssm_heads: int = 0       # H (ssm.time_step_rank)
    ssm_head_dim: int = 0    # P (ssm.inner_size = H P)
    ssm_state: int = 0       # N (ssm.state_size)
    ssm_groups: int = 1      # G (ssm.group_count)
    ssm_conv: int = 4        # conv kernel K
    # FFN / experts
    n_ff: int = 0            # a dense MLP's width (LFM2) or Granite's experts' (feed_forward_length)
    n_expert: int = 0
    n_expert_used: int = 0
    n_ff_exp: int = 0        # NemotronH's experts' width
    n_ff_shexp: int = 0      # the shared expert's width
    n_ctx: int = 1 << 20     # the converter's 2**20 for the rope-less Mamba-2 hybrids
    rope_base: float = 10000.0
    scales: tuple[float, ...] = ()  # Granite's muP: attention, embedding, residual, logit

    @property
    def n_layer(self) -> int:
        return len(self.pattern)

    @property
    def d_inner(self) -> int:
        return self.ssm_heads * self.ssm_head_dim

    @property
    def conv_channels(self) -> int:
        return self.d_inner + 2 * self.ssm_groups * self.ssm_state

    def has_attention(self, il: int) -> bool:
        return self.pattern[il] in "*A"


SHAPES: dict[str, SsmShape] = {s.name: s for s in (
    SsmShape("nemotronh-30b-a3b", "30B-A3B", "nemotron_h_moe", "MEM*E", 2688, 131072, 32, 2, 128, 1e-5,
             tied=False, ssm_heads=64, ssm_head_dim=64, ssm_state=128, ssm_groups=8, n_expert=128,
             n_expert_used=6, n_ff_exp=1856, n_ff_shexp=3712),
    SsmShape("granite4-h-tiny", "7B-A1B", "granitehybrid", "MMMMM*MMMM", 1536, 100352, 12, 4, 128, 1e-5,
             tied=True, ssm_heads=48, ssm_head_dim=64, ssm_state=128, ssm_groups=1, n_ff=512, n_expert=64,
             n_expert_used=6, n_ff_shexp=1024, scales=(0.0078125, 12.0, 0.22, 6.0)),
    SsmShape("lfm2-2.6b", "2.6B", "lfm2", "".join("A" if i in (2, 6, 10, 14, 18, 21, 24, 27) else "C"
                                                    for i in range(30)),
             2048, 65536, 32, 8, 64, 1e-5, tied=True, n_ff=10752, n_ctx=128000, rope_base=1000000.0),
)}


def mamba2_plan(s: SsmShape, p: str) -> Plan:
    """A Mamba-2 mixer (llama.cpp's converter: A_log -> ssm_a = -exp(A_log)
    as (1, H), D as (1, H), the conv squeezed to (K, C), the norm as (d_inner
    / G, G)); in_proj packs z, x B C and dt: 2 d_inner + 2 G N + H rows."""
    h, c = s.ssm_heads, s.conv_channels
    return [
        (p + "ssm_a", (1, h), "ssm_a"),
        (p + "ssm_d", (1, h), "norm"),
        (p + "ssm_conv1d.bias", (c,), "bias"),
        (p + "ssm_conv1d.weight", (s.ssm_conv, c), "conv"),
        (p + "ssm_dt.bias", (h,), "ssm_dt"),
        (p + "ssm_in.weight", (s.n_embd, 2 * s.d_inner + 2 * s.ssm_groups * s.ssm_state + h), "mat"),
        (p + "ssm_norm.weight", (s.d_inner // s.ssm_groups, s.ssm_groups), "norm"),
        (p + "ssm_out.weight", (s.d_inner, s.n_embd), "mat"),
    ]


def attention_plan(s: SsmShape, p: str, qk_norm: bool = False) -> Plan:
    q, kv = s.n_head * s.head_dim, s.n_head_kv * s.head_dim
    norm = lambda n: [(p + f"attn_{n}_norm.weight", (s.head_dim,), "norm")] if qk_norm else []  # noqa: E731
    return (norm("k") + [(p + "attn_k.weight", (s.n_embd, kv), "mat"),
                         (p + "attn_output.weight", (q, s.n_embd), "mat")]
            + norm("q") + [(p + "attn_q.weight", (s.n_embd, q), "mat"),
                           (p + "attn_v.weight", (s.n_embd, kv), "mat")])


def nemotron_layer(s: SsmShape, p: str, kind: str) -> Plan:
    if kind == "M":
        plan = mamba2_plan(s, p)
    elif kind == "*":
        plan = attention_plan(s, p)
    else:  # E: relu^2 experts (up and down only), router with its bias, shared expert
        e, ff, sh = s.n_expert, s.n_ff_exp, s.n_ff_shexp
        plan = [
            (p + "ffn_down_exps.weight", (ff, s.n_embd, e), "mat"),
            (p + "ffn_up_exps.weight", (s.n_embd, ff, e), "mat"),
            (p + "exp_probs_b.bias", (e,), "bias"),
            (p + "ffn_gate_inp.weight", (s.n_embd, e), "router"),
            (p + "ffn_down_shexp.weight", (sh, s.n_embd), "mat"),
            (p + "ffn_up_shexp.weight", (s.n_embd, sh), "mat"),
        ]
    return plan + [(p + "attn_norm.weight", (s.n_embd,), "norm")]


def granite_layer(s: SsmShape, p: str, kind: str) -> Plan:
    e, ff, sh = s.n_expert, s.n_ff, s.n_ff_shexp
    plan = [
        (p + "ffn_gate_exps.weight", (s.n_embd, ff, e), "mat"),
        (p + "ffn_up_exps.weight", (s.n_embd, ff, e), "mat"),
        (p + "ffn_down_exps.weight", (ff, s.n_embd, e), "mat"),
        (p + "ffn_gate_inp.weight", (s.n_embd, e), "router"),
        (p + "attn_norm.weight", (s.n_embd,), "norm"),
    ]
    if kind == "M":
        plan += mamba2_plan(s, p) + [(p + "ffn_norm.weight", (s.n_embd,), "norm")]
    else:
        plan += [(p + "ffn_norm.weight", (s.n_embd,), "norm")] + attention_plan(s, p)
    return plan + [
        (p + "ffn_gate_shexp.weight", (s.n_embd, sh), "mat"),
        (p + "ffn_up_shexp.weight", (s.n_embd, sh), "mat"),
        (p + "ffn_down_shexp.weight", (sh, s.n_embd), "mat"),
    ]


def lfm2_layer(s: SsmShape, p: str, kind: str) -> Plan:
    plan: Plan = []
    if kind == "C":  # gated short conv: in_proj [B | C | x], depthwise conv over the n_embd channels
        plan += [
            (p + "shortconv.conv.weight", (3, s.n_embd), "conv"),
            (p + "shortconv.in_proj.weight", (s.n_embd, 3 * s.n_embd), "mat"),
            (p + "shortconv.out_proj.weight", (s.n_embd, s.n_embd), "mat"),
        ]
    plan += [
        (p + "ffn_gate.weight", (s.n_embd, s.n_ff), "mat"),
        (p + "ffn_down.weight", (s.n_ff, s.n_embd), "mat"),
        (p + "ffn_up.weight", (s.n_embd, s.n_ff), "mat"),
        (p + "ffn_norm.weight", (s.n_embd,), "norm"),
        (p + "attn_norm.weight", (s.n_embd,), "norm"),
    ]
    return plan + (attention_plan(s, p, qk_norm=True) if kind == "A" else [])


LAYER = {"nemotron_h_moe": nemotron_layer, "granitehybrid": granite_layer, "lfm2": lfm2_layer}


def tensor_plan(s: SsmShape) -> Plan:
    emb = ("token_embd.weight", (s.n_embd, s.n_vocab), "mat")
    out = [] if s.tied else [("output.weight", (s.n_embd, s.n_vocab), "mat")]
    if s.arch == "lfm2":  # its output norm is token_embd_norm, written after the embedding
        plan = out + [emb, ("token_embd_norm.weight", (s.n_embd,), "norm")]
    else:
        plan = [emb]
    for il, kind in enumerate(s.pattern):
        plan += LAYER[s.arch](s, f"blk.{il}.", kind)
    if s.arch != "lfm2":
        plan += [("output_norm.weight", (s.n_embd,), "norm")] + out
    return plan


def add_keys(w: gguf.GGUFWriter, s: SsmShape, file_type: int) -> None:
    """The keys the converter writes for the shape's arch, in its order
    (tokenizer keys aside)."""
    kv_heads = [s.n_head_kv if s.has_attention(il) else 0 for il in range(s.n_layer)]
    w.add_block_count(s.n_layer)
    w.add_context_length(s.n_ctx)
    w.add_embedding_length(s.n_embd)
    if s.arch == "nemotron_h_moe":  # per layer: the experts' width in MoE layers, else 0
        w.add_feed_forward_length([s.n_ff_exp if k == "E" else 0 for k in s.pattern])
    else:
        w.add_feed_forward_length(s.n_ff)
    w.add_head_count(s.n_head)
    w.add_head_count_kv(kv_heads)
    if s.arch == "nemotron_h_moe":
        w.add_layer_norm_eps(s.norm_eps)
        w.add_expert_count(s.n_expert)
        w.add_expert_used_count(s.n_expert_used)
        w.add_expert_group_count(1)
        w.add_expert_group_used_count(1)
    else:
        w.add_rope_freq_base(s.rope_base)
        w.add_layer_norm_rms_eps(s.norm_eps)
        if s.n_expert:
            w.add_expert_count(s.n_expert)
            w.add_expert_used_count(s.n_expert_used)
    w.add_file_type(file_type)
    w.add_vocab_size(s.n_vocab)
    if s.arch == "lfm2":
        w.add_shortconv_l_cache(3)
        w.add_quantization_version(gguf.GGML_QUANT_VERSION)
        return
    w.add_rope_dimension_count(s.head_dim)
    if s.scales:
        attn, emb, res, logit = s.scales
        w.add_attention_scale(attn)
        w.add_embedding_scale(emb)
        w.add_residual_scale(res)
        w.add_logit_scale(logit)
        w.add_expert_shared_feed_forward_length(s.n_ff_shexp)
    w.add_ssm_conv_kernel(s.ssm_conv)
    w.add_ssm_state_size(s.ssm_state)
    w.add_ssm_group_count(s.ssm_groups)
    w.add_ssm_inner_size(s.d_inner)
    w.add_ssm_time_step_rank(s.ssm_heads)
    w.add_rope_scaling_finetuned(False)
    if s.arch == "nemotron_h_moe":
        w.add_key_length(s.head_dim)
        w.add_value_length(s.head_dim)
        w.add_expert_feed_forward_length(s.n_ff_exp)
        w.add_expert_shared_feed_forward_length(s.n_ff_shexp)
        w.add_expert_shared_count(1)
        w.add_expert_weights_norm(True)
        w.add_expert_weights_scale(2.5)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
