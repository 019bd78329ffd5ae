#include "cpu/kernels/repack.h"

#include <cstring>

#include "core/quant/blocks.h"

namespace vt::quant {

namespace {
// A base block is a header of f16 fields (d, then m for Q4_1 and Q5_1,
// dmin for Q4_K; MXFP4: one byte, e; NVFP4: four bytes, d[4]; FP8_E4M3: its
// f32 d) and a payload of quants; Q6_K's, TQ1_0's and TQ2_0's one field, d, comes last instead.
// An _X16 group stores the payloads interleaved by dword, then each header
// field for the 16 rows. The plain float types (F16, BF16) take
// x16_block_elems of them as a block, with no header.
struct BlockShape {
    size_t bytes, header;
    size_t header_at, payload_at; // offsets in the base block
    size_t field = 2;             // bytes of one header field: f16, one byte (MXFP4, NVFP4) or f32 (FP8_E4M3)
};
BlockShape shape(DType base) {
    const size_t bytes = row_bytes(base, x16_block_elems(base));
    if (base == DType::Q6_K || base == DType::TQ1_0 || base == DType::TQ2_0) return {bytes, 2, bytes - 2, 0}; // d last
    if (base == DType::MXFP4) return {bytes, 1, 0, 1, 1};
    if (base == DType::NVFP4) return {bytes, 4, 0, 4, 1}; // d[4]: four one-byte fields
    if (base == DType::FP8_E4M3) return {bytes, 4, 0, 4, 4}; // d: one f32 field
    const bool plain = dtype_info(base).block_elems == 1;
    // Two header fields: d and m (Q4_1, Q5_1), d and dmin (Q4_K), d and
    // scales_h (IQ4_XS: its payload, scales_l and qs, is then 33 whole dwords).
    const bool two_fields = base == DType::Q4_1 || base == DType::Q5_1 || base == DType::Q4_K || base == DType::IQ4_XS;
    const size_t header = plain ? 0 : two_fields ? 4 : 2;
    return {bytes, header, 0, header};
}

// The base payload's dword that goes to dword u of the layout: the same one,
// except for Q6_K (blocks.h: its scales first, then per half h and l = 4j
// the ql dwords of l and 32 + l and the qh dword of l, which one step of
// the kernels reads together).
size_t payload_dword(DType base, size_t u) {
    if (base != DType::Q6_K) return u;
    if (u < 4) return 48 + u;
    const size_t i = (u - 4) / 3, h = i / 8, j = i % 8;
    const size_t at[3] = {16 * h + j, 16 * h + 8 + j, 32 + 8 * h + j};
    return at[(u - 4) % 3];
}

// Q5_0's and Q5_1's fifth bits (qh, the payload's dword 0: bit 4k + i for
// byte i of step k, x16-layout.h) sliced by step: byte i of the layout's
// dword holds bit 4k + i of qh as its bit k, so that a kernel moves step k's
// bits to bit 4 of each byte with one shift of the whole register (4 - k
// left, or k - 4 right) and keeps them with one mask. An 8 x 4 bit
// transpose: per step, its nibble spread to the lowest bit of 4 bytes (the
// multiplier's shifts 0, 7, 14, 21 put nibble bit i at 8i and overlap
// nowhere, so nothing carries), and back.
bool fifth_bits(DType base, size_t u) { return u == 0 && (base == DType::Q5_0 || base == DType::Q5_1); }
uint32_t slice_fifth_bits(uint32_t qh) {
    uint32_t v = 0;
    for (int k = 0; k < 8; ++k) v |= ((((qh >> 4 * k) & 15u) * 0x00204081u) & 0x01010101u) << k;
    return v;
}
uint32_t unslice_fifth_bits(uint32_t v) {
    uint32_t qh = 0;
    for (int k = 0; k < 8; ++k) qh |= ((((v >> k) & 0x01010101u) * 0x01020408u) >> 24 & 15u) << 4 * k;
    return qh;
}

// Q2_0's qs dwords: byte j holds elements 4j..4j+3 of its 16 as 2-bit
// fields; the layout's byte i holds field i of bytes 0..3 (elements i, 4 + i,
// 8 + i, 12 + i) as its fields 0..3, so that the kernels take step k's codes
// (elements 4k..4k+3 of a row) as field k of each byte. A transpose of 4 x 4
// fields: its own inverse.
bool q2_0_fields(DType base) { return base == DType::Q2_0; }
uint32_t transpose_fields(uint32_t v) {
    uint32_t t = 0;
    for (int j = 0; j < 4; ++j)
        for (int i = 0; i < 4; ++i) t |= ((v >> (8 * j + 2 * i)) & 3u) << (8 * i + 2 * j);
    return t;
}

} // namespace

int64_t x16_block_elems(DType base) {
    const int64_t be = dtype_info(base).block_elems;
    return be == 1 ? 32 : be;
}

// Loading copies every weight once: a dword per (row, step) with the
// offsets of a block computed once for its 16 rows.
void repack_x16(DType base, const void *src, size_t src_stride, void *dst, int64_t k, int64_t n_rows) {
    const BlockShape s = shape(base);
    const size_t payload = s.bytes - s.header;
    const int64_t nb = k / x16_block_elems(base);
    const uint8_t *in = static_cast<const uint8_t *>(src);
    uint8_t *out = static_cast<uint8_t *>(dst);
    for (int64_t g = 0; g < n_rows / 16; ++g) {
        uint8_t *o = out + (size_t)(g * nb) * 16 * s.bytes;
        const uint8_t *rows = in + (size_t)(16 * g) * src_stride;
        for (int64_t b = 0; b < nb; ++b) {
            const X16At at = x16_at(s.bytes, payload, b, nb, s.field);
            const uint8_t *x = rows + (size_t)b * s.bytes;
            for (size_t u = 0; u < payload / 4; ++u)
                for (int r = 0; r < 16; ++r) {
                    uint32_t v;
                    std::memcpy(&v, x + r * src_stride + s.payload_at + 4 * payload_dword(base, u), 4);
                    if (fifth_bits(base, u)) v = slice_fifth_bits(v);
                    if (q2_0_fields(base)) v = transpose_fields(v);
                    std::memcpy(o + at.q + 64 * u + 4 * r, &v, 4);
                }
            for (size_t h = 0; h < s.header / s.field; ++h)
                for (int r = 0; r < 16; ++r)
                    std::memcpy(o + at.h + h * at.field + s.field * r, x + r * src_stride + s.header_at + s.field * h,
                                s.field);
        }
    }
}

void unpack_row_x16(DType base, const void *src, int64_t k, int r, int64_t b0, int64_t n, void *dst) {
    const BlockShape s = shape(base);
    const size_t payload = s.bytes - s.header;
    const int64_t nb = k / x16_block_elems(base);
    const uint8_t *g = static_cast<const uint8_t *>(src);
    uint8_t *out = static_cast<uint8_t *>(dst);
    for (int64_t b = b0; b < b0 + n; ++b) {
        uint8_t *x = out + (size_t)(b - b0) * s.bytes;
        const X16At at = x16_at(s.bytes, payload, b, nb, s.field);
        for (size_t u = 0; u < payload / 4; ++u) {
            uint32_t v;
            std::memcpy(&v, g + at.q + 64 * u + 4 * r, 4);
            if (fifth_bits(base, u)) v = unslice_fifth_bits(v);
            if (q2_0_fields(base)) v = transpose_fields(v);
            std::memcpy(x + s.payload_at + 4 * payload_dword(base, u), &v, 4);
        }
        for (size_t h = 0; h < s.header / s.field; ++h)
            std::memcpy(x + s.header_at + s.field * h, g + at.h + h * at.field + s.field * r, s.field);
    }
}

} // namespace vt::quant
