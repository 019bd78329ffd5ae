#!/usr/bin/env python3
"""A Hugging Face model folder holding the same weights as a float GGUF (Qwen2, Qwen3).

For the speed gate of quantization at load: the random-weight BF16 GGUFs of
make-random-gguf.py become a folder of the same BF16 bytes (config.json,
model.safetensors, tokenizer.json, tokenizer_config.json,
generation_config.json), so that

    vt-bench -m FOLDER --quantize Q4_K        (vt quantizes at load)
    vt-bench -m MODEL-Q4_K.gguf               (llama-quantize --pure on the BF16 GGUF)

measure the same weights. Qwen2/Qwen3 tensors need no reordering between the
two formats (llama.cpp's converter permutes q/k rows only for Llama-style
rope), and a GGUF row-major (ne0, ne1) tensor has the bytes of the HF
(out, in) tensor, so each tensor's bytes are copied as they are.

    python examples/bench/gguf-to-hf-folder.py MODEL-BF16.gguf OUT_DIR

Needs numpy and the PyPI `gguf` package (reading only).
"""
import argparse
import json
import struct
import sys
from pathlib import Path

import numpy as np
from gguf import GGUFReader

# GGUF tensor name -> HF name; {i} is the layer.
NAMES = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
    "blk.{i}.attn_norm.weight": "model.layers.{i}.input_layernorm.weight",
    "blk.{i}.ffn_norm.weight": "model.layers.{i}.post_attention_layernorm.weight",
    "blk.{i}.attn_q.weight": "model.layers.{i}.self_attn.q_proj.weight",
    "blk.{i}.attn_k.weight": "model.layers.{i}.self_attn.k_proj.weight",
    "blk.{i}.attn_v.weight": "model.layers.{i}.self_attn.v_proj.weight",
    "blk.{i}.attn_q.bias": "model.layers.{i}.self_attn.q_proj.bias",
    "blk.{i}.attn_k.bias": "model.layers.{i}.self_attn.k_proj.bias",
    "blk.{i}.attn_v.bias": "model.layers.{i}.self_attn.v_proj.bias",
    "blk.{i}.attn_output.weight": "model.layers.{i}.self_attn.o_proj.weight",
    "blk.{i}.attn_q_norm.weight": "model.layers.{i}.self_attn.q_norm.weight",
    "blk.{i}.attn_k_norm.weight": "model.layers.{i}.self_attn.k_norm.weight",
    "blk.{i}.ffn_gate.weight": "model.layers.{i}.mlp.gate_proj.weight",
    "blk.{i}.ffn_up.weight": "model.layers.{i}.mlp.up_proj.weight",
    "blk.{i}.ffn_down.weight": "model.layers.{i}.mlp.down_proj.weight",
}
DTYPES = {0: "F32", 1: "F16", 30: "BF16"}  # ggml type id -> safetensors dtype
HF_ARCH = {"qwen2": ("Qwen2ForCausalLM", "qwen2"), "qwen3": ("Qwen3ForCausalLM", "qwen3")}


def field(r: GGUFReader, key: str, default=None):
    f = r.get_field(key)
    if f is None:
        return default
    if f.types and f.types[0].name == "ARRAY":
        return [f.contents(i) for i in range(len(f.data))]
    return f.contents()


def hf_name(name: str) -> str:
    parts = name.split(".")
    if parts[0] == "blk":
        key = "blk.{i}." + ".".join(parts[2:])
        return NAMES[key].format(i=parts[1])
    return NAMES[name]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("gguf", type=Path)
    ap.add_argument("out", type=Path)
    a = ap.parse_args()
    r = GGUFReader(a.gguf)
    arch = field(r, "general.architecture")
    if arch not in HF_ARCH:
        sys.exit(f"gguf-to-hf-folder: architecture {arch!r} is not one of {sorted(HF_ARCH)}")
    p = lambda k, d=None: field(r, f"{arch}.{k}", d)  # noqa: E731
    a.out.mkdir(parents=True, exist_ok=True)

    # Weights: one safetensors file, tensors in GGUF order, 8-byte aligned.
    header, offset, chunks = {}, 0, []
    dtype = None
    for t in r.tensors:
        if t.tensor_type.value not in DTYPES:
            sys.exit(f"gguf-to-hf-folder: {t.name} is {t.tensor_type.name}; only F32/F16/BF16 files convert")
        raw = np.ascontiguousarray(t.data).view(np.uint8).reshape(-1)
        shape = [int(x) for x in reversed(t.shape.tolist())]  # GGUF ne0 first; HF outermost first
        while len(shape) > 1 and shape[0] == 1:
            shape.pop(0)
        header[hf_name(t.name)] = {"dtype": DTYPES[t.tensor_type.value], "shape": shape,
                                   "data_offsets": [offset, offset + raw.size]}
        if len(shape) == 2:
            dtype = DTYPES[t.tensor_type.value]
        chunks.append(raw)
        offset += raw.size
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    with open(a.out / "model.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for c in chunks:
            f.write(c.tobytes())

    tied = not any(t.name == "output.weight" for t in r.tensors)
    n_embd, n_head = int(p("embedding_length")), int(p("attention.head_count"))
    bos, eos = int(field(r, "tokenizer.ggml.bos_token_id", 0)), int(field(r, "tokenizer.ggml.eos_token_id", 0))
    tokens = field(r, "tokenizer.ggml.tokens")
    config = {
        "architectures": [HF_ARCH[arch][0]], "model_type": HF_ARCH[arch][1],
        "hidden_size": n_embd, "intermediate_size": int(p("feed_forward_length")),
        "num_hidden_layers": int(p("block_count")), "num_attention_heads": n_head,
        "num_key_value_heads": int(p("attention.head_count_kv", n_head)),
        "head_dim": int(p("attention.key_length", n_embd // n_head)),
        "rms_norm_eps": float(p("attention.layer_norm_rms_epsilon", 1e-6)),
        "rope_theta": float(p("rope.freq_base", 10000.0)),
        "max_position_embeddings": int(p("context_length")), "vocab_size": len(tokens),
        "tie_word_embeddings": tied, "torch_dtype": {"BF16": "bfloat16", "F16": "float16"}.get(dtype, "float32"),
        "bos_token_id": bos, "eos_token_id": eos, "hidden_act": "silu",
        "attention_bias": any(t.name.endswith("attn_q.bias") for t in r.tensors),
    }
    (a.out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    (a.out / "generation_config.json").write_text(json.dumps({"bos_token_id": bos, "eos_token_id": eos}) + "\n")

    # Tokenizer: the GGUF's byte-level BPE as tokenizer.json.
    types = field(r, "tokenizer.ggml.token_type", [1] * len(tokens))
    merges = field(r, "tokenizer.ggml.merges", [])
    added = [{"id": i, "content": tok, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, (tok, ty) in enumerate(zip(tokens, types)) if ty == 3]
    tok_json = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": {tok: i for i, tok in enumerate(tokens)}, "merges": merges},
    }
    (a.out / "tokenizer.json").write_text(json.dumps(tok_json, ensure_ascii=False))
    (a.out / "tokenizer_config.json").write_text(json.dumps(
        {"bos_token": tokens[bos], "eos_token": tokens[eos], "tokenizer_class": "PreTrainedTokenizerFast"}) + "\n")
    print(f"wrote {a.out}: {len(r.tensors)} tensors ({offset / 2**20:.1f} MiB, {dtype}), vocab {len(tokens)}, "
          f"{'tied' if tied else 'untied'} output")


if __name__ == "__main__":
    main()
