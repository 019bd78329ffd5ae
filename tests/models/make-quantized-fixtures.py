#!/usr/bin/env python3
"""Tiny GGUFs quantized by llama.cpp, the oracle of vt's quantization at load.

For each tiny architecture with an untied output (its f32 GGUF conversion in
tests/models/tiny/, from make-tiny-models.py) and each type, runs llama.cpp's
own quantizer in pure mode (every matmul weight to the type, with llama.cpp's
fallback where rows are not whole blocks of it) and keeps the token
embedding f32, which is what vt does at load:

    llama-quantize --pure --token-embedding-type f32 IN.gguf OUT.gguf TYPE

and writes tests/models/tiny/quantized/<arch>-<type>.gguf.
tests/models/test-quantize-at-load.cpp then loads the Hugging Face folder
with vt_model_params.quantize = TYPE and requires logits equal, bit for
bit, to vt's on llama.cpp's file.

    python3 tests/models/make-quantized-fixtures.py --llama-quantize PATH/llama-quantize

llama-quantize comes from the llama.cpp of the llama-cpp-python 0.3.36 sdist
(cmake -S vendor/llama.cpp -B build; cmake --build build --target
llama-quantize). Standard library only.

Tied models are left out: llama.cpp's output is then the token embedding
itself, kept f32 here, while vt quantizes a copy of it for the output.
"""
import argparse
import subprocess
import sys
from pathlib import Path

TINY = Path(__file__).resolve().parent / "tiny"
ARCHS = ["llama", "phi3"]    # untied; phi3 also has fused qkv / gate_up that vt splits by rows
TYPES = ["Q8_0", "Q4_K", "Q4_0"]  # Q4_K's rows of 64 and 128 take its fallback, Q5_0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llama-quantize", required=True, type=Path)
    a = ap.parse_args()
    out_dir = TINY / "quantized"
    out_dir.mkdir(exist_ok=True)
    for arch in ARCHS:
        for t in TYPES:
            out = out_dir / f"{arch}-{t.lower()}.gguf"
            cmd = [str(a.llama_quantize), "--pure", "--token-embedding-type", "f32",
                   str(TINY / f"{arch}.gguf"), str(out), t]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"failed: {' '.join(cmd)}\n{r.stdout}{r.stderr}")
            print(f"{out.relative_to(TINY.parent.parent.parent)}: {out.stat().st_size} bytes")


if __name__ == "__main__":
    main()
