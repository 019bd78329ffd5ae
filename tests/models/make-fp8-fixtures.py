#!/usr/bin/env python3
"""FP8 Hugging Face checkpoint fixtures: the tiny llama of make-tiny-models.py
(its config and tokenizer, torch seed 1782: see SEEDS) with the Linear weights
of its decoder layers (q/k/v/o/gate/up/down_proj) stored in FP8 e4m3, and
transformers' logits on each folder as the golden; and its tiny DeepSeek-V3
(resized, see DEEPSEEK_OVERRIDES) stored as the DeepSeek-V3 / Kimi-K2 FP8
checkpoints are.

Writes, per fixture, tests/models/tiny/<name>/ (config.json with the
checkpoint's quantization_config, generation_config.json, model.safetensors,
tokenizer.json, tokenizer_config.json) and tests/models/tiny/<name>.json (the
golden, in make-tiny-models.py's format):

- llama_fp8_block: "fine-grained FP8", the format of DeepSeek-V3 and
  Qwen3-*-FP8: quantization_config {"activation_scheme": "dynamic", "fmt":
  "e4m3", "quant_method": "fp8", "weight_block_size": [32, 64]} (those
  checkpoints' exact key set; their block is 128 x 128, this model's
  matrices are 64 and 128 wide: FINE_BLOCK gives each several whole blocks);
  each quantized <name>.weight F8_E4M3 (out, in) with
  <name>.weight_scale_inv F32 (ceil(out/32), ceil(in/64)): per block, scale
  = amax(|block|) / 448 and fp8 = e4m3(W / scale) (torch's float32 ->
  float8_e4m3fn cast: round to nearest even), W ~ fp8 * scale_inv[i // 32,
  j // 64]. Quantized here (quantize_fp8_block).
- deepseek_v3_fp8: the same format on make-tiny-models.py's deepseek_v3
  (MLA with a low-rank q, a dense first layer, 8 routed experts and a shared
  one behind the sigmoid router with e_score_correction_bias and group-limited
  choice) with q_lora_rank, kv_lora_rank and moe_intermediate_size 64 and
  hidden_size 128 (DEEPSEEK_OVERRIDES: every quantized matrix's input width a
  multiple of 64), weight_block_size [8, 64] (DEEPSEEK_BLOCK: whole blocks
  in every matrix), as the real checkpoints: every Linear weight of the
  decoder layers F8_E4M3 with its weight_scale_inv (self_attn's q_a_proj,
  q_b_proj, kv_a_proj_with_mqa, kv_b_proj, o_proj; the dense mlp's
  gate/up/down_proj; mlp.experts.<e>.gate/up/down_proj, one tensor per
  expert as saved; mlp.shared_experts'), the router (mlp.gate.weight and its
  e_score_correction_bias), norms, embeddings and lm_head F32.
- llama_fp8_channel: compressed-tensors "float-quantized", the FP8_DYNAMIC
  preset of llm-compressor's *-FP8-dynamic checkpoints: <name>.weight F8_E4M3
  and <name>.weight_scale F32 (out, 1), a scale per output row; input
  activations dynamic per token (nothing stored for them); ignore ["lm_head"].
- llama_fp8_tensor_block: compressed-tensors, one config with two groups:
  the attention projections in the FP8 preset (weight_scale F32 (1,), one per
  tensor; static per-tensor input activations, input_scale F32 (1,),
  calibrated here as llm-compressor's static_minmax observer would on the
  fixture's own prompts), the MLP projections in the FP8_BLOCK preset
  (weight_scale F32 (ceil(out/128), ceil(in/128)); input activations dynamic
  per group of 128).
Every matrix of this model is at most 128 x 128 (hidden 64, intermediate
128), so each of llama_fp8_tensor_block's 128x128-block weights is one
block, partial where a side is 64 (transformers' compressed-tensors load
applies the first group's scheme to every layer, which fits only one-block
weights); llama_fp8_block's FINE_BLOCK tests the indexing of several.
The compressed-tensors fixtures are made by compressed_tensors itself
(apply_quantization_config, ModelCompressor.compress_model, update_config);
the weight scales are what llm-compressor's min-max weight observer computes
(compressed_tensors' calculate_qparams of each channel's / block's /
tensor's min and max, blocks zero-padded), which no data is needed for.

The oracle is transformers' own load of each folder in float32 with the
weights dequantized at load, and the goldens' model is that load with the
inputs of its quantized Linears rounded to bfloat16 (bf16_inputs: vt's FP8
matmuls take bf16 activations, as a bf16 run of the checkpoint does; the
script prints how far float32 inputs would move the logits). The load is
FineGrainedFP8Config(dequantize=True) for the fine-grained ones (on a CPU it
dequantizes anyway; for DeepSeek it dequantizes each expert's tensors before
the load fuses them into experts.gate_up_proj / down_proj, which are checked
against the per-expert definitions), CompressedTensorsConfig(dequantize=True)
(= the deprecated run_compressed=False) for the others: that path keeps
plain nn.Linear modules,
no quantization scheme attached, so nothing fake-quantizes the activations.
Every weight is checked, bit for bit, against the format's definition,
float32(float64(fp8) * float64(scale)) (= float32(fp8) * float32(scale)
rounded once, which is what transformers and compressed_tensors compute), and
against the float32 model: the quantized linear weights moved, nothing else.
For the compressed-tensors fixtures the script also loads each folder the
default way (compressed_tensors decompresses on the first forward and then
fake-quantizes the Linear inputs as the checkpoint says) and prints how far
that moves the logits from the goldens; for the fine-grained ones, the oracle with
its Linear inputs fake-quantized per token and group of 128 (what FP8Linear
does on a GPU; DeepSeek's experts' inputs too) instead. For DeepSeek it
prints the routers' smallest gap (router_gaps; make-tiny-models.py's
goldens() does not measure group-limited routers) and insists on all 8
experts chosen and a gap above MIN_ROUTER_GAP: its logits move by whole
units where a perturbation flips an expert choice (the FP8 weights move
them by about 3 from the float32 model's, the activation quantization by
about 3 from the goldens), so vt must read the weights exactly (fp8 *
scale_inv) to match.

Run from the repository root (deterministic; CPU only; re-runnable):
    /work/oracle-venv/bin/python tests/models/make-fp8-fixtures.py [--only NAME,...]
with torch, transformers==5.25.0, compressed-tensors==0.20.1, accelerate
(transformers' FP8 loader wants it) and safetensors. torch runs here only: CI
reads the committed fixtures.
"""
from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import math
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _tiny_models():
    spec = importlib.util.spec_from_file_location("make_tiny_models", HERE / "make-tiny-models.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


TM = _tiny_models()
OUT = TM.OUT
BASE = "llama"  # the float32 model each fixture quantizes (TM.CONFIGS["llama"], seed SEEDS[name])
FIXTURES = ["llama_fp8_block", "llama_fp8_channel", "llama_fp8_tensor_block", "deepseek_v3_fp8"]
# The torch seed of the float32 model (make-tiny-models.py's build(BASE, seed=)):
# for the compressed-tensors pair, the llama seed (1234) gives a greedy step
# within 0.0012 of a tie per channel; 1782 is the best of seeds 1234 to 1879
# by their smallest greedy margin (0.024 per channel, 0.025 per tensor/block)
# among those whose greedy continuations hold 6 or more distinct tokens (the
# few seeds with larger margins repeat one or two tokens). llama_fp8_block
# with its FINE_BLOCK scales: 1234 (margin 0.018, 10 distinct tokens; 1782
# gives 0.0016). deepseek_v3_fp8: 1486, of seeds 1000 to 1549 the one with
# the largest smallest router gap under the golden's bf16 inputs (2.8e-3,
# group or expert, over the prompts and the greedy sequence; 3.5e-3 with
# float32 inputs; 1334's 1.7e-3 the next) among those with all 8 experts of
# both MoE layers chosen and every greedy margin above 0.02 (0.0225). The
# bf16 rounding reaches the routers: stop 61's 1244 (1.8e-3 with float32
# inputs) falls to 3.9e-4 with it, and lavapipe's batch-dependent float
# order (mat-vec vs tiled shaders) then flipped an expert between a batch
# and a lone request. deepseek_v3's 1508 gives a router gap of 5e-5 here.
SEEDS: dict[str, int | None] = {"llama_fp8_block": 1234, "llama_fp8_channel": 1782, "llama_fp8_tensor_block": 1782,
                                "deepseek_v3_fp8": 1486}
MIN_MARGIN = 0.01
TOL_LOGIT = 1e-2  # tests/models/tiny-checks.h's, the goldens' tol_logit adds the bf16 rounding's reach
FP8_MAX = 448.0
BLOCK = (128, 128)  # compressed-tensors' FP8_BLOCK preset, DeepSeek's and Qwen's weight_block_size
# llama_fp8_block's weight_block_size: smaller than the released 128 x 128,
# so that this model's matrices (64 and 128 wide) hold several whole blocks
# and the per-block scale indexing is tested against transformers (whose
# dequantization is right for whole blocks, see load_fp8_block_oracle).
FINE_BLOCK = (32, 64)
QUANTIZED = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj",
             "q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj")  # the last four: MLA's
