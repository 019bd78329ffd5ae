#!/usr/bin/env python3
"""Seed corpus and dictionary for fuzz-config-json: the config.json of every
tests/models/tiny folder (llama, mistral, mixtral, qwen2, qwen3, qwen3_moe,
gemma3, phi3, olmoe, deepseek_v2/v3, the linear-attention qwen3_5, qwen3_5_moe,
qwen3_next and kimi_linear), each also with the variants real
checkpoints carry (transformers 4's rope_theta + rope_scaling, yarn, linear,
longrope, a text_config wrapper, sliding windows, layer_types), and a few
hostile ones (zero and huge sizes, wrong types).
Usage: config-json-seeds.py CORPUS_DIR DICT_FILE"""
import copy
import glob
import json
import os
import sys

corpus, dict_path = sys.argv[1], sys.argv[2]
os.makedirs(corpus, exist_ok=True)
here = os.path.dirname(os.path.abspath(__file__))
configs = []
for path in sorted(glob.glob(os.path.join(here, "..", "models", "tiny", "*", "config.json"))):
    with open(path) as f:
        configs.append(json.load(f))
seeds = [json.dumps(c, indent=2) for c in configs]
keys = set()
for c in configs:
    keys.update(c)
    for v in c.values():
        if isinstance(v, dict):
            keys.update(v)


def variant(base, **kw):
    c = copy.deepcopy(base)
    for k, v in kw.items():
        if v is None:
            c.pop(k, None)
        else:
            c[k] = v
    return json.dumps(c)


by_type = {c.get("model_type"): c for c in configs}
llama = by_type.get("llama", configs[0])
rope4 = {"rope_parameters": None, "rope_theta": 10000.0}
seeds += [
    variant(llama, **rope4),
    variant(llama, **rope4, rope_scaling={"type": "linear", "factor": 2.0}),
    variant(llama, **rope4, rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 128,
                                          "beta_fast": 32, "beta_slow": 1, "attention_factor": 1.1}),
    variant(llama, **rope4, rope_scaling={"rope_type": "longrope", "long_factor": [1.0] * 8,
                                          "short_factor": [1.0] * 8, "original_max_position_embeddings": 64}),
    variant(llama, **rope4, rope_scaling={"rope_type": "dynamic", "factor": 2.0}),
    variant(llama, sliding_window=32, layer_types=["sliding_attention", "full_attention"]),
    json.dumps({"architectures": ["Gemma3ForConditionalGeneration"], "text_config": by_type.get("gemma3_text", llama)}),
    variant(llama, hidden_size=0, num_attention_heads=0),
    variant(llama, num_attention_heads=0, head_dim=None),
    variant(llama, head_dim=18446744073709551615, num_hidden_layers=4294967297),
    variant(llama, intermediate_size=-1, rms_norm_eps="x", vocab_size=1e300),
    variant(llama, architectures="LlamaForCausalLM", rope_parameters={"rope_type": 5}),
    variant(llama, architectures=["NoSuchForCausalLM"]),
    variant(llama, max_position_embeddings=1e30, rope_parameters={"rope_type": "longrope", "long_factor": [1] * 8,
                                                                     "short_factor": [1] * 8,
                                                                     "original_max_position_embeddings": -5}),
    "[]", "null", "{}", '{"architectures": []}',
]
for t in ("deepseek_v2", "deepseek_v3", "qwen3_moe", "mixtral"):
    if t in by_type:
        c = by_type[t]
        seeds.append(variant(c, num_attention_heads=4294967295, kv_lora_rank=4294967295, v_head_dim=4294967295))
        seeds.append(variant(c, num_experts_per_tok=0, n_routed_experts=0, num_local_experts=0, num_experts=0))
        seeds.append(variant(c, topk_method=3, scoring_func=[], n_group=0, topk_group=99))
# The FP8 folders (tests/models/tiny/llama_fp8_*): block sizes that fit no
# scale, the other schemes' configs over the same tensors, none at all.
for c in configs:
    q = c.get("quantization_config")
    if not isinstance(q, dict):
        continue
    seeds.append(variant(c, quantization_config=dict(q, weight_block_size=[0, 64])))
    seeds.append(variant(c, quantization_config=dict(q, weight_block_size=[64, 32])))
    seeds.append(variant(c, quantization_config={"quant_method": "modelopt", "quant_algo": "FP8"}))
    seeds.append(variant(c, quantization_config={
        "quant_method": "compressed-tensors", "format": "float-quantized", "config_groups": {"g": {"weights": {
            "num_bits": 8, "type": "float", "strategy": "block", "block_structure": [1, 3]}}}}))
    seeds.append(variant(c, quantization_config=None))
for i, s in enumerate(seeds):
    with open(os.path.join(corpus, f"seed-{i:02d}.json"), "w") as f:
        f.write(s)
words = sorted(keys | {"rope_scaling", "rope_theta", "type", "factor", "long_factor", "short_factor", "text_config",
                       "layer_types", "sliding_attention", "full_attention", "sliding_window", "use_sliding_window",
                       "mlp_only_layers", "decoder_sparse_step", "yarn", "linear", "longrope", "llama3", "default",
                       "mscale", "mscale_all_dim", "noaux_tc", "greedy", "sigmoid", "softmax",
                       "quantization_config", "quant_method", "fp8", "fmt", "e4m3", "weight_block_size",
                       "compressed-tensors", "float-quantized", "config_groups", "weights", "num_bits", "strategy",
                       "block_structure", "channel", "tensor", "block", "group", "modelopt", "quant_algo", "FP8"})
with open(dict_path, "w") as f:
    for w in words:
        f.write(json.dumps(json.dumps(w)) + "\n")
    for w in ["0", "-1", "4294967296", "18446744073709551615", "1e309", "null", "true", "[]", "{}"]:
        f.write(json.dumps(w) + "\n")
