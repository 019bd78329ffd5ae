#!/usr/bin/env python3
"""A fine-grained FP8 copy of a Hugging Face folder, as DeepSeek-V3 and Qwen3-*-FP8 ship.

For the FP8 speed gate (issue 44): a float folder (gguf-to-hf-folder.py makes
one from the random-weight GGUFs of make-random-gguf.py) becomes a folder whose
2-D projection weights of the decoder layers are F8_E4M3 with a
`<name>_scale_inv` F32 per 128 x 128 block (scale = amax / 448, values
rounded to nearest-even by torch's float8_e4m3fn cast) and config.json's
quantization_config {"quant_method": "fp8", "fmt": "e4m3",
"activation_scheme": "dynamic", "weight_block_size": [128, 128]}; the
embedding, norms and output stay as stored, as in those checkpoints. Then

    vt-bench -m FOLDER-fp8                 (FP8 read as stored)
    llama-bench -m MODEL-Q8_0.gguf         (its nearest llama.cpp peer)

    python examples/bench/folder-to-fp8.py IN_DIR OUT_DIR

Needs torch and safetensors (e.g. the oracle venv of tests/models).
"""
import argparse
import json
import re
import shutil
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

BLOCK = 128
FP8_MAX = 448.0
PROJ = re.compile(r"\.layers\.\d+\..*(proj|linear|fc\d?)\.weight$")


def quantize(w: torch.Tensor):
    rows, cols = w.shape
    br, bc = -(-rows // BLOCK), -(-cols // BLOCK)
    padded = torch.zeros(br * BLOCK, bc * BLOCK, dtype=torch.float32)
    padded[:rows, :cols] = w.float()
    scale = padded.reshape(br, BLOCK, bc, BLOCK).abs().amax(dim=(1, 3)) / FP8_MAX
    scale = torch.where(scale == 0, torch.ones_like(scale), scale)
    full = scale.repeat_interleave(BLOCK, 0).repeat_interleave(BLOCK, 1)[:rows, :cols]
    return (w.float() / full).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn), scale.contiguous()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src", type=Path)
    ap.add_argument("out", type=Path)
    a = ap.parse_args()
    shards = sorted(a.src.glob("*.safetensors"))
    if not shards:
        sys.exit(f"folder-to-fp8: no safetensors in {a.src}")
    a.out.mkdir(parents=True, exist_ok=True)
    for f in a.src.iterdir():
        if f.suffix != ".safetensors" and f.name != "config.json" and f.is_file():
            shutil.copy(f, a.out / f.name)
    n = 0
    for shard in shards:
        tensors = load_file(shard)
        for name in [k for k in tensors if PROJ.search(k) and tensors[k].dim() == 2]:
            q, s = quantize(tensors[name])
            tensors[name] = q
            tensors[name + "_scale_inv"] = s
            n += 1
        save_file(tensors, a.out / shard.name, metadata={"format": "pt"})
    cfg = json.loads((a.src / "config.json").read_text(encoding="utf-8"))
    cfg["quantization_config"] = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                                  "weight_block_size": [BLOCK, BLOCK]}
    (a.out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")
    print(f"folder-to-fp8: {n} weights in FP8 -> {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
