// Weight rows of every supported type, 32 elements (a "chunk") at a time:
// one block of the legacy types and IQ4_NL, one 32-element sub-block of the
// K quants and IQ4_XS, a half of NVFP4's, Q2_0's and FP8_E4M3's blocks, a
// quarter of Q1_0's, 32 elements of F32/F16/BF16. Block layouts are ggml's (lib/core/quant/
// blocks.h). The including shader declares the weight binding as
//   uint16_t w16[];  (16-bit storage: every block size and field offset is
// even, so u16 words reach any block wherever the row starts) and defines
// one W_<TYPE>. Dequantization follows ggml's order of operations (d * sc
// first, then * q, minus dmin * m) so values match the scalar references.

#if defined(W_F32)
#define W_FLOAT 1
#define W_BLOCK_ELEMS 1
#define W_BLOCK_BYTES 4
#elif defined(W_F16) || defined(W_BF16)
#define W_FLOAT 1
#define W_BLOCK_ELEMS 1
#define W_BLOCK_BYTES 2
#elif defined(W_Q4_0)
#define W_BLOCK_ELEMS 32
#define W_BLOCK_BYTES 18
#elif defined(W_Q4_1)
#define W_BLOCK_ELEMS 32
#define W_BLOCK_BYTES 20
#elif defined(W_Q5_0)
#define W_BLOCK_ELEMS 32
#define W_BLOCK_BYTES 22
#elif defined(W_Q5_1)
#define W_BLOCK_ELEMS 32
#define W_BLOCK_BYTES 24
#elif defined(W_Q8_0)
#define W_BLOCK_ELEMS 32
#define W_BLOCK_BYTES 34
#elif defined(W_Q4_K)
#define W_BLOCK_ELEMS 256
#define W_BLOCK_BYTES 144
#elif defined(W_Q5_K)
#define W_BLOCK_ELEMS 256
#define W_BLOCK_BYTES 176
#elif defined(W_Q6_K)
#define W_BLOCK_ELEMS 256
#define W_BLOCK_BYTES 210
#elif defined(W_IQ4_NL)
#define W_BLOCK_ELEMS 32
#define W_BLOCK_BYTES 18
#elif defined(W_IQ4_XS)
#define W_BLOCK_ELEMS 256
#define W_BLOCK_BYTES 136
#elif defined(W_NVFP4)
#define W_BLOCK_ELEMS 64
#define W_BLOCK_BYTES 36
#elif defined(W_Q1_0)
#define W_BLOCK_ELEMS 128
#define W_BLOCK_BYTES 18
#elif defined(W_Q2_0)
#define W_BLOCK_ELEMS 64
#define W_BLOCK_BYTES 18
#elif defined(W_FP8_E4M3)
#define W_BLOCK_ELEMS 64
#define W_BLOCK_BYTES 68
#else
#error "define one W_<type>"
#endif

uint wu(uint word) { return uint(w16[word]); }
// Sign-extends byte `sel` (0 low, 1 high) of a u16 word.
int s8(uint word16, uint sel) { return int(word16 << (24u - 8u * sel)) >> 24; }

// 6-bit scale and min of sub-block j of a Q4_K/Q5_K block whose scales start
// at u16 word sw (ggml's get_scale_min_k4).
void scale_min_k4(uint sw, uint j, out float sc, out float mn) {
    // The 12 bytes as three u32.
    const uint a0 = wu(sw) | (wu(sw + 1u) << 16), a1 = wu(sw + 2u) | (wu(sw + 3u) << 16),
               a2 = wu(sw + 4u) | (wu(sw + 5u) << 16);
    uint s, m;
    if (j < 4u) {
        s = (a0 >> (8u * j)) & 63u;
        m = (a1 >> (8u * j)) & 63u;
    } else {
        const uint jj = j - 4u;
        const uint q = (a2 >> (8u * jj)) & 255u;
        s = (q & 15u) | (((a0 >> (8u * jj)) >> 6 & 3u) << 4);
        m = (q >> 4) | (((a1 >> (8u * jj)) >> 6 & 3u) << 4);
    }
    sc = float(s);
    mn = float(m);
}

// IQ4_NL's and IQ4_XS's 16 levels (blocks.h kIq4nlValues) and the doubled
// e2m1 values of NVFP4's codes (kMxfp4Values).
const float kIq4nl[16] = float[16](-127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0,
                                   1.0, 13.0, 25.0, 38.0, 53.0, 69.0, 89.0, 113.0);
