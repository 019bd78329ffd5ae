#!/usr/bin/env python3
"""Writes lib/core/quant/iq-grids.h: the lattice grids of ggml's i-quants
(IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S/IQ1_M), read from the PyPI
`gguf` package's gguf/quants.py (each class's grid_hex / grid_map /
grid_shape, decoded by its own init_grid), never typed in by hand.

    /work/main/.venv/bin/python lib/core/quant/gen-iq-grids.py   (any Python with gguf and numpy)

Before writing, it checks the tables: each type's blocks are decoded here
from their bytes with the tables and the layouts of lib/core/quant/blocks.h,
in double, and compared exactly with gguf.quants.dequantize of the same
bytes (random blocks with a moderate f16 scale). The sign table ggml calls
ksigns_iq2xs is not written out: it is computable (7 bits plus an odd-parity
eighth bit that makes the count of set bits even: iq_signs() in blocks.h); this script checks that rule against
gguf's IQ2_XXS.ksigns too.
"""
import sys
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants

OUT = Path(__file__).resolve().parent / "iq-grids.h"
QK_K = 256


def grid(cls):
    """cls's grid as a list of tuples of ints (element j of each entry)."""
    cls.init_grid()
    g = np.asarray(cls.grid).reshape(cls.grid_shape)
    assert np.all(g == np.round(g)), cls.__name__
    return [tuple(int(v) for v in row) for row in g]


GRIDS = {
    # C++ name, gguf class, bytes per entry
    "kIq2xxsGrid": (quants.IQ2_XXS, 8),
    "kIq2xsGrid": (quants.IQ2_XS, 8),
    "kIq2sGrid": (quants.IQ2_S, 8),
    "kIq3xxsGrid": (quants.IQ3_XXS, 4),
    "kIq3sGrid": (quants.IQ3_S, 4),
    "kIq1sGrid": (quants.IQ1_S, 8),
}
G = {name: grid(cls) for name, (cls, _) in GRIDS.items()}


def signs(i):  # the 7-bit index plus the parity bit (blocks.h iq_signs)
    return i | (bin(i).count("1") & 1) << 7


def sgn(byte, j):
    return -1.0 if byte >> j & 1 else 1.0


def f16(b, off):
    return float(np.frombuffer(bytes(b[off:off + 2]), dtype=np.float16)[0])


def u16(b, off):
    return b[off] | b[off + 1] << 8


def u32(b, off):
    return b[off] | b[off + 1] << 8 | b[off + 2] << 16 | b[off + 3] << 24


# ---- the decodings, one block of bytes -> 256 floats (blocks.h's layouts) ----

def iq2_xxs(b):
    d, y = f16(b, 0), []
    for s in range(8):
        idx, aux = u32(b, 2 + 8 * s), u32(b, 6 + 8 * s)
        db = d * (2 * (aux >> 28) + 1) / 8
        for l in range(4):
            g, sb = G["kIq2xxsGrid"][idx >> 8 * l & 255], signs(aux >> 7 * l & 127)
            y += [db * g[j] * sgn(sb, j) for j in range(8)]
    return y