ATTN_RE = r"re:.*self_attn\.(q|k|v|o)_proj$"
MLP_RE = r"re:.*mlp\.(gate|up|down)_proj$"
# quantization_config of DeepSeek-V3's and Qwen3-*-FP8's config.json, their
# key set, with FINE_BLOCK for the block size.
FP8_BLOCK_CONFIG = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                    "weight_block_size": list(FINE_BLOCK)}
# deepseek_v3_fp8: make-tiny-models.py's deepseek_v3 with the sizes that FP8
# rows need (vt reads them in whole pieces of 64: every quantized matrix's
# input width a multiple of 64): q_lora_rank 24 -> 64 (q_b_proj's input),
# kv_lora_rank 32 -> 64 (kv_b_proj's), moe_intermediate_size 32 -> 64 (the
# routed and the shared experts' down_proj's), and hidden_size 64 -> 128,
# so that the hidden-wide inputs (q_a_proj, kv_a_proj_with_mqa, the dense
# MLP, the experts' gate/up_proj) span two column blocks as the real
# models' do (their q_lora_rank 1536 and kv_lora_rank 512 are narrower than
# hidden 7168 too). Heads, nope 16 + rope 8, v 16 (o_proj's input 4 x 16 =
# 64), layers, experts and router unchanged.
DEEPSEEK_BASE = "deepseek_v3"
DEEPSEEK_OVERRIDES = dict(hidden_size=128, q_lora_rank=64, kv_lora_rank=64, moe_intermediate_size=64)
_cls, _cfg_cls, _kwargs = TM.CONFIGS[DEEPSEEK_BASE]
TM.CONFIGS["deepseek_v3_fp8"] = (_cls, _cfg_cls, dict(_kwargs, **DEEPSEEK_OVERRIDES))
# Its weight_block_size: 8 rows x 64 columns. The columns as FINE_BLOCK's
# (vt's FP8 rows want a block's column span a multiple of 64); the rows
# 8, the largest block that divides every output side (kv_a_proj_with_mqa's
# kv_lora_rank + rope = 72, q_b_proj's 4 x 24 = 96, 64, 128): transformers'
# dequantization reads only whole blocks right (see load_fp8_block_oracle),
# where the real checkpoints' 128 x 128 leaves kv_a_proj_with_mqa's 576
# rows a partial last block.
DEEPSEEK_BLOCK = (8, 64)
BLOCKS = {"block": BLOCK, "fine": FINE_BLOCK, "deepseek": DEEPSEEK_BLOCK}
# the float32 model each fixture quantizes: its make-tiny-models.py CONFIGS
# name (registered there by base()) and the block size of the fp8 ones
BASES = {"deepseek_v3_fp8": "deepseek_v3_fp8"}
FP8_BLOCK_OF = {"llama_fp8_block": "fine", "deepseek_v3_fp8": "deepseek"}
# DeepSeek's router choices over the prompts and the greedy sequence: the
# smallest gap between the chosen and the next group / expert must be above
# this (vt's f16 K, V and attention probabilities move hidden states by about 1e-3 of that).
MIN_ROUTER_GAP = 1e-3


