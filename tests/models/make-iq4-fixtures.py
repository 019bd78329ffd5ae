#!/usr/bin/env python3
"""IQ4_NL / IQ4_XS GGUF fixture, quantized by ggml itself, and llama.cpp's logits on it.

IQ4_XS takes rows of whole 256-element super-blocks, which the tiny models'
64-wide layers are not; so this writes tests/models/tiny/llama_iq4.gguf: a
one-layer Llama 256 wide (4 query heads and 2 KV heads of 64, FFN 512) with
the tiny llama's tokenizer (llama.gguf's keys, 383 tokens), random weights
(seeded; matrices N(0, 1/fan_in), norms 1 + N(0, 0.1^2)), every matrix
quantized by ggml_quantize_chunk (libggml-base, no importance matrix) and
the types mixed per tensor as unsloth's dynamic quants mix them: the token
embedding, attention and output in IQ4_XS, the FFN in IQ4_NL. Then
tests/models/tiny/llama_iq4.json: llama.json's prompts with llama.cpp's
logits on that file and its 32 greedy tokens (llama.cpp as the oracle, as
the issue asks: vt reads the file ggml wrote, and both engines quantize the
activations, to Q8_K for IQ4_XS and Q8_0 for IQ4_NL).

    /work/oracle-venv/bin/python tests/models/make-iq4-fixtures.py \\
        --ggml-base ~/.cache/vt/llama.cpp-build-tiny/bin/libggml-base.so \\
        --driver ~/.cache/vt/llama.cpp-build-tiny/tiny-logits \\
        --gguf-py /work/llama-sdist/vendor/llama.cpp/gguf-py

(the driver and libggml-base from tests/models/llama-cpp-tiny-logits.py's
build of the llama-cpp-python 0.3.36 sdist).
"""
import argparse
import ctypes
import importlib.util
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
TINY = HERE / "tiny"
# ggml type id: (elements, bytes) per block.
IQ4_NL, IQ4_XS = 20, 23
BLOCKS = {IQ4_NL: (32, 18), IQ4_XS: (256, 136)}
WIDTH, FFN, HEADS, KV_HEADS, HEAD_DIM = 256, 512, 4, 2, 64

# Both engines quantize the activations (Q8_K for IQ4_XS, Q8_0 for IQ4_NL),
# and on this 256-wide model that alone moves logits (range +-14) by about
# 0.13 from the float64 evaluation of the same dequantized weights, measured
# when this was written: llama.cpp 0.128, vt 0.135 (AVX-512 and AVX2 alike),
# vt against llama.cpp 0.129. Each engine within 0.15 of the exact value
# puts them within 0.3 of each other. A wrong sub-block scale (ls - 31 for
# ls - 32) moved vt's logits by 0.98 (checked by mutation when this was
# written); a wrong level or nibble order fails test-iq4.
TOL = 0.3
TOL_WHY = ("both engines quantize activations (Q8_K / Q8_0): each measured 0.13 from the float64 evaluation of the "
           "dequantized weights (llama.cpp 0.128, vt 0.135), vt vs llama.cpp 0.129; twice 0.15")
GENERATOR = ("llama.cpp 0.3.36 (tests/models/make-iq4-fixtures.py: tiny-logits driver, f32 KV, no flash "
             "attention) on llama_iq4.gguf, llama.json's prompts")


