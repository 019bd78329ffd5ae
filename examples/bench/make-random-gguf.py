#!/usr/bin/env python3
"""Random-weight GGUFs in real model shapes (Llama, Qwen2, Qwen3, Qwen3-MoE, OLMoE, Qwen3.5, Qwen3.6-MoE, NemotronH, Granite 4.0-H, LFM2, gpt-oss, Gemma 4), for throughput benchmarks.

Prefill and decode speed depend on the shapes and the weight types, not on the
values, so these files stand in for models no hub can give us here. They are
written with the PyPI `gguf` package and load in both vt and llama.cpp.

Shapes (hyperparameters of the real models):
    smollm2-135m  n_embd 576, 30 layers, 9 heads / 3 kv heads, n_ff 1536,
                  vocab 49152, ctx 8192, rope base 100000, tied output
    llama-3.2-1b  n_embd 2048, 16 layers, 32 heads / 8 kv heads, n_ff 8192,
                  vocab 128256, ctx 131072, rope base 500000, tied output.
                  rope_freqs.weight (Llama 3.1 "llama3" rope scaling factors)
                  is omitted: speed does not depend on it.
    qwen3-0.6b    arch qwen3: n_embd 1024, 28 layers, 16 heads / 8 kv heads of
                  128 (not n_embd / n_head), q/k norms, n_ff 3072, vocab 151936,
                  ctx 40960, rope base 1000000, tied output
    qwen2.5-1.5b  arch qwen2: n_embd 1536, 28 layers, 12 heads / 2 kv heads of
                  128, q/k/v biases, n_ff 8960, vocab 151936, ctx 32768, rope
                  base 1000000, tied output
    qwen3moe-a3b  arch qwen3moe, Qwen3-30B-A3B's layer with 4 of its 48
                  layers: n_embd 2048, 32 heads / 4 kv heads of 128, q/k
                  norms per head, 128 experts of n_ff 768, 8 used (the
                  router's weights renormalized), feed_forward_length 6144
                  as the real file, vocab 151936, ctx 40960, rope base
                  1000000, separate output.weight
    olmoe-1b-7b   arch olmoe, OLMoE-1B-7B's layer with 8 of its 16 layers:
                  n_embd 2048, 16 heads of 128 (no GQA), q/k norms over the
                  whole projection, 64 experts of n_ff 1024, 8 used, vocab
                  50304, ctx 4096, rope base 10000, separate output.weight
    qwen35-2b     arch qwen35, Qwen3.5-2B with all its 24 layers: n_embd 2048,
                  18 Gated DeltaNet layers (16 key heads and 16 value heads
                  of 128, conv kernel 4) and every 4th layer gated full
                  attention (8 heads / 2 kv heads of 256, q/k norms, attn_q
                  holding query and gate per head, rope on 64 dims with
                  M-RoPE sections [11, 11, 10, 0]), n_ff 6144, vocab 248320,
                  ctx 262144, rope base 10000000, tied output
    qwen35moe-a3b arch qwen35moe, Qwen3.6-35B-A3B's layer with 3 of its 40
                  layers: 2 Gated DeltaNet layers (16 key heads, 32 value
                  heads, of 128) and 1 gated attention layer (16 heads / 2 kv
                  heads of 256), 256 experts of n_ff 512, 8 used, a shared
                  expert of 512 with its sigmoid gate, vocab 248320, ctx
                  262144, rope as qwen35-2b, separate output.weight; no
                  feed_forward_length, as the real file (Qwen3.5-MoE's config
                  has no intermediate_size)
    nemotronh-30b-a3b, granite4-h-tiny, lfm2-2.6b
                  the Mamba-2 hybrids (5 of Nemotron-3-Nano-30B-A3B's layers,
                  10 of Granite-4.0-H-Tiny's) and LFM2-2.6B (all 30 layers):
                  their dims, tensors and keys are in ssm_shapes.py, beside
                  this file (Q8_0: 3.6, 2.0, 2.7 GB; Q4_K: 2.3, 1.0, 1.5 GB;
                  NemotronH's 2688-wide rows fall back to Q5_0 at Q4_K)
    gptoss-20b, gemma4-26b-a4b
                  4 of gpt-oss-20b's layers (MXFP4 experts, sinks, window
                  128) and 4 of Gemma-4-26B-A4B's (3 sliding + 1 full with
                  K = V, dense MLP beside 128 experts): their dims, tensors
                  and keys are in swa_moe_shapes.py, beside this file
                  (gptoss-20b BF16 4.2 GB, Q8_0 3.0 GB: its experts are
                  MXFP4 in both, the type names the other matrices;
                  gemma4-26b-a4b Q8_0 4.3 GB, Q4_K 2.4 GB)
The MoE shapes keep fewer layers than their models so that a file fits this
kind of machine's memory (Q8_0: 3.3, 3.8 and 3.8 GB; Q4_K: 1.8, 2.0 and 2.0
GB); a layer is the real one, so prefill and decode per layer are as in the
model, but the output matrix weighs more in the total than in the real model
(qwen35moe-a3b: the 248320-row output matrix is 71-72% of the bytes a decode
step reads, where the real model's 40 layers make it 15-16%). qwen35moe-a3b keeps
both kinds of layer: its 3 layers are 2 recurrent + 1 attention
(full_attention_interval 3; the model's ratio is 3 + 1), since 4 layers would
make the Q8_0 file 4.7 GB. Each MoE layer has the router
blk.N.ffn_gate_inp.weight (F32, as llama-quantize leaves it) and the experts
stacked as llama.cpp's converter writes them: blk.N.ffn_{gate,up}_exps.weight
(n_embd, n_ff, n_expert) and blk.N.ffn_down_exps.weight (n_ff, n_embd,
n_expert). They are written only when named (--shape; compare-llama-bench.py
--moe, --hybrid), not by default.

Hybrid files (qwen35-2b, qwen35moe-a3b) hold the tensors and keys llama.cpp's
converter writes for Qwen3_5ForCausalLM / Qwen3_5MoeForCausalLM, converted
with --no-mtp (the layout vt's lib/models/qwen-hybrid.cpp and
gated-deltanet.cpp load): per Gated
DeltaNet layer attn_qkv (n_embd, 2 nk dk + nv dv), attn_gate, ssm_alpha,
ssm_beta, ssm_out (matrices, in the file's type as llama-quantize --pure
leaves them), ssm_conv1d (4, channels), ssm_a, ssm_dt.bias, ssm_norm and the
norms (F32, never quantized); per attention layer attn_q (n_embd, 2 q),
attn_k, attn_v, attn_output and attn_{q,k}_norm; post_attention_norm; the
keys ssm.{conv_kernel,state_size,group_count,time_step_rank,inner_size},
attention.recurrent_layers, full_attention_interval, rope.dimension_sections
and, for qwen35moe, expert_shared_feed_forward_length and
ffn_{gate,up,down}_shexp + ffn_gate_inp_shexp (n_embd, 1). The F32 values
are realistic: ssm_a = -A with A in 1..16, ssm_dt.bias = softplus^-1 of a dt
in 0.001..0.1 (transformers' initialization), conv taps uniform in +-0.5.
(Unsloth's published files keep ssm_alpha/ssm_beta in F32 too, 0.25 MB a
layer; here they are in the file's type, as llama-quantize writes them.)
Types: Q4_0 Q4_1 Q8_0 Q4_K Q6_K F16 BF16 (norm weights are always F32).
Every matrix row of the hybrid shapes is a multiple of 256, so they have no
K-quant fallback.

Tensor types ("pure", like `llama-quantize --pure`): every matrix, the token
embedding and the experts included, is in the named type, so a file measures that type's
kernels. (llama.cpp's default recipe would instead store the tied
embedding/output as Q6_K, or Q8_0 when its rows are not a multiple of 256;
the real SmolLM2 Q4_1 file does that, with a Q8_0 token_embd.) The one
exception is llama.cpp's own: a K-quant needs rows that are a multiple of 256,
so in the smollm2-135m shape (576-wide rows) every tensor except ffn_down
falls back as llama.cpp does: Q4_K -> Q5_0, Q6_K -> Q8_0. The tool prints the
resulting type mix.

Values: quantized blocks are random bytes with valid, realistic scales (so the
dequantized weights have a standard deviation near 0.02, like a trained
model's); F16/BF16 are random normals with std 0.02. Quantizing real normals
with gguf.quants.quantize would take minutes for the 1B shape; random blocks
take seconds and the kernels cannot tell the difference.

Tokenizer: byte-level BPE ("gpt2" model, "gpt-2" pre-tokenizer): the 256 GPT-2
byte symbols, a few merges and their tokens, <|begin_of_text|> and
<|end_of_text|> (control, bos/eos), then unique filler tokens up to the vocab
size.

Files: <model cache>/random/<shape>-<type>.gguf (model cache = vt_models's,
${VT_MODEL_DIR:-~/.cache/vt/models}); an existing file is kept unless --force.

Usage (from the repository root, with the project venv that has `gguf`):
    .venv/bin/python examples/bench/make-random-gguf.py                 # all shapes x types
    .venv/bin/python examples/bench/make-random-gguf.py --shape smollm2-135m --type Q4_0
    .venv/bin/python examples/bench/make-random-gguf.py --shape qwen3moe-a3b --shape olmoe-1b-7b --type Q4_K --type Q8_0
    .venv/bin/python examples/bench/make-random-gguf.py --shape qwen35-2b --shape qwen35moe-a3b --type Q4_K --type Q8_0
    .venv/bin/python examples/bench/make-random-gguf.py --shape nemotronh-30b-a3b --shape granite4-h-tiny --type Q4_K
    .venv/bin/python examples/bench/make-random-gguf.py --shape gptoss-20b --type BF16 --type Q8_0
    .venv/bin/python examples/bench/make-random-gguf.py --list           # paths, present or not
    .venv/bin/python examples/bench/make-random-gguf.py --check FILE     # dequantized stats

compare-llama-bench.py --matrix runs this file as a program (it prints one
path per line, shapes outer, types inner) with an interpreter that has gguf.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

try:
    import numpy as np
    import gguf
    from gguf import GGMLQuantizationType as QT
except ImportError as e:  # pragma: no cover
    sys.exit(f"make-random-gguf: {e}; run with the project venv (.venv/bin/python) or pip install gguf")

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "examples" / "models"))
import vt_models  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ssm_shapes  # noqa: E402  (the Mamba-2 hybrids' and LFM2's plans and keys)
import swa_moe_shapes  # noqa: E402  (gpt-oss's and Gemma 4's plans and keys)

STD = 0.02  # weight standard deviation, like a trained transformer's matrices


@dataclass(frozen=True)
class Shape:
    name: str
    label: str
    n_embd: int
    n_layer: int
    n_head: int
    n_head_kv: int
    n_ff: int
    n_vocab: int
    n_ctx: int
    rope_base: float
    norm_eps: float
    arch: str = "llama"
    head_dim: int = 0        # 0: n_embd / n_head
    qk_norm: bool = False    # attn_{q,k}_norm.weight (Qwen3)
    qkv_bias: bool = False   # attn_{q,k,v}.bias (Qwen2)
    qk_norm_full: bool = False  # q/k norms over the whole projection (OLMoE), not per head
    tied: bool = True        # token_embd.weight doubles as the output matrix
    n_expert: int = 0        # mixture of experts: experts per layer (0: a dense FFN)
    n_expert_used: int = 0
    n_ff_exp: int = 0        # an expert's FFN width
    # Hybrid (Qwen3.5 / Qwen3.6, arch qwen35 / qwen35moe): Gated DeltaNet layers
    # with every full_attn_interval-th layer gated full attention.
    ssm_nk: int = 0          # linear attention: key heads (ssm.group_count; 0: not hybrid)
    ssm_nv: int = 0          # value heads (ssm.time_step_rank)
    ssm_dk: int = 0          # key head size (ssm.state_size)
    ssm_dv: int = 0          # value head size (ssm.inner_size / ssm.time_step_rank)
    ssm_conv: int = 4        # causal conv kernel (ssm.conv_kernel)
    full_attn_interval: int = 4
    n_rot: int = 0           # rope.dimension_count (0: the head size)
    rope_sections: tuple[int, ...] = ()  # rope.dimension_sections (Qwen3.5's M-RoPE)
    n_ff_shexp: int = 0      # the shared expert's FFN width (Qwen3.5-MoE)

    @property
    def hybrid(self) -> bool:
        return self.ssm_nk > 0

    def recurrent(self, il: int) -> bool:
        return self.hybrid and (il + 1) % self.full_attn_interval != 0

    @property
    def hd(self) -> int:
        return self.head_dim or self.n_embd // self.n_head


SHAPES: dict[str, Shape] = {s.name: s for s in (
    Shape("smollm2-135m", "135M", 576, 30, 9, 3, 1536, 49152, 8192, 100000.0, 1e-5),
    Shape("llama-3.2-1b", "1B", 2048, 16, 32, 8, 8192, 128256, 131072, 500000.0, 1e-5),
    Shape("qwen3-0.6b", "0.6B", 1024, 28, 16, 8, 3072, 151936, 40960, 1000000.0, 1e-6, arch="qwen3",
          head_dim=128, qk_norm=True),
    Shape("qwen2.5-1.5b", "1.5B", 1536, 28, 12, 2, 8960, 151936, 32768, 1000000.0, 1e-6, arch="qwen2",
          qkv_bias=True),
    Shape("qwen3moe-a3b", "30B-A3B", 2048, 4, 32, 4, 6144, 151936, 40960, 1000000.0, 1e-6, arch="qwen3moe",
          head_dim=128, qk_norm=True, tied=False, n_expert=128, n_expert_used=8, n_ff_exp=768),
    Shape("olmoe-1b-7b", "1B-7B", 2048, 8, 16, 16, 1024, 50304, 4096, 10000.0, 1e-5, arch="olmoe",
          qk_norm=True, qk_norm_full=True, tied=False, n_expert=64, n_expert_used=8, n_ff_exp=1024),
    Shape("qwen35-2b", "2B", 2048, 24, 8, 2, 6144, 248320, 262144, 10000000.0, 1e-6, arch="qwen35",
          head_dim=256, qk_norm=True, ssm_nk=16, ssm_nv=16, ssm_dk=128, ssm_dv=128, n_rot=64,
          rope_sections=(11, 11, 10, 0)),
    Shape("qwen35moe-a3b", "35B-A3B", 2048, 3, 16, 2, 512, 248320, 262144, 10000000.0, 1e-6, arch="qwen35moe",
          head_dim=256, qk_norm=True, tied=False, n_expert=256, n_expert_used=8, n_ff_exp=512,
          n_ff_shexp=512, ssm_nk=16, ssm_nv=32, ssm_dk=128, ssm_dv=128, full_attn_interval=3, n_rot=64,
          rope_sections=(11, 11, 10, 0)),
)}
DENSE_SHAPES = [name for name, s in SHAPES.items() if not s.n_expert and not s.hybrid]

TYPES: dict[str, QT] = {
    "Q4_0": QT.Q4_0, "Q4_1": QT.Q4_1, "Q8_0": QT.Q8_0, "Q4_K": QT.Q4_K,
    "Q6_K": QT.Q6_K, "F16": QT.F16, "BF16": QT.BF16, "IQ4_NL": QT.IQ4_NL, "IQ4_XS": QT.IQ4_XS,
}
FILE_TYPE = {
    "Q4_0": gguf.LlamaFileType.MOSTLY_Q4_0, "Q4_1": gguf.LlamaFileType.MOSTLY_Q4_1,
    "Q8_0": gguf.LlamaFileType.MOSTLY_Q8_0, "Q4_K": gguf.LlamaFileType.MOSTLY_Q4_K_S,
    "Q6_K": gguf.LlamaFileType.MOSTLY_Q6_K, "F16": gguf.LlamaFileType.MOSTLY_F16,
    "BF16": gguf.LlamaFileType.MOSTLY_BF16, "IQ4_NL": gguf.LlamaFileType.MOSTLY_IQ4_NL,
    "IQ4_XS": gguf.LlamaFileType.MOSTLY_IQ4_XS,
}
# The lattice i-quants and the ternary types, and the newest types where this
# gguf package knows them (PyPI gguf 0.19 has NVFP4 and Q1_0, not yet Q2_0).
for _name in ("IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M", "TQ1_0", "TQ2_0",
              "NVFP4", "Q1_0", "Q2_0"):
    if hasattr(QT, _name) and hasattr(gguf.LlamaFileType, "MOSTLY_" + _name):
        TYPES[_name] = getattr(QT, _name)
        FILE_TYPE[_name] = getattr(gguf.LlamaFileType, "MOSTLY_" + _name)
# llama.cpp (llama_tensor_get_type): a K-quant tensor whose rows are not a
# multiple of 256 is stored in this type instead.
K_FALLBACK = {QT.Q4_K: QT.Q5_0, QT.Q6_K: QT.Q8_0, QT.IQ4_XS: QT.IQ4_NL}


def log(msg: str) -> None:
    print(f"make-random-gguf: {msg}", file=sys.stderr, flush=True)


def random_dir() -> Path:
    return vt_models.model_dir() / "random"


def file_path(shape: str, type_name: str) -> Path:
    return random_dir() / f"{shape}-{type_name}.gguf"


def tensor_type(qt: QT, ne0: int) -> QT:
    bs, _ = gguf.GGML_QUANT_SIZES[qt]
    if ne0 % bs != 0:
        if qt not in K_FALLBACK:
            raise ValueError(f"{qt.name} needs rows that are a multiple of {bs}, got {ne0}")
        return K_FALLBACK[qt]
    return qt


def f16_bytes(rng: np.random.Generator, n: int, center: float, spread: float = 0.25) -> np.ndarray:
    """n float16 scales around `center` (+-spread relative), as (n, 2) uint8."""
    v = center * (1.0 + spread * (2.0 * rng.random(n, dtype=np.float32) - 1.0))
    return v.astype(np.float16).view(np.uint8).reshape(n, 2)


def random_blocks(rng: np.random.Generator, qt: QT, rows: int, ne0: int) -> np.ndarray:
    """(rows, bytes per row) uint8: random quants with valid realistic scales."""
    bs, nb = gguf.GGML_QUANT_SIZES[qt]
    n_blocks = rows * (ne0 // bs)
    b = np.frombuffer(rng.bytes(n_blocks * nb), dtype=np.uint8).reshape(n_blocks, nb).copy()
    u4 = 4.61  # std of a uniform 0..15 nibble
    if qt == QT.Q4_0:    # d, qs[16]: w = d * (q - 8)
        b[:, 0:2] = f16_bytes(rng, n_blocks, STD / u4)
    elif qt == QT.Q4_1:  # d, m, qs[16]: w = d * q + m
        d = STD / u4
        b[:, 0:2] = f16_bytes(rng, n_blocks, d)
        b[:, 2:4] = f16_bytes(rng, n_blocks, -7.5 * d)
    elif qt == QT.Q5_0:  # d, qh[4], qs[16]: w = d * (q - 16), q 5 bits
        b[:, 0:2] = f16_bytes(rng, n_blocks, STD / 9.23)
    elif qt == QT.Q8_0:  # d, qs[32] int8: w = d * q
        b[:, 0:2] = f16_bytes(rng, n_blocks, STD / 73.9)
    elif qt == QT.Q4_K:  # d, dmin, scales[12] (6-bit sc/m), qs[128]: w = d*sc*q - dmin*m
        # Sub-block scales and mins in 32..47 (6-bit fields; bit patterns
        # below set every field of the 12-byte packing to 32 + 4 random bits).
        sc = 32 + (np.frombuffer(rng.bytes(n_blocks * 8), dtype=np.uint8).reshape(n_blocks, 8) & 15)
        m = 32 + (np.frombuffer(rng.bytes(n_blocks * 8), dtype=np.uint8).reshape(n_blocks, 8) & 15)
        packed = np.empty((n_blocks, 12), dtype=np.uint8)
        packed[:, 0:4] = (sc[:, 0:4] & 63) | ((sc[:, 4:8] >> 4) << 6)
        packed[:, 4:8] = (m[:, 0:4] & 63) | ((m[:, 4:8] >> 4) << 6)
        packed[:, 8:12] = (sc[:, 4:8] & 15) | ((m[:, 4:8] & 15) << 4)
        d = STD / (40.0 * u4)
        b[:, 0:2] = f16_bytes(rng, n_blocks, d)
        b[:, 2:4] = f16_bytes(rng, n_blocks, 7.5 * d)
        b[:, 4:16] = packed
    elif qt == QT.MXFP4:  # e (e8m0), qs[16] (e2m1 codes): w = 2^(e - 127) * fp4(q)
        # fp4 codes uniform over +-{0, .5, 1, 1.5, 2, 3, 4, 6} have a std of
        # 2.93; e = 119 or 120 (2^-8, 2^-7) gives about 0.011-0.023.
        b[:, 0] = 119 + (np.frombuffer(rng.bytes(n_blocks), dtype=np.uint8) & 1)
    elif qt == QT.Q6_K:  # ql[128], qh[64], scales[16] int8, d: w = d * sc * (q - 32)
        sc = 4 + (np.frombuffer(rng.bytes(n_blocks * 16), dtype=np.uint8).reshape(n_blocks, 16) & 7)
        b[:, 192:208] = sc
        b[:, 208:210] = f16_bytes(rng, n_blocks, STD / (7.5 * 18.5))
    elif qt == QT.IQ4_NL:  # d, qs[16]: w = d * level(q), levels -127..113 (std ~70 uniform)
        b[:, 0:2] = f16_bytes(rng, n_blocks, STD / 70.0)
    elif qt == QT.IQ4_XS:  # d, scales_h, scales_l[4], qs[128]: w = d * (ls - 32) * level(q)
        ls = 36 + (np.frombuffer(rng.bytes(n_blocks * 8), dtype=np.uint8).reshape(n_blocks, 8) & 7)  # 4..11
        b[:, 4:8] = (ls[:, 0::2] & 15) | ((ls[:, 1::2] & 15) << 4)
        h = sum(((ls[:, s].astype(np.uint16) >> 4) & 3) << (2 * s) for s in range(8))
        b[:, 2:4] = h.astype("<u2").view(np.uint8).reshape(n_blocks, 2)
        b[:, 0:2] = f16_bytes(rng, n_blocks, STD / (7.5 * 70.0))
    elif qt.name == "NVFP4":  # d[4] (UE4M3, halved in ggml's reading), qs[32] (e2m1 codes, doubled values std ~5.9)
        # STD / 5.9 ~ 0.0034 is a UE4M3 subnormal: bytes 3..4 (3..4 * 2^-10).
        b[:, 0:4] = 3 + (np.frombuffer(rng.bytes(n_blocks * 4), dtype=np.uint8).reshape(n_blocks, 4) & 1)
    elif qt.name in ("IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S"):
        # d first, then grid indices, signs and sub-block scales: any bits
        # are valid (the grids' values are 1..62 times scales up to 31).
        b[:, 0:2] = f16_bytes(rng, n_blocks, STD / 400.0)
    elif qt.name == "IQ1_M":  # qs[32], qh[16], scales u16[4]: d is the four words' top nibbles
        d = f16_bytes(rng, n_blocks, STD / 100.0).view("<u2").reshape(n_blocks).astype(np.uint16)
        sc = b[:, 48:56].copy().view("<u2").reshape(n_blocks, 4) & 0x0FFF
        for i in range(4):
            sc[:, i] |= ((d >> (4 * i)) & 0xF) << 12
        b[:, 48:56] = sc.astype("<u2").view(np.uint8).reshape(n_blocks, 8)
    elif qt.name in ("TQ1_0", "TQ2_0"):  # codes, then d: w = (t - 1) * d
        b[:, nb - 2:nb] = f16_bytes(rng, n_blocks, STD)
    elif qt.name == "Q1_0":  # d, qs[16] sign bits: w = +-d
        b[:, 0:2] = f16_bytes(rng, n_blocks, STD)
    elif qt.name == "Q2_0":  # d, qs[16] 2-bit: w = (q - 1) * d (std ~1.1)
        b[:, 0:2] = f16_bytes(rng, n_blocks, STD / 1.1)
    else:
        raise ValueError(f"no random block writer for {qt.name}")
    return b.reshape(rows, (ne0 // bs) * nb)


def random_float(rng: np.random.Generator, qt: QT, rows: int, ne0: int) -> np.ndarray:
    """F16, or BF16 as (rows, 2*ne0) uint8; drawn a few million values at a
    time, so that a 201088 x 2880 BF16 matrix (gpt-oss's output) needs its
    1.2 GB result and little more."""
    out = np.empty((rows, ne0), dtype=np.float16 if qt == QT.F16 else np.uint16)
    step = max(1, (1 << 22) // ne0)
    for r0 in range(0, rows, step):
        x = rng.standard_normal((min(step, rows - r0), ne0), dtype=np.float32)
        x *= STD
        if qt == QT.F16:
            out[r0:r0 + len(x)] = x
            continue
        # BF16: round to nearest even.
        u = x.view(np.uint32)
        u += 0x7FFF + ((u >> 16) & 1)
        out[r0:r0 + len(x)] = u >> 16
    return out if qt == QT.F16 else out.view(np.uint8).reshape(rows, 2 * ne0)


# Tensor kinds: "mat" a matrix (or a stack of experts' matrices) in the file's
# type; every other kind is F32: "norm" (a 1-D norm weight or bias, near 1),
# "router" (an MoE router or the shared expert's gate, small normals),
# "ssm_a" (-exp(A_log), A in 1..16 as transformers initializes it),
# "ssm_dt" (dt_bias: softplus^-1 of a dt in 0.001..0.1), "conv" (the
# depthwise causal conv's taps, uniform +-0.5), "bias" (a conv bias or an
# MoE router's expert bias, small normals), "rope_freqs" (Gemma 4's rope
# frequency factors, swa_moe_shapes.rope_freqs). "mxfp4": a stack of experts
# always in MXFP4, whatever the file's type (gpt-oss).
F32_KINDS = ("norm", "router", "ssm_a", "ssm_dt", "conv", "bias", "rope_freqs")


def tensor_plan(s: Shape) -> list[tuple[str, tuple[int, ...], str]]:
    """(name, ne, kind) in llama.cpp's order; ne is ggml's (ne0 = the row
    length, ...); kind: see F32_KINDS. F32: the 1-D norms and biases, the MoE
    router, and a hybrid's ssm_a, ssm_dt.bias and ssm_conv1d (llama-quantize
    leaves them so); every other tensor is a matrix (or a stack of experts'
    matrices) in the file's type."""
    hd = s.hd
    q, kv = s.n_head * hd, s.n_head_kv * hd
    plan = [("token_embd.weight", (s.n_embd, s.n_vocab), "mat")]
    if s.hybrid and not s.tied:  # the converter writes output.weight first
        plan.append(("output.weight", (s.n_embd, s.n_vocab), "mat"))
    for i in range(s.n_layer):
        p = f"blk.{i}."
        plan += [(p + "attn_norm.weight", (s.n_embd,), "norm")]
        if s.hybrid:
            plan += hybrid_mixer_plan(s, p, s.recurrent(i))
        else:
            if s.qkv_bias:  # 1-D F32 like the norms
                plan += [(p + "attn_q.bias", (q,), "norm"), (p + "attn_k.bias", (kv,), "norm"),
                         (p + "attn_v.bias", (kv,), "norm")]
            if s.qk_norm:
                plan += [(p + "attn_q_norm.weight", (q if s.qk_norm_full else hd,), "norm"),
                         (p + "attn_k_norm.weight", (kv if s.qk_norm_full else hd,), "norm")]
            plan += [
                (p + "attn_q.weight", (s.n_embd, q), "mat"),
                (p + "attn_k.weight", (s.n_embd, kv), "mat"),
                (p + "attn_v.weight", (s.n_embd, kv), "mat"),
                (p + "attn_output.weight", (q, s.n_embd), "mat"),
            ]
        plan += [(p + ("post_attention_norm.weight" if s.hybrid else "ffn_norm.weight"), (s.n_embd,), "norm")]
        if s.n_expert:
            ff, e = s.n_ff_exp or s.n_ff, s.n_expert
            plan += [
                (p + "ffn_gate_inp.weight", (s.n_embd, e), "router"),
                (p + "ffn_gate_exps.weight", (s.n_embd, ff, e), "mat"),
                (p + "ffn_down_exps.weight", (ff, s.n_embd, e), "mat"),
                (p + "ffn_up_exps.weight", (s.n_embd, ff, e), "mat"),
            ]
            if s.n_ff_shexp:  # Qwen3.5-MoE's shared expert and its sigmoid gate ([n_embd, 1] as the converter writes it)
                plan += [
                    (p + "ffn_gate_shexp.weight", (s.n_embd, s.n_ff_shexp), "mat"),
                    (p + "ffn_up_shexp.weight", (s.n_embd, s.n_ff_shexp), "mat"),
                    (p + "ffn_down_shexp.weight", (s.n_ff_shexp, s.n_embd), "mat"),
                    (p + "ffn_gate_inp_shexp.weight", (s.n_embd, 1), "router"),
                ]
        else:
            plan += [
                (p + "ffn_gate.weight", (s.n_embd, s.n_ff), "mat"),
                (p + "ffn_up.weight", (s.n_embd, s.n_ff), "mat"),
                (p + "ffn_down.weight", (s.n_ff, s.n_embd), "mat"),
            ]
    plan.append(("output_norm.weight", (s.n_embd,), "norm"))
    if not s.tied and not s.hybrid:
        plan.append(("output.weight", (s.n_embd, s.n_vocab), "mat"))
    return plan