def is_quantized(name: str) -> bool:
    """A decoder layer's Linear weight (the tensors the fixtures store in FP8;
    in a checkpoint each expert's own, in transformers' model the experts'
    fused gate_up_proj / down_proj)."""
    return ".layers." in name and (name.endswith(tuple(f".{p}.weight" for p in QUANTIZED))
                                   or bool(re.search(r"\.experts\.(gate_up_proj|down_proj)$", name)))


def dequantize(q, scale, kind: str):
    """The formats' definition, in numpy: float32(float64(fp8) * float64(scale)),
    scale indexed by kind: 'tensor' (one), 'channel' (per row: scale (out, 1)),
    'block' (scale[i // 128, j // 128]; the last row / column block may be
    partial), 'fine' (the same with FINE_BLOCK), 'deepseek' (DEEPSEEK_BLOCK)."""
    import numpy as np
    import torch
    v = q.to(torch.float64).numpy()
    s = scale.to(torch.float64).numpy()
    if kind == "tensor":
        assert s.size == 1
        w = v * s.reshape(())
    elif kind == "channel":
        assert s.shape == (v.shape[0], 1)
        w = v * s
    else:
        b = BLOCKS[kind]
        assert s.shape == (-(-v.shape[0] // b[0]), -(-v.shape[1] // b[1]))
        w = v * np.repeat(np.repeat(s, b[0], 0), b[1], 1)[:v.shape[0], :v.shape[1]]
    return w.astype(np.float32)


# --- llama_fp8_block: fine-grained FP8 (quant_method fp8) -------------------

def quantize_fp8_block(w, block=FINE_BLOCK):
    """(fp8 (out, in) float8_e4m3fn, scale_inv (ceil(out/32), ceil(in/64))
    float32) of a float32 weight: per FINE_BLOCK (or block) block (partial at the edges,
    zero-padded for the amax), scale = amax / 448, fp8 = e4m3(W / scale), the
    division in float32 and the cast torch's (round to nearest even),
    clamped to +-448 first (W / scale can land a rounding above 448)."""
    import torch
    rows, cols = w.shape
    br, bc = -(-rows // block[0]), -(-cols // block[1])
    padded = torch.zeros(br * block[0], bc * block[1], dtype=torch.float32)
    padded[:rows, :cols] = w
    blocks = padded.reshape(br, block[0], bc, block[1])
    scale = blocks.abs().amax(dim=(1, 3)) / FP8_MAX
    scale = torch.where(scale == 0, torch.ones_like(scale), scale)
    full = scale.repeat_interleave(block[0], 0).repeat_interleave(block[1], 1)[:rows, :cols]
    q = (w / full).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
    return q, scale.to(torch.float32).contiguous()


def save_fp8_block(folder: Path, block=FINE_BLOCK) -> None:
    """Rewrites the saved float32 folder as fine-grained FP8 (see the
    docstring): every is_quantized tensor (a DeepSeek checkpoint's experts
    one by one, as saved), weight_block_size block."""
    from safetensors.torch import load_file, save_file
    st = folder / "model.safetensors"
    tensors = load_file(st)
    for name in [k for k in tensors if is_quantized(k)]:
        q, s = quantize_fp8_block(tensors[name], block)
        tensors[name] = q
        tensors[name + "_scale_inv"] = s
    save_file(tensors, st, metadata={"format": "pt"})
    cfg_path = folder / "config.json"
    cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    cfg["quantization_config"] = dict(FP8_BLOCK_CONFIG, weight_block_size=list(block))
    cfg_path.write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")


def load_fp8_block_oracle(folder: Path, f32_model, kind: str = "fine"):
    """transformers' load of the folder, dequantized to float32, checked
    against dequantize(..., kind) and against the float32 model.
    (transformers' Fp8Dequantize takes the block size from the scale grid,
    rows / grid rows, not from weight_block_size: right for the whole
    blocks here and for sides that are multiples of 128, wrong for a
    partial last block of a side over 128, e.g. 96-row blocks for 192 rows.
    For DeepSeek it dequantizes each expert's pair before its converter
    fuses the experts into gate_up_proj / down_proj.)"""
    import torch
    import transformers
    model = type(f32_model).from_pretrained(
        folder, quantization_config=transformers.FineGrainedFP8Config(dequantize=True),
        dtype=torch.float32).eval()
    check_weights(folder, model, f32_model, lambda n: kind, scale_suffix="_scale_inv")
    return model


def with_linear_inputs(oracle, fq):
    """A copy of the oracle whose quantized Linears (and DeepSeek's experts,
    both of their inputs) take fq(x, module) for their input x."""
    import types
    import torch
    model = copy.deepcopy(oracle)

    def hook(m, a):
        return (fq(a[0], m),)

    def experts_forward(self, hidden_states, top_k_index, top_k_weights):
        # transformers' DeepseekV3Experts.forward with both inputs through fq
        out = torch.zeros_like(hidden_states)
        for e in range(self.gate_up_proj.shape[0]):
            token_idx, pos = torch.where(top_k_index == e)
            if len(token_idx) == 0:
                continue
            gate, up = torch.nn.functional.linear(fq(hidden_states[token_idx], self),
                                                  self.gate_up_proj[e]).chunk(2, dim=-1)
            h = torch.nn.functional.linear(fq(self.act_fn(gate) * up, self), self.down_proj[e])
            out.index_add_(0, token_idx, h * top_k_weights[token_idx, pos, None])
        return out

    for n, m in model.named_modules():
        if is_quantized(n + ".weight"):
            m.register_forward_pre_hook(hook)
        elif is_quantized(n + ".gate_up_proj"):
            m.forward = types.MethodType(experts_forward, m)
    return model


def bf16_inputs(oracle):
    """The golden model: the oracle with its quantized Linears' inputs rounded
    to bfloat16 (round to nearest even, torch's cast), the products and sums in
    float32. This is what a bf16 run of the checkpoint computes in those
    matmuls (transformers and vLLM on a CPU dequantize the FP8 weights to the
    model's bf16) and what vt computes (FP8_E4M3's vec_dot_type is BF16, as
    BF16's is: lib/core/quant/fp8-scalar.cpp); everything else stays
    float32, as in vt."""
    import torch
    return with_linear_inputs(oracle, lambda x, m: x.to(torch.bfloat16).to(torch.float32))


def fp8_block_activation_quantized(oracle):
    """A copy of the oracle whose quantized Linears fake-quantize their inputs
    as fine-grained FP8's dynamic activation scheme does (transformers'
    FP8Linear on a GPU, DeepSeek's act_quant): per token and group of 128
    inputs (one group of 64 where a Linear has 64 inputs), scale = amax / 448,
    e4m3 rounding; through compressed_tensors' fake_quantize with the
    FP8_BLOCK preset's input arguments. For the printed comparison only."""
    from compressed_tensors.quantization import preset_name_to_scheme
    from compressed_tensors.quantization.lifecycle.forward import fake_quantize
    from compressed_tensors.quantization.utils import compute_dynamic_scales_and_zp
    base = preset_name_to_scheme("FP8_BLOCK", ["Linear"]).input_activations

    def fq(x, m):
        args = base.model_copy(update={"group_size": min(base.group_size, x.shape[-1])})
        scale, zp = compute_dynamic_scales_and_zp(x, args, m)
        return fake_quantize(x, scale, zp, args)

    return with_linear_inputs(oracle, fq)


# --- compressed-tensors fixtures ----------------------------------------------

def ct_groups(name: str):
    """{group name: QuantizationScheme} of a compressed-tensors fixture."""
    from compressed_tensors.quantization import preset_name_to_scheme
    if name == "llama_fp8_channel":
        return {"group_0": preset_name_to_scheme("FP8_DYNAMIC", ["Linear"])}
    return {"group_0": preset_name_to_scheme("FP8", [ATTN_RE]),
            "group_1": preset_name_to_scheme("FP8_BLOCK", [MLP_RE])}


def observe_weight(w, args):
    """llm-compressor's min-max weight observer: min and max of the weight per
    scale (flatten_for_calibration: per tensor, per row, per 128x128 block
    zero-padded), through compressed_tensors' calculate_qparams (symmetric
    FP8: scale = max(|min|, |max|) / 448)."""
    import torch
    from compressed_tensors.quantization import QuantizationStrategy
    from compressed_tensors.quantization.utils import calculate_qparams, maybe_pad_tensor_for_block_quant
    if args.strategy == QuantizationStrategy.TENSOR:
        v = w.reshape(1, 1, -1)
    elif args.strategy == QuantizationStrategy.CHANNEL:
        v = w.unsqueeze(-2).unsqueeze(0)
    elif args.strategy == QuantizationStrategy.BLOCK:
        bh, bw = args.block_structure
        p = maybe_pad_tensor_for_block_quant(w, args.block_structure)
        v = p.reshape(p.shape[0] // bh, bh, p.shape[1] // bw, bw).transpose(1, 2).flatten(-2, -1).unsqueeze(0)
    else:
        raise ValueError(f"no weight observer for {args.strategy}")
    scale, _ = calculate_qparams(torch.amin(v, dim=(0, -1)), torch.amax(v, dim=(0, -1)), args)
    return scale


def calibrate_inputs(model, tok, modules: dict) -> dict:
    """Static per-tensor input scales (llm-compressor's static_minmax: the
    running min and max of a Linear's inputs over the calibration data, here
    the golden prompts) of the modules whose scheme has static input
    activations: {module name: (min, max)}."""
    import torch
    seen: dict[str, tuple] = {}

    def hook(m, args, n):
        x = args[0].detach()
        lo, hi = torch.aminmax(x)
        if n in seen:
            lo, hi = torch.minimum(lo, seen[n][0]), torch.maximum(hi, seen[n][1])
        seen[n] = (lo, hi)

    hooks = [dict(model.named_modules())[n].register_forward_pre_hook(lambda m, a, n=n: hook(m, a, n))
             for n in modules]
    with torch.no_grad():
        for text in TM.PROMPTS:
            model(torch.tensor([tok(text, add_special_tokens=False)["input_ids"]]))
    for h in hooks:
        h.remove()
    return seen


def save_compressed_tensors(name: str, f32_model, tok, folder: Path) -> None:
    """The float32 model quantized and saved by compressed_tensors: schemes
    applied, weight (and static input) scales set, frozen, compressed,
    save_pretrained, quantization_config written by ModelCompressor."""
    import torch
    from compressed_tensors.compressors import ModelCompressor
    from compressed_tensors.quantization import (QuantizationConfig, QuantizationStatus,
                                                 apply_quantization_config)
    from compressed_tensors.quantization.utils import calculate_qparams
    model = copy.deepcopy(f32_model)
    apply_quantization_config(model, QuantizationConfig(config_groups=ct_groups(name), ignore=["lm_head"]),
                              show_progress=False)
    targets = {n: m for n, m in model.named_modules() if getattr(m, "quantization_scheme", None) is not None}
    assert sorted(n + ".weight" for n in targets) == sorted(n for n, _ in f32_model.named_parameters()
                                                            if is_quantized(n)), sorted(targets)
    static = [n for n, m in targets.items()
              if m.quantization_scheme.input_activations is not None
              and not m.quantization_scheme.input_activations.dynamic]
    ranges = calibrate_inputs(f32_model, tok, static)
    with torch.no_grad():
        for n, m in targets.items():
            scheme = m.quantization_scheme
            m.weight_scale.copy_(observe_weight(m.weight.detach(), scheme.weights))
            if n in ranges:
                scale, _ = calculate_qparams(*ranges[n], scheme.input_activations)
                m.input_scale.copy_(scale)
            m.quantization_status = QuantizationStatus.FROZEN
    compressor = ModelCompressor.from_pretrained_model(model)
    compressor.compress_model(model)
    model.save_pretrained(folder, safe_serialization=True)
    compressor.update_config(str(folder))


def ct_kinds(folder: Path):
    """module name -> weight scale kind ('tensor', 'channel', 'block'), from the folder's config."""
    import re
    qc = json.loads((folder / "config.json").read_text(encoding="utf-8"))["quantization_config"]
    rules = []
    for g in qc["config_groups"].values():
        for t in g["targets"]:
            rules.append((t, g["weights"]["strategy"]))

    def kind(n: str) -> str:
        module = n.removesuffix(".weight")
        for t, s in rules:
            if (t.startswith("re:") and re.match(t[3:], module)) or t == "Linear":
                return s
        raise KeyError(n)
    return kind


def load_ct_oracle(folder: Path, f32_model):
    """transformers' load with the weights decompressed at load
    (CompressedTensorsConfig(dequantize=True)), plain nn.Linear modules with
    no quantization scheme (so no activation fake-quantization), checked
    against dequantize() and against the float32 model."""
    import torch
    import transformers
    model = transformers.LlamaForCausalLM.from_pretrained(
        folder, quantization_config=transformers.CompressedTensorsConfig(dequantize=True),
        dtype=torch.float32).eval()
    for n, m in model.named_modules():
        if isinstance(m, torch.nn.Linear):
            assert type(m) is torch.nn.Linear and not hasattr(m, "quantization_scheme") and "forward" not in vars(m), n
    check_weights(folder, model, f32_model, ct_kinds(folder), scale_suffix="_scale")
    return model


def load_ct_activation_quantized(folder: Path, oracle):
    """transformers' default load (dequantize False): compressed_tensors
    decompresses the weights on the first forward and fake-quantizes each
    quantized Linear's input as the checkpoint's scheme says (dynamic per
    token, per group of 128, or with the stored static input_scale). Its
    weights are checked equal to the oracle's."""
    import torch
    import transformers
    model = transformers.LlamaForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    for m in model.modules():
        # FP8_BLOCK's dynamic input groups of 128 do not divide gate/up_proj's
        # 64 inputs here and compressed_tensors cannot split them: one group
        # of 64 per token instead (what a per-token-group kernel does with a
        # partial group).
        args = getattr(getattr(m, "quantization_scheme", None), "input_activations", None)
        if args is not None and args.group_size and m.in_features % args.group_size:
            m.quantization_scheme = m.quantization_scheme.model_copy(
                update={"input_activations": args.model_copy(update={"group_size": m.in_features})})
    with torch.no_grad():
        model(torch.tensor([[0]]))  # the decompression hook runs
    ref = dict(oracle.named_parameters())
    n_act = 0
    for n, p in model.named_parameters():
        if n in ref:
            assert torch.equal(p.detach(), ref[n].detach()), n
    for n, m in model.named_modules():
        scheme = getattr(m, "quantization_scheme", None)
        if scheme is not None:
            assert scheme.input_activations is not None and "forward" in vars(m), n
            n_act += 1
    assert n_act == sum(is_quantized(n) for n in ref)
    return model


# --- shared checks and output ------------------------------------------------

def check_weights(folder: Path, model, f32_model, kind, scale_suffix: str) -> None:
    """Every quantized weight of the loaded model equals dequantize() of the
    stored fp8 values and scales and moved from the float32 model; every other
    parameter equals the float32 model's."""
    import numpy as np
    import torch
    from safetensors.torch import load_file
    st = load_file(folder / "model.safetensors")
    fp8 = sorted(k for k, v in st.items() if v.dtype == torch.float8_e4m3fn)
    assert fp8 == sorted(k for k in st if is_quantized(k)), fp8
    assert all(st[k].dtype == torch.float32 for k in st if k not in fp8), "a tensor neither F8_E4M3 nor F32"

    def want(n):
        m = re.fullmatch(r"(.*\.experts)\.(gate_up_proj|down_proj)", n)
        if m is None:
            return dequantize(st[n], st[n + scale_suffix], kind(n))
        # transformers' fused experts: per expert, gate_proj's rows then
        # up_proj's (gate_up_proj) or down_proj, stacked in expert order
        parts = ("gate_proj", "up_proj") if m[2] == "gate_up_proj" else ("down_proj",)
        n_exp = sum(k.startswith(m[1] + ".") and k.endswith(".down_proj.weight") for k in st)
        names = [[f"{m[1]}.{e}.{p}.weight" for p in parts] for e in range(n_exp)]
        return np.stack([np.concatenate([dequantize(st[k], st[k + scale_suffix], kind(k)) for k in ks])
                         for ks in names])

    got = dict(model.named_parameters())
    assert sorted(got) == sorted(n for n, _ in f32_model.named_parameters())
    moved = 0
    for n, p in f32_model.named_parameters():
        g = got[n].detach()
        assert g.dtype == torch.float32, n
        if is_quantized(n):
            assert n in st or n.endswith(("gate_up_proj", "down_proj")), n
            assert n not in st or st[n].dtype == torch.float8_e4m3fn, n
            assert np.array_equal(g.numpy(), want(n)), n
            moved += int(not torch.equal(g, p.detach()))
        else:
            assert n not in st or st[n].dtype == torch.float32, n
            assert torch.equal(g, p.detach()), n
    assert moved == sum(is_quantized(n) for n in got), moved
    bufs = dict(model.named_buffers())
    for n, b in f32_model.named_buffers():  # DeepSeek's e_score_correction_bias (rope tables too)
        assert torch.equal(bufs[n], b), n


def router_gaps(model, tok, greedy):
    """DeepSeek-V3's routers (noaux_tc: sigmoid scores + e_score_correction_bias,
    the topk_group best groups by their top-2 sums, then the top-k experts of
    those) over the prompts and the greedy sequence (the last prompt and all
    but the last greedy token: every step's input is a prefix of it): {router:
    (experts chosen, smallest gap)}, the gap per token the smaller of the
    topk_group-th and the next group's scores' and the k-th and the next
    eligible expert's. (make-tiny-models.py's goldens() skips group-limited
    routers.)"""
    import torch
    out: dict[str, tuple[set, float]] = {}

    def on_router(m, args, res, n):
        logits, _, idx = res
        choice = logits.float().sigmoid() + m.e_score_correction_bias
        g = choice.view(len(choice), m.num_group, -1).topk(2, dim=-1).values.sum(-1)
        gs = g.sort(-1, descending=True).values
        gap = gs[:, m.topk_group - 1] - gs[:, m.topk_group]
        keep = torch.zeros_like(g, dtype=torch.bool).scatter(1, g.topk(m.topk_group, dim=-1).indices, True)
        es = choice.masked_fill(~keep.repeat_interleave(choice.shape[1] // m.num_group, 1), float("-inf"))
        es = es.sort(-1, descending=True).values
        k = idx.shape[-1]
        gap = torch.minimum(gap, es[:, k - 1] - es[:, k])
        used, low = out.get(n, (set(), 1.0))
        out[n] = (used | set(idx.flatten().tolist()), min(low, float(gap.min())))

    hooks = [m.register_forward_hook(lambda m, a, r, n=n: on_router(m, a, r, n))
             for n, m in model.named_modules() if getattr(m, "topk_group", None) is not None]
    seqs = [tok(t, add_special_tokens=False)["input_ids"] for t in TM.PROMPTS]
    with torch.no_grad():
        for ids in seqs + [seqs[-1] + greedy[:-1]]:
            model(torch.tensor([ids]))
    for h in hooks:
        h.remove()
    return out


def prompt_logits(model, tok):
    import torch
    with torch.no_grad():
        return [model(torch.tensor([tok(t, add_special_tokens=False)["input_ids"]])).logits[0].float()
                for t in TM.PROMPTS]


def max_diff(a, b) -> float:
    return max(float((x - y).abs().max()) for x, y in zip(a, b))


def describe(folder: Path) -> None:
    from safetensors import safe_open
    qc = json.loads((folder / "config.json").read_text(encoding="utf-8"))["quantization_config"]
    print("  quantization_config: " + json.dumps(qc, sort_keys=False))
    with safe_open(folder / "model.safetensors", "pt") as f:
        for k in sorted(f.keys()):
            if (".layers." in k and not re.search(r"\.layers\.[01]\.", k)) or re.search(r"\.experts\.([2-9]|\d\d)", k):
                continue  # layers 0 and 1, experts 0 and 1
            sl = f.get_slice(k)
            print(f"  {k}  {sl.get_dtype()}  {list(sl.get_shape())}")
    files = sorted(folder.iterdir())
    print(f"  folder: {sum(p.stat().st_size for p in files)} bytes in {', '.join(p.name for p in files)}")


def make(name: str) -> None:
    import torch
    import transformers
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / name
        base = BASES.get(name, BASE)
        tok, cfg, f32_model = TM.build(base, folder, seed=SEEDS.get(name))
        TM.save(base, f32_model, folder)
        act_model = None
        if name in FP8_BLOCK_OF:
            save_fp8_block(folder, BLOCKS[FP8_BLOCK_OF[name]])
            model = load_fp8_block_oracle(folder, f32_model, FP8_BLOCK_OF[name])
            act_model = fp8_block_activation_quantized(model)
        else:
            save_compressed_tensors(name, f32_model, tok, folder)
            model = load_ct_oracle(folder, f32_model)
            act_model = load_ct_activation_quantized(folder, model)
        files = sorted(p.name for p in folder.iterdir())
        assert files == ["config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
                         "tokenizer_config.json"], files
        cfg = model.config
        OUT.mkdir(parents=True, exist_ok=True)
        kept = OUT / name
        shutil.rmtree(kept, ignore_errors=True)
        shutil.copytree(folder, kept)
        for p in kept.iterdir():
            p.chmod(0o644)  # safetensors writes 0600

        golden_model = bf16_inputs(model)
        prompts, greedy, margins, _, _ = TM.goldens(name, golden_model, tok)
        rounding = max_diff(prompt_logits(golden_model, tok), prompt_logits(model, tok))
        tol = math.ceil((TOL_LOGIT + rounding) * 1000) / 1000
        golden = {
            "format": 1, "generator": "tests/models/make-fp8-fixtures.py", "architecture": name,
            "transformers": transformers.__version__, "torch": torch.__version__,
            "config": json.loads(cfg.to_json_string()), "n_vocab": cfg.vocab_size,
            "prompts": prompts, "greedy": greedy, "greedy_margins": margins,
            "tol_logit": tol,
            "tol_logit_why": (f"the tiny models' {TOL_LOGIT} plus {rounding:.4f}, how far rounding the FP8 matmuls' "
                              "inputs to bf16 moves the logits (golden vs float32 inputs): a value that vt's f16 KV "
                              "cache moves across a bf16 rounding boundary rounds the other way, by up to that much; "
                              "and Vulkan's FP8 shaders take float32 inputs"),
        }
        path = OUT / f"{name}.json"
        path.write_text(json.dumps(golden, separators=(",", ":")) + "\n", encoding="utf-8")

        oracle_logits = prompt_logits(golden_model, tok)
        print(f"{name}:")
        describe(kept)
        print(f"  golden {path.name}: {path.stat().st_size} bytes; min greedy margin {min(margins):.4f}, "
              f"{len(set(greedy))} distinct greedy tokens"
              + (f" (seed {SEEDS[name]})" if SEEDS.get(name) is not None else ""))
        print(f"  max |logit| golden (bf16 Linear inputs) - float32 activations: {rounding:.6f}; tol_logit {tol}")
        print(f"  max |logit| fp8 oracle - float32 model: {max_diff(prompt_logits(model, tok), prompt_logits(f32_model, tok)):.6f}")
        if act_model is not None:
            print(f"  max |logit| with the checkpoint's activation quantization - weight-only oracle: "
                  f"{max_diff(prompt_logits(act_model, tok), prompt_logits(model, tok)):.6f}")
        gaps = router_gaps(golden_model, tok, greedy)
        if gaps:
            print(f"  experts chosen per MoE layer {[len(u) for u, _ in gaps.values()]}, smallest router gap "
                  f"(group or expert, prompts and greedy sequence) {min(g for _, g in gaps.values()):.2e}")
            n_exp = cfg.n_routed_experts
            if min(g for _, g in gaps.values()) <= MIN_ROUTER_GAP or any(len(u) < n_exp for u, _ in gaps.values()):
                sys.exit(f"make-fp8-fixtures: {name}'s routing is not robust (gap at most {MIN_ROUTER_GAP} or "
                         f"an expert unused): try another seed (SEEDS)")
        if min(margins) <= MIN_MARGIN:
            sys.exit(f"make-fp8-fixtures: {name}'s smallest greedy margin {min(margins):.4f} is not above "
                     f"{MIN_MARGIN}: try another seed (SEEDS)")


def quiet() -> None:
    """No progress bars, load reports, or compressed_tensors' warning that 64
    columns do not divide into blocks of 128 (they are one partial block)."""
    import warnings
    os.environ.setdefault("COMPRESSED_TENSORS_LOG_DISABLED", "1")  # read when compressed_tensors is imported
    os.environ.setdefault("TQDM_DISABLE", "1")  # read when tqdm is imported
    import transformers
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    warnings.filterwarnings("ignore", message="You passed `quantization_config`")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="comma-separated subset of " + ",".join(FIXTURES))
    a = ap.parse_args()
    names = a.only.split(",") if a.only else FIXTURES
    for n in names:
        if n not in FIXTURES:
            sys.exit(f"make-fp8-fixtures: unknown fixture {n}")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    quiet()
    for n in names:
        make(n)


if __name__ == "__main__":
    main()
