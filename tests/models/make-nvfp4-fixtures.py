#!/usr/bin/env python3
"""NVFP4 Hugging Face checkpoint fixtures: the tiny llama of make-tiny-models.py
(its config and tokenizer, torch seed SEEDS[name]), and its tiny Qwen3-MoE,
with the Linear weights of their decoder layers (q/k/v/o/gate/up/down_proj,
every expert's) stored in NVFP4 (FP4 e2m1 values, an FP8 e4m3 scale per
group of 16 along each row, an F32 scale per tensor; activations not
quantized), each written by the quantization library that makes such
checkpoints; their GGUF conversions by llama.cpp's own convert_hf_to_gguf.py;
transformers' float32 logits as the goldens.

Writes, per fixture, tests/models/tiny/<name>/ (the files make-tiny-models.py's
save() writes: config.json, generation_config.json, model.safetensors,
tokenizer.json, tokenizer_config.json; plus hf_quant_config.json for ModelOpt),
tests/models/tiny/<name>.gguf (the converter's output: each NVFP4 weight as
ggml type 40 blocks of 64, 4 UE4M3 sub-block scales + 32 bytes of codes, with
a per-tensor F32 <tensor>.scale, the checkpoint's second-level scale) and
tests/models/tiny/<name>.json (the golden, in make-tiny-models.py's format,
with tol_logit / tol_logit_why: see TOL):

- llama_nvfp4_ct: compressed-tensors "nvfp4-pack-quantized", the NVFP4A16
  preset (llm-compressor's *-NVFP4A16 checkpoints; ignore ["lm_head"]): per
  quantized Linear <name>.weight_packed U8 (out, in / 2), <name>.weight_scale
  F8_E4M3 (out, in / 16), <name>.weight_global_scale F32 (1,). Made by
  compressed_tensors itself (apply_quantization_config, then the scales as
  llm-compressor's min-max weight observer computes them: the global scale
  generate_gparam(min, max) of the whole tensor = 448 * 6 / amax, shared by
  q/k/v and by gate/up as the smallest of the group
  (update_fused_layer_weight_global_scales); per group of 16, calculate_qparams
  with that global scale: e4m3(global * amax_group / 6); then
  ModelCompressor.compress_model, save_pretrained, update_config).
  Dequantized (compressed_tensors' NVFP4PackedCompressor.decompress, what
  transformers runs at load): W = bf16(f32(e2m1) * f32(f32(scale) /
  global_scale)): the group scale divided by the global scale in float32,
  times the code's value in float32, then rounded to bfloat16 (the unpacked
  codes are bfloat16 and the result is cast back to them).
- llama_nvfp4_modelopt: NVIDIA ModelOpt's unified HF checkpoint, quant_algo
  W4A16_NVFP4 (mtq.W4A16_NVFP4_CFG, max calibration, on the CPU; exported by
  modelopt.torch.export.export_hf_checkpoint): <name>.weight U8 (out, in / 2),
  <name>.weight_scale F8_E4M3 (out, in / 16), <name>.weight_scale_2 F32 ()
  (= amax / (6 * 448), the largest amax of q/k/v and of gate/up: the export
  unifies fused groups); config.json quantization_config {"quant_method":
  "modelopt", "quant_algo": "W4A16_NVFP4", ...} and hf_quant_config.json.
  Weight-only: no input_scale (ModelOpt's W4A4 NVFP4 adds <name>.input_scale).
  Dequantized (NVFP4QTensor.dequantize): W = f32(e2m1) * f32(f32(scale) *
  scale_2).
- qwen3_moe_nvfp4_ct: make-tiny-models.py's qwen3_moe (2 layers, 8 experts,
  2 used) with experts of 64 (moe_intermediate_size 64, not 32: ggml's NVFP4
  rows are whole blocks of 64, and 32 is down_proj's row), as
  llama_nvfp4_ct: attention projections and every expert's gate/up/down_proj
  stored per expert as the saved checkpoint names them
  (model.layers.N.mlp.experts.E.gate_proj.weight_packed, ...), each expert
  its own global scale (gate and up of one expert share theirs, as
  llm-compressor fuses them); routers (mlp.gate) and lm_head float32, in
  ignore. transformers 5 keeps the experts fused (not nn.Linear), out of
  apply_quantization_config's reach: the saved float32 tensors are compressed
  one at a time by compressed_tensors' own functions (ct_compress_tensors:
  generate_gparam, calculate_qparams, NVFP4PackedCompressor.compress; the
  same bytes as the model path where that path reaches, the attention:
  checked), config.json's quantization_config is the model path's. The
  converter stacks each layer's experts into ffn_{gate,up,down}_exps.weight
  NVFP4 (ne [n_in, n_out, 8]) with ffn_*_exps.scale F32 [8], one factor per
  expert, float32(1 / global_scale), all different (checked).
All: two e2m1 codes per byte, element 2i in the low nibble and 2i + 1 in the
high one; a code's bit 3 is the sign, bits 0-2 index 0, 0.5, 1, 1.5, 2, 3, 4,
6 (code 8: -0.0 in compressed-tensors' decoding, +0.0 in ModelOpt's table);
the e4m3 scales are positive (sign bit 0: checked; the converter keeps their
low 7 bits as ggml's UE4M3).

The oracles: llama_nvfp4_ct is transformers' own load of the folder,
CompressedTensorsConfig(dequantize=True), float32, plain nn.Linear modules
(nothing quantizes the activations); llama_nvfp4_modelopt is transformers'
float32 Llama (the model the checkpoint was quantized from) with each
quantized weight replaced by modelopt's own NVFP4QTensor.dequantize of the
exported tensors (transformers 5.25 has no ModelOpt quantizer: from_pretrained
ignores the quantization_config and fails on the packed shapes; modelopt's
own fake-quantized model cannot run either: its NVFP4 block quantizer wants
CUDA, while its max calibration of the weights and its export run on the
CPU); qwen3_moe_nvfp4_ct is transformers' float32 Qwen3-MoE with each
quantized weight (an expert's: its slice of the fused gate_up_proj /
down_proj) replaced by compressed_tensors' NVFP4PackedCompressor.decompress
of its tensors (transformers' own load of the folder is no oracle: it gives
the attention the same weights, bit for bit, but the experts in bfloat16
without their global scale, its CompressedTensorsDequantize expert path
dropping weight_global_scale: checked, check_hf_moe_load). Every quantized
weight is checked bit for bit against this script's
numpy decoding (the rules above), every other weight against the float32
model; ModelOpt's
export is also checked equal, bit for bit, to its quantizer's round trip
(NVFP4QTensor.quantize then dequantize of the float32 weight with the
exported scale_2). Each GGUF is checked against its folder: every NVFP4
block's codes and scales decode (ggml's rule, with the converter's q/k row
permutation for Llama) to the checkpoint's e2m1 x e4m3 values exactly, and
<tensor>.scale (an expert's entry of ffn_*_exps.scale) is scale_2 (ModelOpt)
or float32(1 / global_scale) (compressed-tensors).

llama.cpp's logits on each GGUF come from the tiny-logits driver of
tests/models/llama-cpp-tiny-logits.py through make-mxfp4-fixtures.py's
llama_cpp_golden, and are compared with the goldens (and, with --avx2-lib, the
same driver on an AVX2-only libggml-cpu against the native AVX-512 one).
Measured when this was written: llama.cpp 0.060 (compressed-tensors) and
0.053 (ModelOpt) max |logit| from the goldens, greedy 32/32 both, AVX2 vs
AVX-512 below 1e-6; compressed-tensors' bfloat16 rounding moves the goldens
0.015 from the exact decoding (ModelOpt's float32 one 2e-6); NVFP4 itself
moves logits 0.89 and 1.0 from the float32 models. qwen3_moe_nvfp4_ct:
llama.cpp 0.045 from the goldens, greedy 32/32, AVX2 vs AVX-512 below 1e-6,
bfloat16 0.014, NVFP4 1.08; its seed is chosen so that llama.cpp picks the
golden's experts at every token (see SEEDS: most seeds fail that), checked
on an emulation of llama.cpp's reading (q8_0_activations). See TOL.

Run from the repository root (deterministic; CPU only; re-runnable):
    /work/oracle-venv/bin/python tests/models/make-nvfp4-fixtures.py \\
        --llama-cpp /work/llama-sdist/vendor/llama.cpp \\
        --driver ~/.cache/vt/llama.cpp-build-tiny/tiny-logits \\
        [--avx2-lib ~/.cache/vt/llama.cpp-build-tiny-avx2/bin] [--only NAME,...]
with torch, transformers==5.25.0, compressed-tensors==0.20.1,
nvidia-modelopt==0.47.0 (and requests, which it imports), accelerate and
safetensors. The AVX2 library: the same llama.cpp tree configured with
-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
-DGGML_BMI2=ON -DBUILD_SHARED_LIBS=ON, target ggml-cpu (LD_LIBRARY_PATH puts
it before the driver's runpath). torch runs here only: CI reads the committed
fixtures.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import importlib.util
import io
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _load(name: str, file: str):
    spec = importlib.util.spec_from_file_location(name, HERE / file)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


TM = _load("make_tiny_models", "make-tiny-models.py")
MX = _load("make_mxfp4_fixtures", "make-mxfp4-fixtures.py")  # llama_cpp_golden
FP8 = _load("make_fp8_fixtures", "make-fp8-fixtures.py")
prompt_logits, max_diff = FP8.prompt_logits, FP8.max_diff  # every prompt's logits; their largest difference
OUT = TM.OUT
# qwen3_moe_nvfp4_ct's float32 model: make-tiny-models.py's qwen3_moe with
# experts of 64 (its 32 is not a whole ggml NVFP4 block of 64 along
# down_proj's rows; every other quantized input, 64 or 128, is).
MOE_BASE = "qwen3_moe_nvfp4"
TM.CONFIGS[MOE_BASE] = TM.CONFIGS["qwen3_moe"][:2] + (dict(TM.CONFIGS["qwen3_moe"][2], moe_intermediate_size=64),)
# The float32 model each fixture quantizes (TM.CONFIGS[BASES[name]], seed SEEDS[name]).
BASES = {"llama_nvfp4_ct": "llama", "llama_nvfp4_modelopt": "llama", "qwen3_moe_nvfp4_ct": MOE_BASE}
FIXTURES = ["llama_nvfp4_ct", "llama_nvfp4_modelopt", "qwen3_moe_nvfp4_ct"]
CT = {"llama_nvfp4_ct", "qwen3_moe_nvfp4_ct"}  # the compressed-tensors fixtures
# The torch seed of the float32 model (make-tiny-models.py's
# build(BASES[name], seed=)), found by trying: the llama seed (1234) gives smallest greedy
# margins of 0.016 (compressed-tensors) and 0.013 (ModelOpt); of seeds 1234
# to 2299 with 6 or more distinct greedy tokens, compressed-tensors' best by
# smallest margin are 1877 (0.069, 6 tokens), 1884, 1407, 1281, 2072 (0.050,
# 20 tokens) and 1955 (0.048, 20 tokens); ModelOpt gives 0.054 on 2072 and
# 0.048 on 1955. One each, so that the two layouts carry different weights.
# qwen3_moe_nvfp4_ct: the expert choices must survive NVFP4's readers, and
# they are fragile: llama.cpp's Q8_0 activations and the goldens' bfloat16
# weights move the routers' logits by 0.005 to 0.01 (median; a few % of their
# spread: the attention's softmax amplifies the Q8_0 noise), so that most
# seeds have some token of the prompts or the greedy run (two routers, 374
# choices) whose experts llama.cpp picks differently, its logits then 0.5 to 0.7
# off (qwen3_moe's seed 1590: 8 such; probability gaps of 2e-3 were seen to
# flip). Of seeds 2000 to 12999, 166 have every prompt's router top-k gap
# above MIN_ROUTER_GAP, 31 of them with every choice of llama.cpp's the
# golden's (emulated, q8_0_activations); of those, with a smallest greedy
# margin above 0.015: 2022 (an expert of layer 1 never chosen), 2319 (3
# greedy tokens; llama.cpp's greedy agreed at 1/32 steps), 2990 (two never
# chosen), 3438 and 3933 (llama.cpp's choices kept by 7e-5 and 1.3e-4 only),
# 7524 (4 greedy tokens) and 8158: 11 greedy tokens, margin 0.020, every
# expert of both layers chosen, llama.cpp's choices kept by a probability
# margin of 7.6e-4 at least.
SEEDS: dict[str, int] = {"llama_nvfp4_ct": 2072, "llama_nvfp4_modelopt": 1955, "qwen3_moe_nvfp4_ct": 8158}
MIN_MARGIN = 0.01
# A mixture's seed: every router top-k gap (the k-th minus the next expert's
# probability) over the prompts above MIN_ROUTER_GAP, and llama.cpp's
# reading (emulated, q8_0_activations: it gives llama.cpp's logits to 1e-6
# on 8158) keeping the golden's choices, over the prompts and the greedy run,
# by more than MIN_ROUTER_KEEP (vt reads NVFP4 as llama.cpp does, Q8_0
# activations: its choices are llama.cpp's but for float rounding).
MIN_ROUTER_GAP = 1e-3
MIN_ROUTER_KEEP = 1e-4
GROUP = 16
QUANTIZED = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
GGUF_NAME = {"q_proj": "attn_q", "k_proj": "attn_k", "v_proj": "attn_v", "o_proj": "attn_output",
             "gate_proj": "ffn_gate", "up_proj": "ffn_up", "down_proj": "ffn_down"}
E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
GGML_NVFP4 = 40
MODELOPT_FILES = ["config.json", "generation_config.json", "hf_quant_config.json", "model.safetensors"]
# tol_logit per fixture: twice the larger of llama.cpp's max |logit|
# difference from the golden (ggml's NVFP4 matmul takes Q8_0 activations,
# transformers float32 ones) and llama.cpp AVX2 vs AVX-512 (the driver with
# --avx2-lib), measured when this was written (make() checks that the
# measurement still fits). Measured: compressed-tensors 0.0598 (0.0577 from
# the exact decoding: the goldens' bfloat16 weights move logits 0.015),
# ModelOpt 0.0529, Qwen3-MoE 0.0453 (0.039 from the exact decoding); AVX2
# vs AVX-512 below 1e-6 on all three (on the llama seed 1234 it was 0.023:
# float noise flipping a Q8_0 rounding). Against that, NVFP4 moves logits
# 0.89, 1.0 and 1.08 from the float32 models.
TOL: dict[str, tuple[float, str]] = {
    "qwen3_moe_nvfp4_ct": (0.091, (
        "llama.cpp reads NVFP4 with Q8_0 activations, transformers runs float32 on compressed-tensors' "
        "dequantization (bfloat16 weights, 0.014 of it); every expert choice the same (seed chosen for it): "
        "llama.cpp measured 0.045 from these goldens, AVX2 vs AVX-512 below 1e-6 (make-nvfp4-fixtures.py); "
        "twice 0.045")),
    "llama_nvfp4_ct": (0.12, (
        "llama.cpp reads NVFP4 with Q8_0 activations, transformers dequantizes (compressed-tensors rounds the "
        "weights to bfloat16, 0.015 of it) and runs float32: llama.cpp measured 0.060 from these goldens, AVX2 vs "
        "AVX-512 below 1e-6 (make-nvfp4-fixtures.py); twice 0.060")),
    "llama_nvfp4_modelopt": (0.106, (
        "llama.cpp reads NVFP4 with Q8_0 activations, the goldens are float32 with modelopt's dequantized weights: "
        "llama.cpp measured 0.053 from them, AVX2 vs AVX-512 below 1e-6 (make-nvfp4-fixtures.py); twice 0.053")),
}


def is_quantized(name: str) -> bool:
    """A decoder layer's Linear weight (the tensors the fixtures store in NVFP4)."""
    return ".layers." in name and name.endswith(tuple(f".{p}.weight" for p in QUANTIZED))