const float kE2m1x2[16] = float[16](0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 0.0, -1.0, -2.0, -3.0, -4.0, -6.0, -8.0, -12.0);
// Byte i of the block starting at u16 word b.
uint byte_at(uint b, uint i) { return (wu(b + i / 2u) >> (8u * (i & 1u))) & 255u; }
// NVFP4's UE4M3 scale byte, halved (blocks.h ue4m3_half); exact.
float ue4m3_half(uint x) {
    if (x == 0u || x == 0x7Fu) return 0.0;
    const uint e = (x >> 3) & 15u, m = x & 7u;
    return e == 0u ? float(m) * exp2(-10.0) : float(8u + m) * exp2(float(e) - 11.0);
}
// An e4m3fn byte's value, from its fields (no binary16 step: a GPU may
// flush the binary16 subnormals that e4m3's subnormals / 256 would be).
float e4m3(uint x) {
    const uint e = (x >> 3) & 15u, m = x & 7u;
    const float mag = e == 0u ? float(m) * exp2(-9.0) : float(8u + m) * exp2(float(e) - 10.0);
    return (x & 0x80u) != 0u ? -mag : mag;
}

// Elements 32c .. 32c+31 of the row starting at byte rb (even) into v; for
// the float types elements at or past k are 0 (rows need not be whole chunks).
void load_chunk(uint rb, uint c, uint k, inout float v[32]) {
#if defined(W_F32) || defined(W_F16) || defined(W_BF16)
    const uint e0 = 32u * c;
    for (uint i = 0u; i < 32u; ++i) {
        const uint e = e0 + i;
        float x = 0.0;
        if (e < k) {
#if defined(W_F32)
            const uint wd = rb / 2u + 2u * e;
            x = uintBitsToFloat(wu(wd) | (wu(wd + 1u) << 16));
#elif defined(W_F16)
            x = h2f(wu(rb / 2u + e));
#else
            x = b2f(wu(rb / 2u + e));
#endif
        }
        v[i] = x;
    }
#elif defined(W_Q4_0) || defined(W_Q4_1)
    const uint b = (rb + c * W_BLOCK_BYTES) / 2u;  // block, in u16 words
    const float d = h2f(wu(b));
#if defined(W_Q4_1)
    const float m = h2f(wu(b + 1u));
    const uint qs = b + 2u;
#else
    const uint qs = b + 1u;
#endif
    for (uint j = 0u; j < 8u; ++j) {
        const uint q = wu(qs + j);
        for (uint h = 0u; h < 2u; ++h) {
            const uint byte = (q >> (8u * h)) & 255u;
#if defined(W_Q4_1)
            v[2u * j + h] = float(byte & 15u) * d + m;
            v[2u * j + h + 16u] = float(byte >> 4) * d + m;
#else
            v[2u * j + h] = float(int(byte & 15u) - 8) * d;
            v[2u * j + h + 16u] = float(int(byte >> 4) - 8) * d;
#endif
        }
    }
#elif defined(W_Q5_0) || defined(W_Q5_1)
    const uint b = (rb + c * W_BLOCK_BYTES) / 2u;
    const float d = h2f(wu(b));
#if defined(W_Q5_1)
    const float m = h2f(wu(b + 1u));
    const uint qh = wu(b + 2u) | (wu(b + 3u) << 16), qs = b + 4u;
#else
    const uint qh = wu(b + 1u) | (wu(b + 2u) << 16), qs = b + 3u;
#endif
    for (uint j = 0u; j < 8u; ++j) {
        const uint q = wu(qs + j);
        for (uint h = 0u; h < 2u; ++h) {
            const uint l = 2u * j + h, byte = (q >> (8u * h)) & 255u;
            const uint x0 = (byte & 15u) | (((qh >> l) & 1u) << 4);
            const uint x1 = (byte >> 4) | (((qh >> (l + 16u)) & 1u) << 4);
#if defined(W_Q5_1)
            v[l] = float(x0) * d + m;
            v[l + 16u] = float(x1) * d + m;
#else
            v[l] = float(int(x0) - 16) * d;
            v[l + 16u] = float(int(x1) - 16) * d;
#endif
        }
    }
#elif defined(W_Q8_0)
    const uint b = (rb + c * W_BLOCK_BYTES) / 2u;
    const float d = h2f(wu(b));
    for (uint j = 0u; j < 16u; ++j) {
        const uint q = wu(b + 1u + j);
        v[2u * j] = float(s8(q, 0u)) * d;
        v[2u * j + 1u] = float(s8(q, 1u)) * d;
    }
#elif defined(W_Q4_K) || defined(W_Q5_K)
    const uint j = c % 8u;  // sub-block of the super-block
    const uint b = (rb + (c / 8u) * W_BLOCK_BYTES) / 2u;
    const float d = h2f(wu(b)), dmin = h2f(wu(b + 1u));
    float sc, mn;
    scale_min_k4(b + 2u, j, sc, mn);
    const float d1 = d * sc, m1 = dmin * mn;
#if defined(W_Q5_K)
    const uint qh = b + 8u, qs = b + 24u + 16u * (j / 2u);
#else
    const uint qs = b + 8u + 16u * (j / 2u);
#endif
    const uint shift = 4u * (j & 1u);
    for (uint w = 0u; w < 16u; ++w) {
        const uint q = wu(qs + w);
#if defined(W_Q5_K)
        const uint hb = wu(qh + w);
#endif
        for (uint h = 0u; h < 2u; ++h) {
            uint x = (q >> (8u * h + shift)) & 15u;
#if defined(W_Q5_K)
            x |= ((hb >> (8u * h + j)) & 1u) << 4;
#endif
            v[2u * w + h] = d1 * float(x) - m1;
        }
    }
#elif defined(W_Q6_K)
    const uint j = c % 8u, hf = j / 4u, s = j % 4u;
    const uint b = (rb + (c / 8u) * W_BLOCK_BYTES) / 2u;
    const float d = h2f(wu(b + 104u));
    const uint ql = b + 32u * hf + 16u * (s & 1u), qh = b + 64u + 16u * hf;
    const uint scw = wu(b + 96u + 4u * hf + s);  // scales 8h + 2s (l < 16) and + 1 (l >= 16)
    const float sc0 = d * float(s8(scw, 0u)), sc1 = d * float(s8(scw, 1u));
    const uint lshift = 4u * (s >> 1), hshift = 2u * s;
    for (uint w = 0u; w < 16u; ++w) {
        const uint lo = wu(ql + w), hi = wu(qh + w);
        for (uint h = 0u; h < 2u; ++h) {
            const uint l = 2u * w + h;
            const uint x = ((lo >> (8u * h + lshift)) & 15u) | (((hi >> (8u * h + hshift)) & 3u) << 4);
            v[l] = (l < 16u ? sc0 : sc1) * float(int(x) - 32);
        }
    }
#elif defined(W_IQ4_NL) || defined(W_IQ4_XS)
#if defined(W_IQ4_NL)
    const uint b = (rb + c * W_BLOCK_BYTES) / 2u;
    const float dl = h2f(wu(b));
    const uint qs = b + 1u;
#else
    const uint s = c % 8u;  // sub-block of the super-block
    const uint b = (rb + (c / 8u) * W_BLOCK_BYTES) / 2u;
    const uint ls = ((byte_at(b + 2u, s / 2u) >> (4u * (s & 1u))) & 15u) | (((wu(b + 1u) >> (2u * s)) & 3u) << 4);
    const float dl = h2f(wu(b)) * float(int(ls) - 32);
    const uint qs = b + 4u + 8u * s;
#endif
    for (uint j = 0u; j < 8u; ++j) {
        const uint q = wu(qs + j);
        for (uint h = 0u; h < 2u; ++h) {
            const uint byte = (q >> (8u * h)) & 255u;
            v[2u * j + h] = dl * kIq4nl[byte & 15u];
            v[2u * j + h + 16u] = dl * kIq4nl[byte >> 4];
        }
    }
#elif defined(W_NVFP4)
    // Half hh of the block: sub-blocks 2hh and 2hh + 1, each 8 code bytes,
    // element i in the low nibble of byte i, i + 8 in its high one.
    const uint hh = c % 2u, b = (rb + (c / 2u) * W_BLOCK_BYTES) / 2u;
    for (uint ss = 0u; ss < 2u; ++ss) {
        const uint s = 2u * hh + ss;
        const float d = ue4m3_half(byte_at(b, s));
        for (uint i = 0u; i < 8u; ++i) {
            const uint byte = byte_at(b + 2u, 8u * s + i);
            v[16u * ss + i] = kE2m1x2[byte & 15u] * d;
            v[16u * ss + i + 8u] = kE2m1x2[byte >> 4] * d;
        }
    }
#elif defined(W_Q1_0)
    const uint q4 = c % 4u, b = (rb + (c / 4u) * W_BLOCK_BYTES) / 2u;
    const float d = h2f(wu(b));
    const uint bits = wu(b + 1u + 2u * q4) | (wu(b + 2u + 2u * q4) << 16);
    for (uint j = 0u; j < 32u; ++j) v[j] = ((bits >> j) & 1u) != 0u ? d : -d;
#elif defined(W_Q2_0)
    const uint hh = c % 2u, b = (rb + (c / 2u) * W_BLOCK_BYTES) / 2u;
    const float d = h2f(wu(b));
    for (uint j = 0u; j < 32u; ++j) {
        const uint code = (byte_at(b + 1u, 8u * hh + j / 4u) >> (2u * (j % 4u))) & 3u;
        v[j] = float(int(code) - 1) * d;
    }
#elif defined(W_FP8_E4M3)
    // Half hh of the block: the f32 scale, then bytes 32hh.. of the 64.
    const uint hh = c % 2u, b = (rb + (c / 2u) * W_BLOCK_BYTES) / 2u;
    const float d = uintBitsToFloat(wu(b) | (wu(b + 1u) << 16));
    for (uint j = 0u; j < 32u; ++j) v[j] = e4m3(byte_at(b + 2u, 32u * hh + j)) * d;
#endif
}
