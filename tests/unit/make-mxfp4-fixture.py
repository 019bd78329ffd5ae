#!/usr/bin/env python3
"""A tiny MXFP4 pair as transformers' gpt-oss checkpoints store it, and its values as transformers dequantizes them.

Writes tests/unit/goldens/mxfp4-pair.safetensors with
  model.layers.0.mlp.experts.gate_up_proj_blocks  U8  (2, 6, 3, 16)  random codes
  model.layers.0.mlp.experts.gate_up_proj_scales  U8  (2, 6, 3)      e8m0 exponents: random
                                                                      in 100..150 and 0, 1, 254
  expected.gate_up_proj                           F32 (2, 6, 96)     transformers' dequantization
The expected values come from transformers.integrations.mxfp4.convert_moe_packed_tensors
(float32), transposed back from its (experts, in, out) parameter layout to the
checkpoint's rows (experts, rows, elements). tests/unit/test-mxfp4-folder.cpp pairs the
halves (lib/model/safetensors.h: pair_mxfp4, materialize_mxfp4), dequantizes them with
vt's reference and compares bit for bit, every row and the interleaved gate/up rows.

    /work/oracle-venv/bin/python tests/unit/make-mxfp4-fixture.py   (torch, transformers, safetensors)
"""
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers.integrations.mxfp4 import convert_moe_packed_tensors

OUT = Path(__file__).resolve().parent / "goldens" / "mxfp4-pair.safetensors"


def main() -> None:
    g = torch.Generator().manual_seed(20261206)
    blocks = torch.randint(0, 256, (2, 6, 3, 16), dtype=torch.int32, generator=g).to(torch.uint8)
    scales = torch.randint(100, 151, (2, 6, 3), dtype=torch.int32, generator=g).to(torch.uint8)
    # The ends of the e8m0 range: 2^-127 and 2^-126 scales (subnormal results)
    # and 2^127 (6 * 2^127 overflows to inf in both readings).
    scales[0, 0, 0], scales[0, 1, 2], scales[1, 5, 1] = 0, 1, 254
    pfx = "model.layers.0.mlp.experts.gate_up_proj"
    deq = convert_moe_packed_tensors(blocks.clone(), scales.clone(), dtype=torch.float32)
    expected = deq.transpose(1, 2).contiguous()  # (experts, rows, elements)
    assert expected.shape == (2, 6, 96)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    save_file({f"{pfx}_blocks": blocks, f"{pfx}_scales": scales, "expected.gate_up_proj": expected}, str(OUT))
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