def quantized_names(model) -> list[str]:
    return [n for n, _ in model.named_parameters() if is_quantized(n)]


# --- the format, in numpy ------------------------------------------------------

def e2m1_codes(packed):
    """(rows, 2 * bytes) uint8 codes of packed (rows, bytes) uint8: element 2i
    in the low nibble, 2i + 1 in the high one."""
    import numpy as np
    p = np.asarray(packed, dtype=np.uint8)
    return np.stack([p & 15, p >> 4], -1).reshape(p.shape[0], -1)


def e2m1_values(codes, negative_zero: bool = True):
    """float32 values of e2m1 codes (bit 3 the sign): code 8 is -0.0
    (compressed-tensors' unpacking) or +0.0 (ModelOpt's table)."""
    import numpy as np
    lut = np.array(E2M1 + [-v for v in E2M1], dtype=np.float32)
    if not negative_zero:
        lut[8] = 0.0
    return lut[codes]


def per_element(scale, cols: int):
    """A per-group (rows, cols / 16) array repeated over its 16 columns."""
    import numpy as np
    assert scale.shape[1] * GROUP == cols
    return np.repeat(scale, GROUP, axis=1)


def dequantize_ct(packed, scale, global_scale):
    """compressed-tensors' rule: bf16(f32(e2m1) * f32(f32(scale) / global_scale))."""
    import numpy as np
    import torch
    v = e2m1_values(e2m1_codes(packed))
    s = scale.to(torch.float32).numpy() / np.float32(global_scale.to(torch.float32).numpy().reshape(()))
    w = v * per_element(s.astype(np.float32), v.shape[1])
    return torch.from_numpy(w.astype(np.float32)).to(torch.bfloat16).to(torch.float32).numpy()