def hybrid_mixer_plan(s: Shape, p: str, recurrent: bool) -> list[tuple[str, tuple[int, ...], str]]:
    """A Qwen3.5 layer's mixer, as llama.cpp's converter writes it: a Gated DeltaNet layer
    (attn_qkv [q | k | v], attn_gate z, ssm_beta, ssm_alpha, ssm_a,
    ssm_dt.bias, ssm_conv1d over the qkv channels, ssm_norm, ssm_out) or a
    gated full-attention layer (attn_q holds query and gate per head)."""
    hd = s.hd
    q, kv = s.n_head * hd, s.n_head_kv * hd
    if recurrent:
        key, val = s.ssm_nk * s.ssm_dk, s.ssm_nv * s.ssm_dv
        return [
            (p + "ssm_a", (s.ssm_nv,), "ssm_a"),
            (p + "ssm_conv1d.weight", (s.ssm_conv, 2 * key + val), "conv"),
            (p + "ssm_dt.bias", (s.ssm_nv,), "ssm_dt"),
            (p + "ssm_alpha.weight", (s.n_embd, s.ssm_nv), "mat"),
            (p + "ssm_beta.weight", (s.n_embd, s.ssm_nv), "mat"),
            (p + "attn_qkv.weight", (s.n_embd, 2 * key + val), "mat"),
            (p + "attn_gate.weight", (s.n_embd, val), "mat"),
            (p + "ssm_norm.weight", (s.ssm_dv,), "norm"),
            (p + "ssm_out.weight", (val, s.n_embd), "mat"),
        ]
    return [
        (p + "attn_k_norm.weight", (hd,), "norm"),
        (p + "attn_k.weight", (s.n_embd, kv), "mat"),
        (p + "attn_output.weight", (q, s.n_embd), "mat"),
        (p + "attn_q_norm.weight", (hd,), "norm"),
        (p + "attn_q.weight", (s.n_embd, 2 * q), "mat"),
        (p + "attn_v.weight", (s.n_embd, kv), "mat"),
    ]