def iq2_xs(b):
    d, y = f16(b, 0), []
    for s in range(8):
        sc = b[66 + s]
        for l in range(4):
            q = u16(b, 2 + 2 * (4 * s + l))
            db = d * (2 * (sc >> 4 * (l // 2) & 15) + 1) / 8
            g, sb = G["kIq2xsGrid"][q & 511], signs(q >> 9)
            y += [db * g[j] * sgn(sb, j) for j in range(8)]
    return y


def iq2_s(b):  # d, qs[32] low index bits, signs[32], qh[8], scales[8]
    d, y = f16(b, 0), []
    for s in range(8):
        sc, qh = b[74 + s], b[66 + s]
        for l in range(4):
            db = d * (2 * (sc >> 4 * (l // 2) & 15) + 1) / 8
            g = G["kIq2sGrid"][b[2 + 4 * s + l] | (qh >> 2 * l & 3) << 8]
            sb = b[34 + 4 * s + l]
            y += [db * g[j] * sgn(sb, j) for j in range(8)]
    return y


def iq3_xxs(b):  # d, qs[64] indices, then 8 u32 of 4 sign indices + scale
    d, y = f16(b, 0), []
    for s in range(8):
        aux = u32(b, 66 + 4 * s)
        db = d * (2 * (aux >> 28) + 1) / 4
        for l in range(4):
            sb = signs(aux >> 7 * l & 127)
            g = G["kIq3xxsGrid"][b[2 + 8 * s + 2 * l]] + G["kIq3xxsGrid"][b[2 + 8 * s + 2 * l + 1]]
            y += [db * g[j] * sgn(sb, j) for j in range(8)]
    return y


def iq3_s(b):  # d, qs[64], qh[8], signs[32], scales[4]
    d, y = f16(b, 0), []
    for s in range(8):
        db = d * (2 * (b[106 + s // 2] >> 4 * (s % 2) & 15) + 1)
        qh = b[66 + s]
        for l in range(4):
            g = ()
            for k in (2 * l, 2 * l + 1):
                g += G["kIq3sGrid"][b[2 + 8 * s + k] | (qh >> k & 1) << 8]
            sb = b[74 + 4 * s + l]
            y += [db * g[j] * sgn(sb, j) for j in range(8)]
    return y


def iq1_s(b):  # d, qs[32], qh[8] u16
    d, y = f16(b, 0), []
    for s in range(8):
        qh = u16(b, 34 + 2 * s)
        dl = d * (2 * (qh >> 12 & 7) + 1)
        delta = -0.125 if qh & 0x8000 else 0.125
        for l in range(4):
            g = G["kIq1sGrid"][b[2 + 4 * s + l] | (qh >> 3 * l & 7) << 8]
            y += [dl * (g[j] + delta) for j in range(8)]
    return y


def iq1_m_d(b):  # the f16 scale from the top nibbles of the four scale words
    sc = [u16(b, 48 + 2 * k) for k in range(4)]
    h = sc[0] >> 12 | (sc[1] >> 8 & 0xF0) | (sc[2] >> 4 & 0xF00) | (sc[3] & 0xF000)
    return float(np.array([h], dtype=np.uint16).view(np.float16)[0])


def iq1_m(b):  # qs[32], qh[16], scales[8] (4 u16)
    d, y = iq1_m_d(b), []
    for s in range(8):
        sc = u16(b, 48 + 2 * (s // 2))
        for l in range(4):
            ls = sc >> (6 * (s % 2) + 3 * (l // 2)) & 7
            h = b[32 + 2 * s + l // 2] >> 4 * (l % 2) & 15
            g = G["kIq1sGrid"][b[4 * s + l] | (h & 7) << 8]
            delta = -0.125 if h & 8 else 0.125
            y += [d * (2 * ls + 1) * (g[j] + delta) for j in range(8)]
    return y


DECODERS = [
    (T.IQ2_XXS, iq2_xxs, 66, 0), (T.IQ2_XS, iq2_xs, 74, 0), (T.IQ2_S, iq2_s, 82, 0),
    (T.IQ3_XXS, iq3_xxs, 98, 0), (T.IQ3_S, iq3_s, 110, 0), (T.IQ1_S, iq1_s, 50, 0),
    (T.IQ1_M, iq1_m, 56, None),
]


def moderate_f16(rng):
    return np.array([rng.uniform(0.002, 0.05) * rng.choice([-1, 1])], dtype=np.float16).view(np.uint16)[0]


def check():
    assert [signs(i) for i in range(128)] == list(quants.IQ2_XXS.ksigns), "ksigns rule"
    rng = np.random.default_rng(1234)
    for t, decode, nbytes, d_at in DECODERS:
        assert quants.GGML_QUANT_SIZES[t] == (QK_K, nbytes), t.name
        nblk = 64
        raw = rng.integers(0, 256, size=(nblk, nbytes), dtype=np.uint8)
        for i in range(nblk):
            h = int(moderate_f16(rng))
            if d_at is not None:
                raw[i, d_at], raw[i, d_at + 1] = h & 255, h >> 8
            else:  # IQ1_M: the f16's nibbles in the top of each scale word
                for k in range(4):
                    raw[i, 49 + 2 * k] = (raw[i, 49 + 2 * k] & 0x0F) | (h >> 4 * k & 15) << 4
        theirs = quants.dequantize(raw.reshape(-1), t).reshape(nblk, QK_K).astype(np.float64)
        for i in range(nblk):
            blk = [int(v) for v in raw[i]]
            mine = np.array(decode(blk), dtype=np.float64)
            if not np.array_equal(mine, theirs[i]):
                bad = np.nonzero(mine != theirs[i])[0]
                sys.exit(f"{t.name} block {i}: element {bad[0]} is {mine[bad[0]]}, gguf says {theirs[i][bad[0]]}")
        print(f"{t.name}: {nblk} random blocks decode as gguf.quants.dequantize does")


def table(name, bytes_per):
    ctype = "uint64_t" if bytes_per == 8 else "uint32_t"
    entries = []
    for row in G[name]:
        v = 0
        for j, e in enumerate(row):
            v |= (e & 255) << 8 * j
        entries.append(f"0x{v:0{2 * bytes_per}x}")
    per_line = 4 if bytes_per == 8 else 8
    lines = [", ".join(entries[i:i + per_line]) + "," for i in range(0, len(entries), per_line)]
    return f"static constexpr {ctype} {name}[{len(entries)}] = {{\n" + "\n".join("    " + l for l in lines) + "\n};\n"


def main():
    check()
    out = [
        "// Generated by lib/core/quant/gen-iq-grids.py from the PyPI gguf package's",
        "// gguf/quants.py; do not edit. Rerun: python3 lib/core/quant/gen-iq-grids.py",
        "// (needs gguf and numpy; it first checks its decoding with these tables",
        "// against gguf.quants.dequantize).",
        "//",
        "// ggml's i-quant lattices (ggml-common.h iq2xxs_grid, iq2xs_grid, iq2s_grid,",
        "// iq3xxs_grid, iq3s_grid, iq1s_grid): entry i's element j is byte j",
        "// (little-endian) of the i-th value. IQ2 grids hold 8, 25, 43; IQ3_XXS's",
        "// 4..62 and IQ3_S's 1..15 (odd); IQ1_S's (also IQ1_M's) int8 -1, 0, 1.",
        "#pragma once",
        "",
        "#include <cstdint>",
        "",
        "namespace vt::quant {",
        "",
    ]
    for name, (_, bytes_per) in GRIDS.items():
        out.append(table(name, bytes_per))
    out += ["} // namespace vt::quant", ""]
    OUT.write_text("\n".join(out))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