def dequantize_modelopt(packed, scale, scale_2):
    """ModelOpt's rule: f32(e2m1) * f32(f32(scale) * scale_2), code 8 +0.0."""
    import numpy as np
    import torch
    v = e2m1_values(e2m1_codes(packed), negative_zero=False)
    s = scale.to(torch.float32).numpy() * np.float32(scale_2.to(torch.float32).numpy().reshape(()))
    return (v * per_element(s.astype(np.float32), v.shape[1])).astype(np.float32)


def same_bits(a, b) -> bool:
    import numpy as np
    a, b = np.ascontiguousarray(a, dtype=np.float32), np.ascontiguousarray(b, dtype=np.float32)
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def check_scale_signs(st: dict, suffix: str) -> None:
    """Every stored e4m3 group scale is positive (sign bit clear)."""
    import torch
    for k, v in st.items():
        if k.endswith(suffix):
            assert v.dtype == torch.float8_e4m3fn, k
            assert not (v.view(torch.uint8) & 0x80).any(), k


# --- llama_nvfp4_ct: compressed-tensors ----------------------------------------

def fuse_global_scales(model) -> None:
    """llm-compressor's update_fused_layer_weight_global_scales: q/k/v share
    the smallest of their global scales, and so do gate/up (vLLM runs each
    group as one matrix)."""
    import torch
    for n, m in model.named_modules():
        for group in (("q_proj", "k_proj", "v_proj"), ("gate_proj", "up_proj")):
            if all(hasattr(m, p) for p in group):
                mods = [getattr(m, p) for p in group]
                g = torch.min(torch.cat([x.weight_global_scale.data for x in mods])).reshape([1])
                for x in mods:
                    x.weight_global_scale.copy_(g)


def ct_compress_model(f32_model, ignore: list[str]):
    """compressed_tensors' own model path: a copy of the float32 model
    quantized (NVFP4A16, targets Linear, but ignore) and compressed in memory;
    (the model, its quantized modules by name, the ModelCompressor)."""
    import torch
    from compressed_tensors.compressors import ModelCompressor
    from compressed_tensors.quantization import (QuantizationConfig, QuantizationStatus, apply_quantization_config,
                                                 preset_name_to_scheme)
    from compressed_tensors.quantization.utils import calculate_qparams, generate_gparam
    model = copy.deepcopy(f32_model)
    cfg = QuantizationConfig(config_groups={"group_0": preset_name_to_scheme("NVFP4A16", ["Linear"])},
                             ignore=ignore)
    apply_quantization_config(model, cfg, show_progress=False)
    targets = {n: m for n, m in model.named_modules() if getattr(m, "quantization_scheme", None) is not None}
    with torch.no_grad():
        for m in targets.values():  # the observer's global scale: min and max of the whole tensor
            w = m.weight.detach()
            m.weight_global_scale.copy_(generate_gparam(w.amin(), w.amax()))
        fuse_global_scales(model)
        for m in targets.values():  # per group of 16: min and max, with the global scale
            args = m.quantization_scheme.weights
            assert args.group_size == GROUP and args.strategy == "tensor_group"
            g = m.weight.detach().reshape(m.weight.shape[0], -1, GROUP)
            scale, _ = calculate_qparams(g.amin(-1), g.amax(-1), args, global_scale=m.weight_global_scale)
            m.weight_scale.copy_(scale)
            m.quantization_status = QuantizationStatus.FROZEN
    compressor = ModelCompressor.from_pretrained_model(model)
    compressor.compress_model(model)
    return model, targets, compressor


def save_ct(f32_model, folder: Path) -> None:
    """The float32 model quantized (NVFP4A16) and saved by compressed_tensors."""
    model, targets, compressor = ct_compress_model(f32_model, ["lm_head"])
    assert sorted(n + ".weight" for n in targets) == sorted(quantized_names(f32_model)), sorted(targets)
    model.save_pretrained(folder, safe_serialization=True)
    compressor.update_config(str(folder))


