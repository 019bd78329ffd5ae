#!/usr/bin/env python3
"""Goldens for vt's weight quantizers (core/quant.h: quantize_weights), made by ggml itself.

Writes tests/unit/goldens/quantize-weights.bin: fixed-seed f32 rows (awkward
ones included: all zeros, a lone outlier, negative-only, tiny, below ggml's
GROUP_MAX_EPS, constant, half-step ties, bf16-rounded) and, for each type,
the bytes ggml_quantize_chunk writes for them without an importance matrix
(that is quantize_row_<type>_ref, what llama.cpp's quantizer writes).
tests/unit/test-quantize-weights.cpp compares vt's bytes with them.

    python3 tests/unit/make-quant-goldens.py --ggml-base PATH/libggml-base.so

libggml-base.so comes from any llama.cpp build, e.g. the vendored one of the
llama-cpp-python 0.3.36 sdist (pip download --no-deps --no-binary :all:
llama-cpp-python==0.3.36; cmake -S vendor/llama.cpp -B build
-DBUILD_SHARED_LIBS=ON; cmake --build build --target ggml-base), or
llama_cpp/lib/ of an installed llama-cpp-python wheel. numpy only.

File layout (little-endian): "VTQG", u32 version 1, u32 n_rows, u32
n_per_row, u32 n_types, f32 rows[n_rows][n_per_row], then per type: u32
ggml type id, u32 n_bytes, the bytes.
"""
import argparse
import ctypes
import struct
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "goldens" / "quantize-weights.bin"
N_PER_ROW = 512  # two Q4_K/Q6_K super-blocks, sixteen 32-element blocks
# ggml_type ids (ggml.h)
TYPES = {"Q4_0": 2, "Q4_1": 3, "Q5_0": 6, "Q5_1": 7, "Q8_0": 8, "Q4_K": 12, "Q6_K": 14, "MXFP4": 39}
BLOCK = {2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34), 12: (256, 144), 14: (256, 210),
         39: (32, 17)}


def to_bf16_values(x: np.ndarray) -> np.ndarray:
    u = x.astype(np.float32).view(np.uint32)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.view(np.float32)


def rows() -> np.ndarray:
    rng = np.random.default_rng(20261202)
    n = N_PER_ROW
    out = []
    out.append(np.zeros(n))                                   # all zeros
    r = np.zeros(n); r[77] = 3.5; out.append(r)               # a lone outlier in zeros
    r = rng.normal(0, 0.01, n); r[300] = -2.0; out.append(r)  # a lone outlier in noise
    out.append(-np.abs(rng.normal(0, 0.05, n)))               # negative only
    out.append(np.abs(rng.normal(0, 0.05, n)))                # positive only
    out.append(rng.normal(0, 1e-6, n))                        # tiny (f16 subnormal scales)
    out.append(rng.normal(0, 1e-17, n))                       # below GROUP_MAX_EPS (1e-15)
    out.append(np.full(n, 0.125))                             # constant
    out.append(np.full(n, -0.3))                              # negative constant
    out.append(rng.integers(-16, 17, n) * 0.5)                # half-step values: rounding ties
    out.append(rng.integers(-8, 8, n).astype(np.float64))     # already on a 4-bit grid
    out.append(rng.standard_t(2.5, n) * 0.02)                 # heavy tails
    r = rng.normal(0, 0.02, n); r[rng.integers(0, n, 8)] *= 40; out.append(r)  # scattered outliers
    r = rng.normal(0, 0.02, n); r[:256] = 0; out.append(r)    # first super-block empty
    r = rng.normal(0, 0.02, n); r[32:64] = 0; r[300:316] = 0; out.append(r)  # empty sub-blocks
    r = rng.normal(0, 0.02, n); r[64:96] *= 1e-4; out.append(r)  # a sub-block scale that rounds to 0
    out.append(rng.uniform(-1, 1, n) ** 3)
    out.append(rng.normal(0.05, 0.01, n))                     # offset from zero (Q4_K's min)
    out.append(rng.normal(0, 100.0, n))                       # large values
    out.append(rng.normal(0, 2e3, n))                          # large scales (f16 d in the hundreds)
    for s in (0.02, 0.05, 0.1, 1.0):                          # weight-like rows, bf16-rounded too
        out.append(rng.normal(0, s, n))
        out.append(to_bf16_values(rng.normal(0, s, n)))
    return np.stack(out).astype(np.float32)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ggml-base", required=True, type=Path, help="libggml-base.so of a llama.cpp build")
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args()
    lib = ctypes.CDLL(str(a.ggml_base))
    lib.ggml_quantize_chunk.restype = ctypes.c_size_t
    lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                        ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    x = np.ascontiguousarray(rows())
    n_rows = x.shape[0]
    blob = bytearray(b"VTQG" + struct.pack("<IIII", 1, n_rows, N_PER_ROW, len(TYPES)))
    blob += x.tobytes()
    for name, t in TYPES.items():
        be, bb = BLOCK[t]
        dst = np.zeros(n_rows * N_PER_ROW // be * bb, dtype=np.uint8)
        got = lib.ggml_quantize_chunk(t, x.ctypes.data, dst.ctypes.data, 0, n_rows, N_PER_ROW, None)
        if got != dst.size:
            raise SystemExit(f"ggml_quantize_chunk({name}) wrote {got} bytes, expected {dst.size}")
        blob += struct.pack("<II", t, dst.size) + dst.tobytes()
        print(f"{name}: {dst.size} bytes")
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_bytes(bytes(blob))
    print(f"wrote {a.out} ({len(blob)} bytes, {n_rows} rows of {N_PER_ROW})")


if __name__ == "__main__":
    main()
