#!/usr/bin/env python3
"""A bf16 Hugging Face folder from a quantized Llama-family GGUF, via transformers.

For serving comparisons against peers that take only Hugging Face folders
(vLLM's CPU build; issue 43): the default SmolLM2-135M-Instruct Q4_1 GGUF
becomes a bf16 folder that vt-server, vt-generate and vLLM all load, so every
server reads the same weights.

    ~/.cache/vt/vllm-venv/bin/python examples/bench/gguf-to-bf16-folder.py \
        ~/.cache/vt/models/SmolLM2-135M-Instruct.Q4_1.gguf \
        ~/.cache/vt/models/SmolLM2-135M-Instruct-bf16-hf

(the output defaults to the GGUF's directory, named <stem without the quant
suffix>-bf16-hf). Needs torch, transformers >= 5.16 (GgufConfig), and the
`gguf` and `accelerate` packages transformers loads a GGUF with: e.g. the
vLLM peer venv (setup-vllm-cpu.sh) after `pip install gguf accelerate`.
Takes about a minute (20 s of it the dequantization).

How: transformers dequantizes every block to float (GgufConfig(dequantize=True);
it also undoes llama.cpp's q/k row permutation), the state dict goes into a
fresh model built from the config alone (so no quantization_config or GGUF
origin is saved with it), cast to bf16 and saved as safetensors, together
with the tokenizer transformers rebuilds from the GGUF's vocabulary (chat
template included). The weights are the Q4_1 values (d * q + m, with f16 d
and m) rounded once to bf16's 8-bit mantissa: the folder is the quantized
model, not the original bf16 checkpoint. That is fine for what it is for:
speed comparisons, where every server reads the same folder.
"""
import argparse
import re
import sys
from pathlib import Path


def default_out(gguf: Path) -> Path:
    stem = re.sub(r"[.-](Q\d\w*|IQ\d\w*|F16|BF16|F32)$", "", gguf.stem, flags=re.I)
    return gguf.parent / f"{stem}-bf16-hf"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("gguf", type=Path)
    ap.add_argument("out", type=Path, nargs="?")
    a = ap.parse_args()
    out = a.out or default_out(a.gguf)

    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, GgufConfig

    src, name = str(a.gguf.parent), a.gguf.name
    loaded = AutoModelForCausalLM.from_pretrained(
        src, gguf_file=name, quantization_config=GgufConfig(dequantize=True), dtype=torch.float32)
    config = AutoConfig.from_pretrained(src, gguf_file=name)
    for k in ("quantization_config", "_name_or_path"):
        if hasattr(config, k):
            delattr(config, k)
    config.dtype = torch.bfloat16
    fresh = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    state = loaded.state_dict()
    missing, unexpected = fresh.load_state_dict(state, strict=False)
    # A tied output (SmolLM2) shows up as a missing lm_head.weight; anything else is a bug.
    missing = [k for k in missing if not (k == "lm_head.weight" and config.tie_word_embeddings)]
    if missing or unexpected:
        sys.exit(f"gguf-to-bf16-folder: state dict mismatch: missing {missing}, unexpected {unexpected}")
    fresh = fresh.to(torch.bfloat16)
    out.mkdir(parents=True, exist_ok=True)
    fresh.save_pretrained(out, safe_serialization=True)
    tok = AutoTokenizer.from_pretrained(src, gguf_file=name)
    tok.save_pretrained(out)
    n = sum(p.numel() for p in fresh.parameters())
    print(f"wrote {out}: {type(fresh).__name__}, {n / 1e6:.1f} M parameters in bf16, "
          f"vocab {len(tok)}, tied output {config.tie_word_embeddings}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