def load_ct_oracle(folder: Path, f32_model):
    """transformers' load, weights decompressed at load, plain nn.Linear
    modules; its weights checked bit for bit against dequantize_ct."""
    import torch
    import transformers
    from safetensors.torch import load_file
    model = transformers.LlamaForCausalLM.from_pretrained(
        folder, quantization_config=transformers.CompressedTensorsConfig(dequantize=True),
        dtype=torch.float32).eval()
    for n, m in model.named_modules():
        if isinstance(m, torch.nn.Linear):
            assert type(m) is torch.nn.Linear and not hasattr(m, "quantization_scheme") and "forward" not in vars(m), n
    st = load_file(folder / "model.safetensors")
    check_scale_signs(st, ".weight_scale")
    want = {}
    for n in quantized_names(f32_model):
        base = n.removesuffix(".weight")
        packed, scale, gs = st[base + ".weight_packed"], st[base + ".weight_scale"], st[base + ".weight_global_scale"]
        assert packed.dtype == torch.uint8 and gs.dtype == torch.float32 and gs.shape == (1,), n
        want[n] = dequantize_ct(packed, scale, gs)
    check_weights(model, f32_model, want, st)
    return model


# --- qwen3_moe_nvfp4_ct: compressed-tensors, experts stored per expert ---------

FUSED = (("q_proj", "k_proj", "v_proj"), ("gate_proj", "up_proj"))
EXPERT_RE = r"(.*\.mlp\.experts)\.(\d+)\.(gate_proj|up_proj|down_proj)\.weight$"


def ct_scheme():
    """The NVFP4A16 preset's scheme (targets Linear), as llm-compressor writes it."""
    from compressed_tensors.quantization import preset_name_to_scheme
    return preset_name_to_scheme("NVFP4A16", ["Linear"])


def ct_global_scales(st: dict, names: list[str]) -> dict:
    """Each named tensor's global scale as ct_compress_model computes it: the
    observer's generate_gparam(min, max) of the whole tensor, then the
    smallest of its module's fused group (fuse_global_scales: q/k/v of an
    attention, gate/up of one expert; each expert its own)."""
    import torch
    from compressed_tensors.quantization.utils import generate_gparam
    own = {n: generate_gparam(st[n].amin(), st[n].amax()) for n in names}
    fused = {}
    for n in names:
        prefix, proj = n.rsplit(".", 2)[0], n.split(".")[-2]
        group = next((g for g in FUSED if proj in g), (proj,))
        members = [f"{prefix}.{p}.weight" for p in group if f"{prefix}.{p}.weight" in own]
        fused[n] = torch.min(torch.cat([own[m] for m in members])).reshape([1])
    return fused


def ct_compress_tensors(st: dict, names: list[str]) -> dict:
    """The named float32 checkpoint tensors in NVFP4A16 by compressed_tensors'
    own functions, one tensor at a time (what ct_compress_model does per
    module: global scales as ct_global_scales, per group of 16
    calculate_qparams with the global scale, NVFP4PackedCompressor.compress):
    <name>.weight_packed, .weight_scale, .weight_global_scale of each."""
    from compressed_tensors.compressors.nvfp4.base import NVFP4PackedCompressor
    from compressed_tensors.quantization.utils import calculate_qparams
    scheme = ct_scheme()
    args = scheme.weights
    assert args.group_size == GROUP and args.strategy == "tensor_group"
    gs = ct_global_scales(st, names)
    out = {}
    for n in names:
        w = st[n]
        g = w.reshape(w.shape[0], -1, GROUP)
        scale, _ = calculate_qparams(g.amin(-1), g.amax(-1), args, global_scale=gs[n])
        sd = NVFP4PackedCompressor.compress({"weight": w, "weight_scale": scale, "weight_global_scale": gs[n]}, scheme)
        assert sorted(sd) == ["weight_global_scale", "weight_packed", "weight_scale"], sorted(sd)
        out.update({n.removesuffix("weight") + k: v for k, v in sd.items()})
    return out


def checkpoint_view(params: dict, n: str, cfg):
    """The slice of a model parameter that checkpoint tensor n loads into:
    itself, or for a Qwen3-MoE expert's projection (transformers 5 keeps the
    experts fused) gate_up_proj[e, :I] (gate), gate_up_proj[e, I:] (up) or
    down_proj[e]."""
    m = re.match(EXPERT_RE, n)
    if m is None:
        return params[n]
    prefix, e, proj = m.group(1), int(m.group(2)), m.group(3)
    if proj == "down_proj":
        return params[prefix + ".down_proj"][e]
    i = cfg.moe_intermediate_size
    return params[prefix + ".gate_up_proj"][e, :i] if proj == "gate_proj" else params[prefix + ".gate_up_proj"][e, i:]


def save_ct_moe(f32_model, folder: Path) -> None:
    """The saved float32 Qwen3-MoE folder rewritten in NVFP4A16: every
    attention projection and every expert's gate/up/down_proj, per expert as
    the checkpoint stores them, compressed by ct_compress_tensors (bytes
    checked equal to compressed_tensors' model path, ct_compress_model, on the
    modules that path reaches: the attention's nn.Linear; the fused experts
    are not nn.Linear), routers (mlp.gate) and lm_head kept float32;
    config.json's quantization_config is that path's (ModelCompressor's
    update_config): the preset's group, targets Linear, format
    nvfp4-pack-quantized, and ignore, which the library lists from the
    modules left out that vLLM counts as Linear (get_vllm_module_type: the
    routers too): ["model.layers.0.mlp.gate", "model.layers.1.mlp.gate",
    "lm_head"]."""
    import torch
    from safetensors.torch import load_file, save_file
    cfg = f32_model.config
    path = folder / "model.safetensors"
    st = load_file(path)
    names = quantized_names_of(cfg)
    assert sorted(names) == sorted(k for k in st if is_quantized(k)), sorted(st)
    params = dict(f32_model.named_parameters())
    for n in names:  # the checkpoint's per-expert tensors are the model's fused slices
        assert st[n].dtype == torch.float32 and torch.equal(st[n], checkpoint_view(params, n, cfg)), n
    out = ct_compress_tensors(st, names)
    ignore = [f"model.layers.{i}.mlp.gate" for i in range(cfg.num_hidden_layers)] + ["lm_head"]
    model, targets, compressor = ct_compress_model(f32_model, ignore)
    assert sorted(n + ".weight" for n in targets) == sorted(n for n in names if ".self_attn." in n), sorted(targets)
    for n, m in targets.items():
        for k in ("weight_packed", "weight_scale", "weight_global_scale"):
            a, b = getattr(m, k).detach(), out[f"{n}.{k}"]
            assert a.dtype == b.dtype and torch.equal(a.view(torch.uint8), b.view(torch.uint8)), (n, k)
    for i in range(cfg.num_hidden_layers):  # each expert its own global scale (gate and up share one)
        for proj in ("gate_proj", "up_proj", "down_proj"):
            g = [float(out[f"model.layers.{i}.mlp.experts.{e}.{proj}.weight_global_scale"])
                 for e in range(cfg.num_experts)]
            assert len(set(g)) == cfg.num_experts, (i, proj, g)
    tensors = {k: v for k, v in st.items() if k not in names}
    tensors.update(out)
    save_file(tensors, path, metadata={"format": "pt"})
    assert compressor.quantization_config.ignore == ignore, compressor.quantization_config.ignore
    compressor.update_config(str(folder))