def quantizer(lib_path: Path):
    lib = ctypes.CDLL(str(lib_path))
    f = lib.ggml_quantize_chunk
    f.restype = ctypes.c_size_t
    f.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                  ctypes.c_void_p]

    def q(x: np.ndarray, t: int) -> np.ndarray:
        x = np.ascontiguousarray(x, dtype=np.float32)
        be, bb = BLOCKS[t]
        n_per_row = x.shape[-1]
        n_rows = x.size // n_per_row
        assert n_per_row % be == 0
        dst = np.zeros(n_rows * n_per_row // be * bb, dtype=np.uint8)
        got = f(t, x.ctypes.data, dst.ctypes.data, 0, n_rows, n_per_row, None)
        assert got == dst.size
        return dst.reshape(*x.shape[:-1], n_per_row // be * bb)
    return q


def tensors(rng: np.random.Generator, n_vocab: int) -> list[tuple[str, np.ndarray, int | None]]:
    """(name, f32 array in numpy order (rows, row length), ggml type or None for f32)."""
    def mat(rows: int, k: int) -> np.ndarray:
        return rng.normal(0.0, 1.0 / np.sqrt(k), size=(rows, k)).astype(np.float32)

    def norm() -> np.ndarray:
        return (1.0 + rng.normal(0.0, 0.1, size=WIDTH)).astype(np.float32)
    kv = KV_HEADS * HEAD_DIM
    return [
        ("token_embd.weight", rng.normal(0.0, 1.0, size=(n_vocab, WIDTH)).astype(np.float32), IQ4_XS),
        ("blk.0.attn_norm.weight", norm(), None),
        ("blk.0.attn_q.weight", mat(HEADS * HEAD_DIM, WIDTH), IQ4_XS),
        ("blk.0.attn_k.weight", mat(kv, WIDTH), IQ4_XS),
        ("blk.0.attn_v.weight", mat(kv, WIDTH), IQ4_XS),
        ("blk.0.attn_output.weight", mat(WIDTH, HEADS * HEAD_DIM), IQ4_XS),
        ("blk.0.ffn_norm.weight", norm(), None),
        ("blk.0.ffn_gate.weight", mat(FFN, WIDTH), IQ4_NL),
        ("blk.0.ffn_up.weight", mat(FFN, WIDTH), IQ4_NL),
        ("blk.0.ffn_down.weight", mat(WIDTH, FFN), IQ4_NL),
        ("output_norm.weight", norm(), None),
        ("output.weight", 3.0 * mat(n_vocab, WIDTH), IQ4_XS),
    ]


def write(gguf, q, src: Path, dst: Path) -> None:
    r = gguf.GGUFReader(str(src))
    w = gguf.GGUFWriter(str(dst), "llama")
    shape_keys = {"llama.block_count": 1, "llama.embedding_length": WIDTH, "llama.feed_forward_length": FFN,
                  "llama.attention.head_count": HEADS, "llama.attention.head_count_kv": KV_HEADS,
                  "llama.attention.key_length": HEAD_DIM, "llama.attention.value_length": HEAD_DIM,
                  "llama.rope.dimension_count": HEAD_DIM, "general.name": "Llama IQ4 (random)"}
    for name, field in r.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        vtype = field.types[0]
        sub = field.types[1] if vtype == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(name, shape_keys.get(name, field.contents()), vtype, sub)
    n_vocab = int(r.fields["llama.vocab_size"].contents())
    raw = {IQ4_NL: gguf.GGMLQuantizationType.IQ4_NL, IQ4_XS: gguf.GGMLQuantizationType.IQ4_XS}
    # (the tiny llama's llama3 rope_freqs are for its 16-wide heads: left out, plain rope)
    for name, x, t in tensors(np.random.default_rng(20), n_vocab):
        if t is None:
            w.add_tensor(name, x)
        else:
            w.add_tensor(name, q(x, t), raw_dtype=raw[t])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"{dst}: {dst.stat().st_size} bytes")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ggml-base", required=True, type=Path)
    ap.add_argument("--driver", required=True, type=Path)
    ap.add_argument("--gguf-py", required=True, type=Path)
    a = ap.parse_args()
    sys.path.insert(0, str(a.gguf_py))
    import gguf  # noqa: E402
    spec = importlib.util.spec_from_file_location("mxfp4_fixtures", HERE / "make-mxfp4-fixtures.py")
    mx = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mx)
    out = TINY / "llama_iq4.gguf"
    write(gguf, quantizer(a.ggml_base), TINY / "llama.gguf", out)
    mx.llama_cpp_golden(a.driver, out, TINY / "llama.json", TINY / "llama_iq4.json", TOL, TOL_WHY, GENERATOR)


if __name__ == "__main__":
    main()
