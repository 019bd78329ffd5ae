// Where the fp16 scale and min fields sit in each block format, so tests can
// fill blocks with random bytes and then overwrite those fields with finite,
// moderate values (random bytes there would be NaN/inf or huge).
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "core/quant.h"

namespace vt::test {

// Byte offsets of a block's fp16 scale fields (d-like) and min fields.
struct Fields {
    std::vector<int> scales, mins;
};

inline Fields fp16_fields(DType t) {
    switch (t) {
    case DType::Q4_0: case DType::Q5_0: case DType::Q8_0: return {{0}, {}};
    case DType::Q4_1: case DType::Q5_1: return {{0}, {2}};
    case DType::Q2_K: return {{80}, {82}};
    case DType::Q3_K: return {{108}, {}};
    case DType::Q4_K: case DType::Q5_K: return {{0}, {2}};
    case DType::Q6_K: return {{208}, {}};
    case DType::IQ4_NL: case DType::IQ4_XS: case DType::Q1_0: case DType::Q2_0: return {{0}, {}};
    case DType::TQ1_0: return {{52}, {}};
    case DType::TQ2_0: return {{64}, {}};
    case DType::IQ2_XXS: case DType::IQ2_XS: case DType::IQ2_S: case DType::IQ3_XXS: case DType::IQ3_S:
    case DType::IQ1_S: return {{0}, {}};
    // IQ1_M's f16 d is spread over the top nibbles of its scale words
    // (randomize_blocks sets it).
    default: return {};
    }
}

inline void put_f16(uint8_t *p, float v) {
    const uint16_t h = f32_to_fp16(v);
    std::memcpy(p, &h, 2);
}

// Fills b (whole blocks of type t) with random bytes, then sets every fp16
// scale and min to a random value of magnitude 0.002..0.05 and either sign
// (MXFP4: a moderate exponent; IQ1_M: its d likewise).
inline void randomize_blocks(DType t, std::vector<uint8_t> &b, std::mt19937 &rng) {
    std::uniform_int_distribution<int> byte(0, 255);
    for (auto &x : b) x = (uint8_t)byte(rng);
    std::uniform_real_distribution<float> mag(0.002f, 0.05f);
    std::bernoulli_distribution neg(0.5);
    const Fields f = fp16_fields(t);
    const size_t bb = dtype_info(t).block_bytes;
    for (size_t off = 0; off + bb <= b.size(); off += bb) {
        // MXFP4's scale is an e8m0 exponent (byte 0): 2^-9 .. 2^-1 times
        // the doubled e2m1 values (|v| <= 12), weights up to 6.
        if (t == DType::MXFP4) b[off] = (uint8_t)(119 + byte(rng) % 9);
        // NVFP4's 4 UE4M3 scales: 2^-4 .. 2^-2 (halved) times 1..1.875.
        if (t == DType::NVFP4)
            for (int s = 0; s < 4; ++s) b[off + s] = (uint8_t)(0x18 + byte(rng) % 24);
        // FP8_E4M3: an f32 scale of either sign (checkpoints' are positive:
        // the kernels must not care) and no NaN byte (0x7F, 0xFF).
        if (t == DType::FP8_E4M3) {
            const float d = neg(rng) ? -mag(rng) : mag(rng);
            std::memcpy(&b[off], &d, 4);
            for (size_t j = 4; j < bb; ++j)
                if ((b[off + j] & 0x7F) == 0x7F) b[off + j] ^= 1;
        }
        // IQ1_M: d's four nibbles, low first, in bits 12..15 of the u16
        // scale words at bytes 48..55 (the high nibbles of bytes 49, 51, 53, 55).
        if (t == DType::IQ1_M) {
            const uint16_t h = f32_to_fp16(neg(rng) ? -mag(rng) : mag(rng));
            for (int k = 0; k < 4; ++k)
                b[off + 49 + 2 * k] = (uint8_t)((b[off + 49 + 2 * k] & 0x0F) | ((h >> 4 * k) & 0xF) << 4);
        }
        for (int o : f.scales) put_f16(&b[off + o], neg(rng) ? -mag(rng) : mag(rng));
        for (int o : f.mins) put_f16(&b[off + o], neg(rng) ? -mag(rng) : mag(rng));
    }
}

} // namespace vt::test