def load_ct_moe_oracle(folder: Path, f32_model):
    """The float32 model with each quantized weight replaced by
    compressed_tensors' decompression of its checkpoint tensors
    (NVFP4PackedCompressor.decompress, checked bit for bit against
    dequantize_ct); transformers' own load of the folder compared with it
    (check_hf_moe_load: not the oracle, its experts are wrong)."""
    import torch
    from compressed_tensors.compressors.nvfp4.base import NVFP4PackedCompressor
    from safetensors.torch import load_file
    cfg = f32_model.config
    st = load_file(folder / "model.safetensors")
    check_scale_signs(st, ".weight_scale")
    scheme = ct_scheme()
    model = copy.deepcopy(f32_model)
    params = dict(model.named_parameters())
    want = {}
    with torch.no_grad():
        for n in quantized_names_of(cfg):
            base = n.removesuffix("weight")
            packed, scale, gs = st[base + "weight_packed"], st[base + "weight_scale"], st[base + "weight_global_scale"]
            assert packed.dtype == torch.uint8 and gs.dtype == torch.float32 and gs.shape == (1,), n
            w = NVFP4PackedCompressor.decompress(
                {"weight_packed": packed, "weight_scale": scale, "weight_global_scale": gs}, scheme)["weight"]
            w = w.to(torch.float32)
            want[n] = dequantize_ct(packed, scale, gs)
            assert same_bits(w.numpy(), want[n]), n
            checkpoint_view(params, n, cfg).copy_(w)
    check_weights_moe(model, f32_model, want, st)
    check_hf_moe_load(folder, model, want, st)
    return model


def check_hf_moe_load(folder: Path, oracle, want: dict, st: dict) -> None:
    """transformers 5.25's own load of the folder (CompressedTensorsConfig(
    dequantize=True), float32): every weight but the experts' is the
    oracle's, bit for bit; its experts come out in bfloat16 and without their
    global scale, each bf16(e2m1 x e4m3) (its CompressedTensorsDequantize
    decompresses fused experts through a module holding weight_packed,
    weight_scale and weight_shape only), thousands of times too large. Prints
    which (a later transformers may load them right)."""
    import torch
    import transformers
    cfg = oracle.config
    hf = transformers.Qwen3MoeForCausalLM.from_pretrained(
        folder, quantization_config=transformers.CompressedTensorsConfig(dequantize=True), dtype=torch.float32).eval()
    got, ref = dict(hf.named_parameters()), dict(oracle.named_parameters())
    experts = {"same as the oracle": 0, "without their global scale, bfloat16": 0, "other": 0}
    for n in want:
        g = checkpoint_view(got, n, cfg).detach()
        if not re.match(EXPERT_RE, n):
            assert g.dtype == torch.float32 and same_bits(g.numpy(), want[n]), n
            continue
        b = n.removesuffix("weight")
        bare = dequantize_ct(st[b + "weight_packed"], st[b + "weight_scale"], torch.ones(1))
        if g.dtype == torch.float32 and same_bits(g.numpy(), want[n]):
            experts["same as the oracle"] += 1
        elif g.dtype == torch.bfloat16 and same_bits(g.float().numpy(), bare):
            experts["without their global scale, bfloat16"] += 1
        else:
            experts["other"] += 1
    held = {n for n in got if n.endswith(("mlp.experts.gate_up_proj", "mlp.experts.down_proj"))}
    for n, p in ref.items():
        if n not in held and not is_quantized(n):
            assert got[n].dtype == torch.float32 and torch.equal(got[n].detach(), p.detach()), n
    print("  transformers' load (CompressedTensorsConfig(dequantize=True)): attention and unquantized weights the "
          "oracle's bit for bit; expert projections: "
          + ", ".join(f"{k} {v}" for k, v in experts.items() if v) + f" (of {sum(experts.values())})")


def check_weights_moe(model, f32_model, want: dict, st: dict) -> None:
    """check_weights for checkpoint names: every quantized tensor's slice of
    the oracle equals want (bit for bit) and moved from the float32 model;
    every parameter that holds none equals the float32 model's (and the
    checkpoint's float32 tensor)."""
    import torch
    cfg = f32_model.config
    got, ref = dict(model.named_parameters()), dict(f32_model.named_parameters())
    assert sorted(got) == sorted(ref)
    holders = set()
    for n, w in want.items():
        g, p = checkpoint_view(got, n, cfg).detach(), checkpoint_view(ref, n, cfg).detach()
        assert g.dtype == torch.float32 and same_bits(g.numpy(), w), n
        assert not torch.equal(g, p), n
        m = re.match(EXPERT_RE, n)
        holders.add(n if m is None else m.group(1) + (".down_proj" if m.group(3) == "down_proj" else ".gate_up_proj"))
    assert {n for n in got if n.endswith(("mlp.experts.gate_up_proj", "mlp.experts.down_proj"))} <= holders
    for n, p in ref.items():
        if n in holders:
            continue
        assert n in st and st[n].dtype == torch.float32 and torch.equal(st[n], p.detach()), n
        assert torch.equal(got[n].detach(), p.detach()), n


# --- llama_nvfp4_modelopt: NVIDIA ModelOpt ---------------------------------------

def save_modelopt(f32_model, tok, folder: Path) -> None:
    """The float32 model quantized by modelopt (W4A16_NVFP4_CFG, max
    calibration over the golden prompts) and exported by export_hf_checkpoint;
    its config.json, generation_config.json, hf_quant_config.json and
    model.safetensors replace the folder's."""
    import torch
    import modelopt.torch.quantization as mtq
    from modelopt.torch.export import export_hf_checkpoint
    model = copy.deepcopy(f32_model)

    def forward_loop(m):
        with torch.no_grad():
            for text in TM.PROMPTS:
                m(torch.tensor([tok(text, add_special_tokens=False)["input_ids"]]))

    with contextlib.redirect_stdout(io.StringIO()):
        model = mtq.quantize(model, mtq.W4A16_NVFP4_CFG, forward_loop)
    on = sorted(n + ".weight" for n, m in model.named_modules()
                if getattr(getattr(m, "weight_quantizer", None), "is_enabled", False))
    assert on == sorted(quantized_names(f32_model)), on
    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(io.StringIO()):
        # dtype given: the config's "float32" string is not a torch dtype
        export_hf_checkpoint(model, dtype=torch.float32, export_dir=tmp)
        files = sorted(p.name for p in Path(tmp).iterdir())
        assert files == MODELOPT_FILES, files
        for f in files:
            shutil.copyfile(Path(tmp) / f, folder / f)


def load_modelopt_oracle(folder: Path, f32_model):
    """The float32 model with each quantized weight replaced by modelopt's
    NVFP4QTensor.dequantize of the exported tensors, checked bit for bit
    against dequantize_modelopt and against modelopt's quantizer round trip
    (NVFP4QTensor.quantize of the float32 weight with the exported scale_2,
    then dequantize)."""
    import torch
    from modelopt.torch.quantization.qtensor import NVFP4QTensor
    from safetensors.torch import load_file
    st = load_file(folder / "model.safetensors")
    check_scale_signs(st, ".weight_scale")
    model = copy.deepcopy(f32_model)
    params = dict(model.named_parameters())
    ref = dict(f32_model.named_parameters())
    want = {}
    with torch.no_grad():
        for n in quantized_names(f32_model):
            packed, scale, scale_2 = st[n], st[n + "_scale"], st[n + "_scale_2"]
            assert packed.dtype == torch.uint8 and scale_2.dtype == torch.float32 and scale_2.dim() == 0, n
            kw = dict(scale=scale, double_scale=scale_2, block_sizes={-1: GROUP})
            w = NVFP4QTensor(params[n].shape, torch.float32, packed).dequantize(dtype=torch.float32, **kw)
            q, s, s2 = NVFP4QTensor.quantize(ref[n].detach().clone(), GROUP, weights_scaling_factor_2=scale_2)
            assert torch.equal(q._quantized_data, packed) and torch.equal(s.view(torch.uint8), scale.view(torch.uint8)), n
            assert same_bits(q.dequantize(dtype=torch.float32, **kw).numpy(), w.numpy()), n
            params[n].copy_(w)
            want[n] = dequantize_modelopt(packed, scale, scale_2)
    check_weights(model, f32_model, want, st)
    return model


