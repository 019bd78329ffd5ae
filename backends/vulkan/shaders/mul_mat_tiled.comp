#version 450
// MUL_MAT for many tokens: dst(n, m) = x(k, m) . W(k, n)^T in 32 x 32 output
// tiles (32 weight rows x 32 tokens). Per 64-wide step of k (two chunks),
// each of the 64 threads dequantizes one chunk of one of the tile's weight
// rows into shared memory and loads 32 activations of one token, so each
// weight element is dequantized once per tile instead of once per token and
// the work is even across threads; each thread then accumulates a 4 x 4
// block of outputs.
#include "common.glsl"

layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer Wb { uint16_t w16[]; };
layout(std430, binding = 1) readonly buffer Xb { float x[]; };
layout(std430, binding = 2) writeonly buffer Db { float dst[]; };

layout(push_constant) uniform Params {
    uint k, n, m;
    uint w_off, w_nb1;  // bytes (even)
    uint x_off, x_row;  // floats
    uint d_off, d_row;  // floats
} p;

#include "dequant.glsl"

#define T 32
#define BK 64
// Rows padded by one float so that threads reading a column hit distinct banks.
shared float As[T * (BK + 1)];  // [weight row][k]
shared float Bs[T * (BK + 1)];  // [token][k]

void main() {
    const uint tiles_n = (p.n + T - 1u) / T, tiles_m = (p.m + T - 1u) / T;
    const uint id = wg_linear();
    if (id >= tiles_n * tiles_m) return;  // whole workgroups only
    const uint r0 = (id % tiles_n) * T, m0 = (id / tiles_n) * T;
    const uint tid = gl_LocalInvocationID.x, tx = tid % 8u, ty = tid / 8u;
    const uint nchunks = (p.k + 31u) / 32u;

    float acc[16];
    for (uint i = 0u; i < 16u; ++i) acc[i] = 0.0;
    float v[32];
    // Thread tid loads chunk hc = tid / 32 of row (and token) tid % 32.
    const uint lr = tid % T, hc = tid / T;
    for (uint c0 = 0u; c0 < nchunks; c0 += 2u) {
        const uint c = c0 + hc;
        const uint row = r0 + lr;
        if (row < p.n && c < nchunks) {
            load_chunk(p.w_off + row * p.w_nb1, c, p.k, v);
        } else {
            for (uint i = 0u; i < 32u; ++i) v[i] = 0.0;
        }
        for (uint i = 0u; i < 32u; ++i) As[lr * (BK + 1u) + 32u * hc + i] = v[i];
        const uint tok = m0 + lr, xb = p.x_off + tok * p.x_row + 32u * c;
        for (uint i = 0u; i < 32u; ++i)
            Bs[lr * (BK + 1u) + 32u * hc + i] = tok < p.m && 32u * c + i < p.k ? x[xb + i] : 0.0;
        barrier();
        for (uint kk = 0u; kk < BK; ++kk) {
            float a[4], b[4];
            for (uint i = 0u; i < 4u; ++i) a[i] = As[(tx + 8u * i) * (BK + 1u) + kk];
            for (uint j = 0u; j < 4u; ++j) b[j] = Bs[(ty + 8u * j) * (BK + 1u) + kk];
            for (uint i = 0u; i < 4u; ++i)
                for (uint j = 0u; j < 4u; ++j) acc[i * 4u + j] += a[i] * b[j];
        }
        barrier();
    }
    for (uint i = 0u; i < 4u; ++i) {
        const uint row = r0 + tx + 8u * i;
        for (uint j = 0u; j < 4u; ++j) {
            const uint tok = m0 + ty + 8u * j;
            if (row < p.n && tok < p.m) dst[p.d_off + tok * p.d_row + row] = acc[i * 4u + j];
        }
    }
}