def gpt2_byte_symbols() -> list[str]:
    """The 256 printable stand-ins GPT-2's byte-level BPE uses for bytes."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) \
        + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]


MERGES = ["Ġ t", "Ġ a", "h e", "i n", "r e", "o n", "Ġt he", "e r"]


def add_tokenizer(w: gguf.GGUFWriter, n_vocab: int) -> None:
    tokens = gpt2_byte_symbols()
    tokens += [m.replace(" ", "") for m in MERGES]
    bos = len(tokens)
    tokens += ["<|begin_of_text|>", "<|end_of_text|>"]
    eos = bos + 1
    n_fixed = len(tokens)
    tokens += [f"filler_{i}" for i in range(n_fixed, n_vocab)]
    assert len(tokens) == n_vocab and len(set(tokens)) == n_vocab
    types = [gguf.TokenType.NORMAL] * n_vocab
    types[bos] = types[eos] = gguf.TokenType.CONTROL
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(MERGES)
    w.add_bos_token_id(bos)
    w.add_eos_token_id(eos)
    w.add_add_bos_token(False)


def add_hybrid_keys(w: gguf.GGUFWriter, s: Shape, type_name: str) -> None:
    """The keys llama.cpp's converter (Qwen3_5TextModel, Qwen3_5MoeTextModel)
    writes, in its order; as a --no-mtp conversion: no nextn_predict_layers."""
    a = s.arch
    w.add_block_count(s.n_layer)
    w.add_context_length(s.n_ctx)
    w.add_embedding_length(s.n_embd)
    if not s.n_expert:  # every layer of the MoE has experts: the converter writes none
        w.add_feed_forward_length(s.n_ff)
    w.add_head_count(s.n_head)
    w.add_head_count_kv(s.n_head_kv)
    w.add_rope_dimension_sections(list(s.rope_sections))
    w.add_rope_freq_base(s.rope_base)
    w.add_layer_norm_rms_eps(s.norm_eps)
    if s.n_expert:
        w.add_expert_count(s.n_expert)
        w.add_expert_used_count(s.n_expert_used)
    w.add_key_length(s.hd)
    w.add_value_length(s.hd)
    w.add_file_type(FILE_TYPE[type_name])
    if s.n_expert:
        w.add_expert_feed_forward_length(s.n_ff_exp)
        w.add_expert_shared_feed_forward_length(s.n_ff_shexp)
    w.add_ssm_conv_kernel(s.ssm_conv)
    w.add_ssm_state_size(s.ssm_dk)
    w.add_ssm_group_count(s.ssm_nk)
    w.add_ssm_time_step_rank(s.ssm_nv)
    w.add_ssm_inner_size(s.ssm_nv * s.ssm_dv)
    w.add_array(f"{a}.attention.recurrent_layers", [s.recurrent(i) for i in range(s.n_layer)])
    w.add_full_attention_interval(s.full_attn_interval)
    w.add_rope_dimension_count(s.n_rot or s.hd)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)


def write_model(shape: str, type_name: str, path: Path, seed: int = 0) -> dict[str, int]:
    s = SHAPES.get(shape) or ssm_shapes.SHAPES.get(shape) or swa_moe_shapes.SHAPES[shape]
    qt = TYPES[type_name]
    rng = np.random.default_rng(seed)
    if isinstance(s, ssm_shapes.SsmShape):
        plan = ssm_shapes.tensor_plan(s)
    elif isinstance(s, swa_moe_shapes.SwaMoeShape):
        plan = swa_moe_shapes.tensor_plan(s)
    else:
        plan = tensor_plan(s)
    tmp = path.with_name(path.name + f".partial-{os.getpid()}")
    path.parent.mkdir(parents=True, exist_ok=True)
    w = gguf.GGUFWriter(tmp, s.arch)
    w.add_type("model")
    w.add_name(f"random {shape} {type_name}")
    w.add_description("random weights in real shapes (vt examples/bench/make-random-gguf.py); "
                      "for throughput measurements only")
    w.add_size_label(s.label)
    if isinstance(s, ssm_shapes.SsmShape):
        ssm_shapes.add_keys(w, s, FILE_TYPE[type_name])
    elif isinstance(s, swa_moe_shapes.SwaMoeShape):
        # gpt-oss at Q8_0: llama-quantize's MXFP4_MOE file (experts MXFP4, the rest Q8_0)
        mxfp4_moe = s.arch == "gpt-oss" and type_name == "Q8_0"
        swa_moe_shapes.add_keys(w, s, gguf.LlamaFileType.MOSTLY_MXFP4_MOE if mxfp4_moe else FILE_TYPE[type_name])
    elif s.hybrid:
        add_hybrid_keys(w, s, type_name)
    else:
        w.add_context_length(s.n_ctx)
        w.add_embedding_length(s.n_embd)
        w.add_block_count(s.n_layer)
        w.add_feed_forward_length(s.n_ff)
        w.add_head_count(s.n_head)
        w.add_head_count_kv(s.n_head_kv)
        w.add_rope_freq_base(s.rope_base)
        w.add_layer_norm_rms_eps(s.norm_eps)
        w.add_rope_dimension_count(s.hd)
        if s.head_dim:
            w.add_key_length(s.hd)
            w.add_value_length(s.hd)
        if s.n_expert:
            w.add_expert_count(s.n_expert)
            w.add_expert_used_count(s.n_expert_used)
            w.add_expert_feed_forward_length(s.n_ff_exp or s.n_ff)
        w.add_vocab_size(s.n_vocab)
        w.add_file_type(FILE_TYPE[type_name])
        w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    add_tokenizer(w, s.n_vocab)

    mix: dict[str, int] = {}
    types: list[QT] = []
    for name, ne, kind in plan:
        ne0, rows = ne[0], int(np.prod(ne[1:]))
        outer = tuple(reversed(ne[1:]))  # numpy order of the rows' dimensions
        if kind in F32_KINDS:
            t = QT.F32
            w.add_tensor_info(name, outer + (ne0,), np.dtype(np.float32), rows * ne0 * 4)
        else:
            t = QT.MXFP4 if kind == "mxfp4" else tensor_type(qt, ne0)
            bs, nb = gguf.GGML_QUANT_SIZES[t]
            nbytes = rows * (ne0 // bs) * nb
            if t == QT.F16:
                w.add_tensor_info(name, outer + (ne0,), np.dtype(np.float16), nbytes)
            else:
                w.add_tensor_info(name, outer + ((ne0 // bs) * nb,), np.dtype(np.uint8), nbytes, raw_dtype=t)
            mix[t.name] = mix.get(t.name, 0) + nbytes
        types.append(t)
    try:
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_ti_data_to_file()
        for (name, ne, kind), t in zip(plan, types):
            ne0, rows = ne[0], int(np.prod(ne[1:]))
            if kind == "norm":  # norm weights (and biases, Mamba-2's D) near 1
                arr = (1.0 + 0.1 * rng.standard_normal((rows, ne0), dtype=np.float32)).astype(np.float32)
            elif kind in ("router", "bias"):  # a random, roughly balanced choice of experts
                arr = STD * rng.standard_normal((rows, ne0), dtype=np.float32)
            elif kind == "ssm_a":
                arr = -rng.uniform(1.0, 16.0, (rows, ne0)).astype(np.float32)
            elif kind == "ssm_dt":
                arr = np.log(np.expm1(rng.uniform(1e-3, 0.1, (rows, ne0)))).astype(np.float32)
            elif kind == "conv":
                arr = rng.uniform(-0.5, 0.5, (rows, ne0)).astype(np.float32)
            elif kind == "rope_freqs":
                arr = np.array([swa_moe_shapes.rope_freqs(s)], dtype=np.float32)
            elif t in (QT.F16, QT.BF16):
                arr = random_float(rng, t, rows, ne0)
            else:
                arr = random_blocks(rng, t, rows, ne0)
            w.write_tensor_data(arr)
        w.close()
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return mix


def ensure(shape: str, type_name: str, force: bool = False) -> Path:
    path = file_path(shape, type_name)
    if path.is_file() and not force:
        return path
    t0 = time.monotonic()
    mix = write_model(shape, type_name, path)
    total = sum(mix.values())
    desc = ", ".join(f"{k} {v / total * 100:.0f}%" for k, v in sorted(mix.items(), key=lambda kv: -kv[1]))
    log(f"wrote {path} ({path.stat().st_size / 1e6:.0f} MB, matrices: {desc}) "
        f"in {time.monotonic() - t0:.1f} s")
    return path


def check(path: Path) -> None:
    """Dequantized mean/std of a sample of every matrix type in the file."""
    r = gguf.GGUFReader(path)
    seen: dict[str, list[float]] = {}
    for t in r.tensors:
        key = f"{t.tensor_type.name}{' norm' if len(t.shape) == 1 else ''}"
        if key in seen:
            continue
        data = np.asarray(t.data)
        rows = data.reshape(-1, data.shape[-1])[:64] if data.ndim > 1 else data
        x = gguf.quants.dequantize(rows, t.tensor_type).astype(np.float64)
        seen[key] = [x.mean(), x.std(), float(np.abs(x).max())]
        print(f"{path.name}: {t.name} {key}: mean {x.mean():+.4f} std {x.std():.4f} "
              f"max|w| {np.abs(x).max():.4f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", action="append",
                    choices=list(SHAPES) + list(ssm_shapes.SHAPES) + list(swa_moe_shapes.SHAPES),
                    help="shape to write (repeatable; default the dense ones: " + ", ".join(DENSE_SHAPES) + ")")
    ap.add_argument("--type", action="append", choices=list(TYPES),
                    help="type to write (repeatable; default all)")
    ap.add_argument("--force", action="store_true", help="rewrite files that exist")
    ap.add_argument("--list", action="store_true", help="print the paths and whether they exist")
    ap.add_argument("--check", metavar="FILE", help="print dequantized stats of FILE and exit")
    a = ap.parse_args()
    if a.check:
        check(Path(a.check))
        return 0
    for shape in a.shape or DENSE_SHAPES:
        for type_name in a.type or list(TYPES):
            if a.list:
                p = file_path(shape, type_name)
                print(f"{p}\t{'present' if p.is_file() else 'absent'}")
            else:
                print(ensure(shape, type_name, a.force))
    return 0


if __name__ == "__main__":
    sys.exit(main())