# --- shared checks and output ------------------------------------------------

def check_weights(model, f32_model, want: dict, st: dict) -> None:
    """Every quantized weight of the oracle equals want (bit for bit) and moved
    from the float32 model; every other parameter equals the float32 model's
    (and the checkpoint's float32 tensor)."""
    import torch
    got = dict(model.named_parameters())
    assert sorted(got) == sorted(n for n, _ in f32_model.named_parameters())
    moved = 0
    for n, p in f32_model.named_parameters():
        g = got[n].detach()
        assert g.dtype == torch.float32, n
        if is_quantized(n):
            assert same_bits(g.numpy(), want[n]), n
            moved += int(not torch.equal(g, p.detach()))
        else:
            assert n in st and st[n].dtype == torch.float32 and torch.equal(st[n], p.detach()), n
            assert torch.equal(g, p.detach()), n
    assert moved == len(want) == sum(is_quantized(n) for n in got), moved


def exact_f32_model(f32_model, folder: Path, name: str):
    """The float32 model with the quantized weights decoded exactly
    (float64 e2m1 x e4m3 / global_scale or x scale_2, then float32): to print
    how far the library's roundings move the logits."""
    import numpy as np
    import torch
    from safetensors.torch import load_file
    st = load_file(folder / "model.safetensors")
    model = copy.deepcopy(f32_model)
    params = dict(model.named_parameters())
    with torch.no_grad():
        for n in quantized_names_of(f32_model.config):
            if name in CT:
                base = n.removesuffix(".weight")
                packed, scale = st[base + ".weight_packed"], st[base + ".weight_scale"]
                mul = 1.0 / float(st[base + ".weight_global_scale"])
            else:
                packed, scale, mul = st[n], st[n + "_scale"], float(st[n + "_scale_2"])
            v = e2m1_values(e2m1_codes(packed)).astype(np.float64)
            w = v * per_element(scale.to(torch.float64).numpy(), v.shape[1]) * mul
            checkpoint_view(params, n, f32_model.config).copy_(torch.from_numpy(w.astype(np.float32)))
    return model


def describe(folder: Path) -> None:
    from safetensors import safe_open
    qc = json.loads((folder / "config.json").read_text(encoding="utf-8"))["quantization_config"]
    print("  config.json quantization_config: " + json.dumps(qc))
    if (folder / "hf_quant_config.json").is_file():
        print("  hf_quant_config.json: " + json.dumps(json.loads((folder / "hf_quant_config.json").read_text())))
    with safe_open(folder / "model.safetensors", "pt") as f:
        for k in sorted(f.keys()):
            if ".layers." in k and ".layers.0." not in k:
                continue
            sl = f.get_slice(k)
            print(f"    {k}  {sl.get_dtype()}  {list(sl.get_shape())}")
    files = sorted(folder.iterdir())
    print(f"  folder: {sum(p.stat().st_size for p in files)} bytes in "
          + ", ".join(f"{p.name} ({p.stat().st_size})" for p in files))


# --- the GGUF ------------------------------------------------------------------

def ue4m3_half(d):
    """ggml_ue4m3_to_fp32 (float64): an unsigned e4m3 byte's value times 0.5
    (ggml's kvalues are twice the e2m1 values); 0 and 0x7F give 0."""
    import numpy as np
    d = np.asarray(d, dtype=np.int64)
    e, m = (d >> 3) & 15, d & 7
    raw = np.where(e == 0, m * 2.0 ** -9, (1.0 + m / 8.0) * np.exp2(e - 7.0))
    return np.where((d == 0) | (d == 0x7F), 0.0, raw) * 0.5


def decode_ggml_nvfp4(raw, rows: int, cols: int):
    """float64 (rows, cols) of ggml NVFP4 blocks (rows, cols / 64 * 36):
    per block 4 UE4M3 scales, then per sub-block of 16 eight bytes, byte j
    holding element j (low nibble) and j + 8 (high nibble)."""
    import numpy as np
    b = np.asarray(raw, dtype=np.uint8).reshape(rows, cols // 64, 36)
    d, qs = b[..., :4], b[..., 4:].reshape(rows, cols // 64, 4, 8)
    codes = np.concatenate([qs & 15, qs >> 4], axis=-1)  # (rows, blocks, 4, 16)
    kvalues = np.array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12], dtype=np.float64)
    return (kvalues[codes] * ue4m3_half(d)[..., None]).reshape(rows, cols)


