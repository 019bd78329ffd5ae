#!/usr/bin/env python3
"""GGUF fixtures of the weight types ggml quantizes, and llama.cpp's logits on them.

The types whose blocks are wider than the tiny models' 64-wide rows (IQ4_XS's
256, Q1_0's 128) need wider matrices; so this writes one-layer Llamas 256
wide (4 query heads and 2 KV heads of 64, FFN 512) with the tiny llama's
tokenizer (llama.gguf's keys, 383 tokens), seeded random weights (matrices
N(0, 1/fan_in), norms 1 + N(0, 0.1^2)), every matrix quantized by
ggml_quantize_chunk (libggml-base, no importance matrix) with the types mixed
per tensor as unsloth's dynamic quants mix them:

    llama_iq4.gguf     token embedding, attention, output IQ4_XS; FFN IQ4_NL
    llama_lowbit.gguf  token embedding, attention, output NVFP4; FFN gate and
                       up Q2_0, down Q1_0
    llama_ternary.gguf attention TQ1_0, FFN TQ2_0; token embedding and output
                       Q8_0
    llama_iq2.gguf     token embedding, output IQ3_S; attention IQ2_XXS; FFN
                       gate and up IQ2_XS, down IQ2_S
    llama_iq1.gguf     token embedding, output IQ3_XXS; attention IQ1_M; FFN
                       gate and up IQ1_S, down IQ1_M

(the i-quants with an all-ones importance matrix, which three of them need)

and for each, tests/models/tiny/<name>.json: llama.json's prompts with
llama.cpp's logits on that file and its 32 greedy tokens (llama.cpp as the
oracle, as issue 44 asks: vt reads the file ggml wrote, and both engines
quantize the activations: Q8_K for IQ4_XS and the i-quants, Q8_0 for the
rest).

    /work/oracle-venv/bin/python tests/models/make-gguf-type-fixtures.py \\
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
Q8_0, IQ4_NL, IQ4_XS, TQ1_0, TQ2_0, NVFP4, Q1_0, Q2_0 = 8, 20, 23, 34, 35, 40, 41, 42
IQ2_XXS, IQ2_XS, IQ3_XXS, IQ1_S, IQ3_S, IQ2_S, IQ1_M = 16, 17, 18, 19, 21, 22, 29
BLOCKS = {Q8_0: (32, 34), IQ4_NL: (32, 18), IQ4_XS: (256, 136), TQ1_0: (256, 54), TQ2_0: (256, 66),
          NVFP4: (64, 36), Q1_0: (128, 18), Q2_0: (64, 18),
          IQ2_XXS: (256, 66), IQ2_XS: (256, 74), IQ3_XXS: (256, 98), IQ1_S: (256, 50), IQ3_S: (256, 110),
          IQ2_S: (256, 82), IQ1_M: (256, 56)}
# ggml's i-quant quantizers search their grids weighted by an importance
# matrix, and IQ2_XXS, IQ2_XS and IQ1_S refuse to run without one: these get
# all-ones weights (every column equally important).
IQ_TYPES = {IQ2_XXS, IQ2_XS, IQ3_XXS, IQ1_S, IQ3_S, IQ2_S, IQ1_M}
WIDTH, FFN, HEADS, KV_HEADS, HEAD_DIM = 256, 512, 4, 2, 64


class Fixture:
    def __init__(self, name: str, embd: int, attn: int, gate_up: int, down: int, tol: float, tol_why: str):
        self.name, self.embd, self.attn, self.gate_up, self.down = name, embd, attn, gate_up, down
        self.tol, self.tol_why = tol, tol_why


FIXTURES = [
    # Both engines quantize the activations (Q8_K for IQ4_XS, Q8_0 for
    # IQ4_NL), and on this 256-wide model that alone moves logits (range
    # +-14) by about 0.13 from the float64 evaluation of the same dequantized
    # weights, measured when this was written: llama.cpp 0.128, vt 0.135
    # (AVX-512 and AVX2 alike), vt against llama.cpp 0.129. Each engine
    # within 0.15 of the exact value puts them within 0.3 of each other. A
    # wrong sub-block scale (ls - 31 for ls - 32) moved vt's logits by 0.98
    # (checked by mutation when this was written); a wrong level or nibble
    # order fails test-iq4.
    Fixture("llama_iq4", IQ4_XS, IQ4_XS, IQ4_NL, IQ4_NL, 0.3,
            "both engines quantize activations (Q8_K / Q8_0): each measured 0.13 from the float64 evaluation of the "
            "dequantized weights (llama.cpp 0.128, vt 0.135), vt vs llama.cpp 0.129; twice 0.15"),
    # The same weights in NVFP4, Q2_0 and Q1_0, Q8_0 activations: llama.cpp
    # 0.116 from the float64 evaluation of the dequantized weights (decoded
    # in numpy from ggml's definitions), vt 0.125 (AVX-512 and AVX2), vt
    # against llama.cpp 0.099: the same 0.3. A wrong code or bit order fails
    # test-lowbit.
    Fixture("llama_lowbit", NVFP4, NVFP4, Q2_0, Q1_0, 0.3,
            "both engines quantize activations to Q8_0: llama.cpp 0.116 and vt 0.125 from the float64 evaluation of "
            "the dequantized weights, vt vs llama.cpp 0.099; twice 0.15"),
    # Ternary weights (BitNet b1.58's TQ1_0 and TQ2_0: attention TQ1_0, FFN
    # TQ2_0) beside a Q8_0 embedding and output, as BitNet GGUFs keep those
    # wider; Q8_K activations for the ternary types, Q8_0 for the rest. vt
    # against llama.cpp measured 0.150 (AVX-512 and AVX2) when this was
    # written: the same 0.3. A wrong trit order or code offset fails
    # test-ternary.
    Fixture("llama_ternary", Q8_0, TQ1_0, TQ2_0, TQ2_0, 0.3,
            "both engines quantize activations (Q8_K for TQ1_0 / TQ2_0, Q8_0 for the embedding and output): vt vs "
            "llama.cpp measured 0.150 (AVX-512 and AVX2); twice 0.15"),
    # All seven i-quants over two Llamas, Q8_K activations, measured when
    # this was written as for llama_iq4 (float64 evaluation of the weights as
    # gguf-py dequantizes them; vt the same on AVX-512 and AVX2): llama_iq2
    # llama.cpp 0.178, vt 0.163, vt vs llama.cpp 0.154; llama_iq1 llama.cpp
    # 0.191, vt 0.214, vt vs llama.cpp 0.178. By mutation, IQ2_XS's two half
    # scales swapped moved vt's logits by 3.6, IQ1_M's delta signs flipped by
    # 5.9; a wrong grid entry, sign or bit fails test-iquants.
    Fixture("llama_iq2", IQ3_S, IQ2_XXS, IQ2_XS, IQ2_S, 0.3,
            "both engines quantize activations to Q8_K: llama.cpp 0.178 and vt 0.163 from the float64 evaluation of "
            "the dequantized weights, vt vs llama.cpp 0.154; a swapped IQ2_XS half scale moves vt 3.6"),
    Fixture("llama_iq1", IQ3_XXS, IQ1_M, IQ1_S, IQ1_M, 0.3,
            "both engines quantize activations to Q8_K: llama.cpp 0.191 and vt 0.214 from the float64 evaluation of "
            "the dequantized weights, vt vs llama.cpp 0.178; flipped IQ1_M delta signs move vt 5.9"),
]


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
        imatrix = np.ones(n_per_row, dtype=np.float32) if t in IQ_TYPES else None
        got = f(t, x.ctypes.data, dst.ctypes.data, 0, n_rows, n_per_row,
                None if imatrix is None else imatrix.ctypes.data)
        assert got == dst.size
        return dst.reshape(*x.shape[:-1], n_per_row // be * bb)
    return q


def tensors(rng: np.random.Generator, n_vocab: int, fx: Fixture) -> list[tuple[str, np.ndarray, int | None]]:
    """(name, f32 array in numpy order (rows, row length), ggml type or None for f32)."""
    def mat(rows: int, k: int) -> np.ndarray:
        return rng.normal(0.0, 1.0 / np.sqrt(k), size=(rows, k)).astype(np.float32)

    def norm() -> np.ndarray:
        return (1.0 + rng.normal(0.0, 0.1, size=WIDTH)).astype(np.float32)
    kv = KV_HEADS * HEAD_DIM
    return [
        ("token_embd.weight", rng.normal(0.0, 1.0, size=(n_vocab, WIDTH)).astype(np.float32), fx.embd),
        ("blk.0.attn_norm.weight", norm(), None),
        ("blk.0.attn_q.weight", mat(HEADS * HEAD_DIM, WIDTH), fx.attn),
        ("blk.0.attn_k.weight", mat(kv, WIDTH), fx.attn),
        ("blk.0.attn_v.weight", mat(kv, WIDTH), fx.attn),
        ("blk.0.attn_output.weight", mat(WIDTH, HEADS * HEAD_DIM), fx.attn),
        ("blk.0.ffn_norm.weight", norm(), None),
        ("blk.0.ffn_gate.weight", mat(FFN, WIDTH), fx.gate_up),
        ("blk.0.ffn_up.weight", mat(FFN, WIDTH), fx.gate_up),
        ("blk.0.ffn_down.weight", mat(WIDTH, FFN), fx.down),
        ("output_norm.weight", norm(), None),
        ("output.weight", 3.0 * mat(n_vocab, WIDTH), fx.embd),
    ]


def write(gguf, q, src: Path, dst: Path, fx: Fixture) -> None:
    r = gguf.GGUFReader(str(src))
    w = gguf.GGUFWriter(str(dst), "llama")
    shape_keys = {"llama.block_count": 1, "llama.embedding_length": WIDTH, "llama.feed_forward_length": FFN,
                  "llama.attention.head_count": HEADS, "llama.attention.head_count_kv": KV_HEADS,
                  "llama.attention.key_length": HEAD_DIM, "llama.attention.value_length": HEAD_DIM,
                  "llama.rope.dimension_count": HEAD_DIM, "general.name": f"{fx.name} (random)"}
    for name, field in r.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        vtype = field.types[0]
        sub = field.types[1] if vtype == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(name, shape_keys.get(name, field.contents()), vtype, sub)
    n_vocab = int(r.fields["llama.vocab_size"].contents())
    raw = {t: gguf.GGMLQuantizationType(t) for t in BLOCKS}
    # (the tiny llama's llama3 rope_freqs are for its 16-wide heads: left out, plain rope)
    for name, x, t in tensors(np.random.default_rng(20), n_vocab, fx):
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
    ap.add_argument("--only", help="comma-separated subset of " + ",".join(fx.name for fx in FIXTURES))
    a = ap.parse_args()
    sys.path.insert(0, str(a.gguf_py))
    import gguf  # noqa: E402
    spec = importlib.util.spec_from_file_location("mxfp4_fixtures", HERE / "make-mxfp4-fixtures.py")
    mx = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mx)
    q = quantizer(a.ggml_base)
    only = set(a.only.split(",")) if a.only else None
    for fx in FIXTURES:
        if only and fx.name not in only:
            continue
        out = TINY / f"{fx.name}.gguf"
        write(gguf, q, TINY / "llama.gguf", out, fx)
        generator = (f"llama.cpp 0.3.36 (tests/models/make-gguf-type-fixtures.py: tiny-logits driver, f32 KV, no "
                     f"flash attention) on {fx.name}.gguf, llama.json's prompts")
        mx.llama_cpp_golden(a.driver, out, TINY / "llama.json", TINY / f"{fx.name}.json", fx.tol, fx.tol_why,
                            generator)


if __name__ == "__main__":
    main()