def permute_rows(w, n_head: int):
    """The converter's LlamaModel.permute of q/k rows (rope pairs)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def check_gguf(gguf, path: Path, folder: Path, name: str, cfg) -> None:
    """Each quantized weight is an NVFP4 tensor whose blocks decode to the
    checkpoint's e2m1 x e4m3 values (Llama's q/k rows permuted as the
    converter does), with <tensor>.scale F32 [1] = scale_2 (ModelOpt) or
    float32(1 / global_scale) (compressed-tensors); a mixture's experts
    stacked into blk.N.ffn_<proj>_exps.weight, ne [n_in, n_out, n_expert],
    with ffn_<proj>_exps.scale F32 [n_expert] = each expert's factor (all
    different); no .input_scale (weight-only checkpoints); every other tensor
    F32. Prints layer 0's tensors."""
    import numpy as np
    import torch
    from safetensors.torch import load_file
    st = load_file(folder / "model.safetensors")
    r = gguf.GGUFReader(str(path))
    tensors = {t.name: t for t in r.tensors}
    print(f"  {path.name}: {path.stat().st_size} bytes; layer 0 and the rest (ggml type, ne):")
    for t in r.tensors:
        if not t.name.startswith("blk.") or t.name.startswith("blk.0."):
            extra = (" = " + ", ".join(f"{float(v):.9g}" for v in t.data)) if t.name.endswith(".scale") else ""
            print(f"    {t.name}  {t.tensor_type.name} ({int(t.tensor_type)})  {[int(x) for x in t.shape]}{extra}")
    seen = set()
    for n in quantized_names_of(cfg):
        layer, proj = int(n.split(".")[2]), n.split(".")[-2]
        expert = re.match(EXPERT_RE, n)
        g = f"blk.{layer}.{GGUF_NAME[proj]}" + ("_exps" if expert else "")
        t = tensors[g + ".weight"]
        assert int(t.tensor_type) == GGML_NVFP4, g
        shape = [int(x) for x in t.shape]
        cols, rows = shape[:2]
        e = int(expert.group(2)) if expert else 0
        assert shape[2:] == ([cfg.num_experts] if expert else []), (g, shape)
        raw = np.asarray(t.data).reshape(-1, rows, cols // 64 * 36)[e]
        if name in CT:
            base = n.removesuffix(".weight")
            packed, scale = st[base + ".weight_packed"], st[base + ".weight_scale"]
            want_scale = np.float32(1.0) / st[base + ".weight_global_scale"].numpy().reshape(())
        else:
            packed, scale, want_scale = st[n], st[n + "_scale"], st[n + "_scale_2"].numpy().reshape(())
        want = e2m1_values(e2m1_codes(packed)).astype(np.float64) * per_element(
            scale.to(torch.float64).numpy(), 2 * packed.shape[1])
        if proj in ("q_proj", "k_proj") and cfg.model_type == "llama":
            want = permute_rows(want, cfg.num_attention_heads if proj == "q_proj" else cfg.num_key_value_heads)
        assert (rows, cols) == want.shape, n
        assert np.array_equal(decode_ggml_nvfp4(raw, rows, cols), want), n
        s = tensors[g + ".scale"]
        assert s.tensor_type.name == "F32" and [int(x) for x in s.shape] == (shape[2:] or [1]), g
        assert np.float32(s.data[e]) == np.float32(want_scale), (n, float(s.data[e]), float(want_scale))
        if expert:
            assert len(set(np.asarray(s.data).tolist())) == cfg.num_experts, (g, s.data)
        assert g + ".input_scale" not in tensors, g
        seen |= {g + ".weight", g + ".scale"}
    rest = [t for t in r.tensors if t.name not in seen]
    assert all(t.tensor_type.name == "F32" for t in rest), [(t.name, t.tensor_type.name) for t in rest]
    assert not any(t.name.endswith("input_scale") for t in r.tensors)


def quantized_names_of(cfg) -> list[str]:
    """The checkpoint names of the quantized weights (a mixture's experts as
    model.layers.N.mlp.experts.E.<proj>.weight, one tensor per expert)."""
    mlp = ([f"mlp.experts.{e}.{p}" for e in range(cfg.num_experts) for p in QUANTIZED[4:]]
           if getattr(cfg, "num_experts", None) else [f"mlp.{p}" for p in QUANTIZED[4:]])
    return [f"model.layers.{i}.{m}.weight" for i in range(cfg.num_hidden_layers)
            for m in [f"self_attn.{p}" for p in QUANTIZED[:4]] + mlp]


def router_probs(model, ids: list[int]) -> list:
    """Per router (mlp.gate), in order, (softmax probabilities of ids'
    tokens (tokens, experts), k) of model's forward over ids."""
    import torch
    got = []
    hooks = [m.register_forward_hook(lambda m, args, out: got.append((out[0].float().softmax(-1), out[2].shape[-1])))
             for n, m in model.named_modules() if n.endswith(".mlp.gate")]
    try:
        with torch.no_grad():
            model(torch.tensor([ids]))
    finally:
        for h in hooks:
            h.remove()
    assert got
    return got


def router_gap(model, ids: list[int]) -> float:
    """The smallest gap, over the tokens of ids and every router, between
    the k-th and the (k+1)-th expert's probability (make-tiny-models.py's
    goldens measures it over the prompts)."""
    gaps = []
    for p, k in router_probs(model, ids):
        top = p.sort(-1, descending=True).values
        gaps.append(float((top[:, k - 1] - top[:, k]).min()))
    return min(gaps)


def router_agreement(golden, other, seqs: list[list[int]]) -> float:
    """The smallest margin, over the tokens of seqs and every router, by
    which other's probabilities keep golden's top-k choice (the least of
    other's probabilities of golden's k experts minus the most of the rest):
    negative where other chooses another expert."""
    import torch
    margin = 1.0
    for ids in seqs:
        for (pg, k), (po, _) in zip(router_probs(golden, ids), router_probs(other, ids)):
            chosen = torch.zeros_like(pg, dtype=torch.bool).scatter_(-1, pg.topk(k, -1).indices, True)
            m = po.masked_fill(~chosen, float("inf")).amin(-1) - po.masked_fill(chosen, float("-inf")).amax(-1)
            margin = min(margin, float(m.min()))
    return margin


def q8_0(x):
    """ggml's Q8_0 round trip along the last axis (quantize_row_q8_0_ref,
    then dequantized): per block of 32, d = amax / 127 stored as f16, codes
    roundf(x / d) (x times 1 / d)."""
    import torch
    b = x.reshape(-1, 32)
    d = b.abs().amax(-1, keepdim=True) / 127
    v = b * torch.where(d > 0, 1.0 / d, torch.zeros_like(d))
    q = torch.sign(v) * torch.floor(v.abs() + 0.5)
    return (q * d.to(torch.float16).to(torch.float32)).reshape(x.shape)


def q8_0_activations(model):
    """A copy of model whose quantized matmuls take Q8_0 round-tripped
    activations, as llama.cpp (and vt: lib/core/quant.h) read NVFP4 weights
    (vec_dot_type Q8_0): the attention projections' inputs and each
    expert's gate/up and down inputs (Qwen3-MoE's fused experts, their
    forward redone). With exact_f32_model's weights it emulates llama.cpp's
    reading of the GGUF (F32 KV cache, no flash attention, as the driver runs
    it) but for float rounding."""
    import torch
    import torch.nn.functional as F
    m = copy.deepcopy(model)
    for n, mod in m.named_modules():
        if isinstance(mod, torch.nn.Linear) and is_quantized(n + ".weight"):
            mod.register_forward_pre_hook(lambda mod, args: (q8_0(args[0]),))
        elif hasattr(mod, "gate_up_proj") and hasattr(mod, "down_proj"):
            def forward(x, top_k_index, top_k_weights, self=mod):
                out, xq = torch.zeros_like(x), q8_0(x)
                for j in range(top_k_index.shape[1]):
                    for e in top_k_index[:, j].unique().tolist():
                        t = (top_k_index[:, j] == e).nonzero()[:, 0]
                        gate, up = F.linear(xq[t], self.gate_up_proj[e]).chunk(2, dim=-1)
                        h = F.linear(q8_0(self.act_fn(gate) * up), self.down_proj[e])
                        out[t] += h * top_k_weights[t, j, None]
                return out
            mod.forward = forward
    return m


def llama_cpp_run(driver: Path, gguf_path: Path, golden_path: Path, libdir: Path | None = None) -> dict:
    """llama.cpp's logits of every prompt position and its greedy run on the
    GGUF (make-mxfp4-fixtures.py's llama_cpp_golden, into a scratch file),
    optionally with libdir first on LD_LIBRARY_PATH."""
    old = os.environ.get("LD_LIBRARY_PATH")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "llama-cpp.json"
        try:
            if libdir is not None:
                os.environ["LD_LIBRARY_PATH"] = str(libdir) + (f":{old}" if old else "")
            with contextlib.redirect_stdout(io.StringIO()):
                MX.llama_cpp_golden(driver, gguf_path, golden_path, out, 0.0, "", "")
        finally:
            if old is None:
                os.environ.pop("LD_LIBRARY_PATH", None)
            else:
                os.environ["LD_LIBRARY_PATH"] = old
        return json.loads(out.read_text(encoding="utf-8"))


def logit_diff(a: dict, b: dict) -> float:
    import numpy as np
    return max(float(np.abs(np.array(x["logits"]) - np.array(y["logits"])).max())
               for x, y in zip(a["prompts"], b["prompts"]))


# --- one fixture ---------------------------------------------------------------

def build_fixture(name: str, folder: Path, seed: int):
    """(tokenizer, float32 model, oracle) of a fixture, written into folder."""
    tok, _, f32_model = TM.build(BASES[name], folder, seed=seed)
    TM.save(BASES[name], f32_model, folder)
    if name == "qwen3_moe_nvfp4_ct":
        save_ct_moe(f32_model, folder)
        model = load_ct_moe_oracle(folder, f32_model)
    elif name == "llama_nvfp4_ct":
        save_ct(f32_model, folder)
        model = load_ct_oracle(folder, f32_model)
    else:
        save_modelopt(f32_model, tok, folder)
        model = load_modelopt_oracle(folder, f32_model)
    return tok, f32_model, model


def make(name: str, a) -> None:
    import torch
    import transformers
    sys.path.insert(0, str(a.llama_cpp / "gguf-py"))
    import gguf  # noqa: E402
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / name
        tok, f32_model, model = build_fixture(name, folder, SEEDS[name])
        files = sorted(p.name for p in folder.iterdir())
        want_files = ["config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
                      "tokenizer_config.json"] + (["hf_quant_config.json"] if name == "llama_nvfp4_modelopt" else [])
        assert files == sorted(want_files), files
        OUT.mkdir(parents=True, exist_ok=True)
        gguf_path = OUT / f"{name}.gguf"
        TM.convert(a.llama_cpp, folder, gguf_path)
        kept = OUT / name
        shutil.rmtree(kept, ignore_errors=True)
        shutil.copytree(folder, kept)
        for p in kept.iterdir():
            p.chmod(0o644)  # safetensors writes 0600

        cfg = model.config
        prompts, greedy, margins, routed, gaps = TM.goldens(name, model, tok)
        tol, why = TOL[name]
        golden = {
            "format": 1, "generator": "tests/models/make-nvfp4-fixtures.py", "architecture": name,
            "transformers": transformers.__version__, "torch": torch.__version__,
            "config": json.loads(cfg.to_json_string()), "n_vocab": cfg.vocab_size,
            "prompts": prompts, "greedy": greedy, "greedy_margins": margins,
            "tol_logit": tol, "tol_logit_why": why,
        }
        path = OUT / f"{name}.json"
        path.write_text(json.dumps(golden, separators=(",", ":")) + "\n", encoding="utf-8")

        print(f"{name}:")
        describe(kept)
        check_gguf(gguf, gguf_path, kept, name, cfg)
        oracle_logits = prompt_logits(model, tok)
        print(f"  golden {path.name}: {path.stat().st_size} bytes; min greedy margin {min(margins):.4f}, "
              f"{len(set(greedy))} distinct greedy tokens (seed {SEEDS[name]})")
        if routed:
            greedy_gap = router_gap(model, prompts[-1]["ids"] + greedy[:-1])
            print(f"  experts chosen per MoE layer {[len(e) for e in routed.values()]}; smallest router top-k gap "
                  f"{min(gaps.values()):.2e} over the prompts, {greedy_gap:.2e} over the greedy run")
        print(f"  max |logit| oracle - float32 model: {max_diff(oracle_logits, prompt_logits(f32_model, tok)):.6f}")
        exact = exact_f32_model(f32_model, kept, name)
        exact_logits = prompt_logits(exact, tok)
        print(f"  max |logit| oracle - exact decoding of the checkpoint: {max_diff(oracle_logits, exact_logits):.6f}")
        lc = llama_cpp_run(a.driver, gguf_path, path)
        d = logit_diff(lc, golden)
        agree = sum(x == y for x, y in zip(lc["greedy"], greedy))
        lc_logits = [torch.tensor(p["logits"]) for p in lc["prompts"]]
        print(f"  llama.cpp (native) vs golden: max |logit| {d:.6f}; greedy agrees at {agree}/{len(greedy)} steps; "
              f"vs the exact decoding: {max_diff(lc_logits, exact_logits):.6f}")
        if routed:
            emu = q8_0_activations(exact)
            keep = router_agreement(model, emu, [p["ids"] for p in prompts] + [prompts[-1]["ids"] + greedy[:-1]])
            print(f"  llama.cpp's reading emulated (exact weights, Q8_0 activations): max |logit| "
                  f"{max_diff(prompt_logits(emu, tok), lc_logits):.6f} from llama.cpp's, "
                  f"{max_diff(prompt_logits(emu, tok), oracle_logits):.6f} from the golden; keeps the golden's expert "
                  f"choices (prompts and greedy run) by a probability margin of {keep:.2e} at least")
        measured = d
        if a.avx2_lib is not None:
            lc2 = llama_cpp_run(a.driver, gguf_path, path, a.avx2_lib)
            d2, dd = logit_diff(lc2, golden), logit_diff(lc2, lc)
            print(f"  llama.cpp (AVX2 {a.avx2_lib}) vs golden: max |logit| {d2:.6f}; AVX2 vs native: {dd:.2e}")
            measured = max(measured, dd)
        print(f"  tol_logit {tol} ({why})")
        if not 2 * measured <= tol:
            sys.exit(f"make-nvfp4-fixtures: {name}: llama.cpp measured {measured:.6f}, more than half of tol_logit "
                     f"{tol}: re-measure and update TOL")
        if min(margins) <= MIN_MARGIN:
            sys.exit(f"make-nvfp4-fixtures: {name}'s smallest greedy margin {min(margins):.4f} is not above "
                     f"{MIN_MARGIN}: try another seed (SEEDS)")
        if routed and not (min(gaps.values()) > MIN_ROUTER_GAP and keep > MIN_ROUTER_KEEP):
            sys.exit(f"make-nvfp4-fixtures: {name}'s smallest router top-k gap over the prompts is not above "
                     f"{MIN_ROUTER_GAP} or the emulated llama.cpp keeps its choices by no more than "
                     f"{MIN_ROUTER_KEEP}: try another seed (SEEDS)")


def quiet() -> None:
    """No progress bars, load reports or library warnings."""
    import warnings
    os.environ.setdefault("COMPRESSED_TENSORS_LOG_DISABLED", "1")  # read when compressed_tensors is imported
    os.environ.setdefault("TQDM_DISABLE", "1")  # read when tqdm is imported
    import transformers
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    warnings.filterwarnings("ignore", message="You passed `quantization_config`")
    warnings.filterwarnings("ignore", module="modelopt")
    warnings.filterwarnings("ignore", message=".*modelopt.*")
    warnings.filterwarnings("ignore", message=".*torch.jit.script.*")
    import logging
    logging.getLogger("torch.utils.cpp_extension").setLevel(logging.ERROR)  # "No CUDA runtime is found"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="comma-separated subset of " + ",".join(FIXTURES))
    ap.add_argument("--llama-cpp", required=True, type=Path, help="llama.cpp source tree (convert_hf_to_gguf.py)")
    ap.add_argument("--driver", type=Path, default=Path.home() / ".cache/vt/llama.cpp-build-tiny/tiny-logits",
                    help="llama-cpp-tiny-logits.py's driver")
    ap.add_argument("--avx2-lib", type=Path, help="folder with an AVX2-only libggml-cpu.so.0 (see the docstring)")
    a = ap.parse_args()
    names = a.only.split(",") if a.only else FIXTURES
    for n in names:
        if n not in FIXTURES:
            sys.exit(f"make-nvfp4-fixtures: unknown fixture {n}")
    a.driver = a.driver.expanduser()
    a.avx2_lib = a.avx2_lib.expanduser() if a.avx2_lib else None
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    quiet()
    for n in names:
        make(n, a)


if __name__ == "__main__":
    main()
