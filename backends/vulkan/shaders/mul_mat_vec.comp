#version 450
// MUL_MAT for few tokens (m <= MMAX): dst(n, m) = x(k, m) . W(k, n)^T.
// Decode is bound by reading W once, so each workgroup takes NR weight rows,
// its threads stride over the rows' 32-element chunks (each dequantized once
// and dotted with every token), and the partial sums meet in a reduction:
// subgroupAdd then shared memory (USE_SUBGROUP, when the device has subgroup
// arithmetic), else a shared-memory tree. The workgroup size WG is a
// specialization constant (a power of two, a multiple of the subgroup size),
// and so is the token count MM (1..MMAX): one pipeline per count, whose
// token loops have constant trip counts (unrolled, accumulators in
// registers, no per-token guard).
#include "common.glsl"
#ifdef USE_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint MM = 8;
layout(local_size_x_id = 0) in;

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

#define NR 2
#define MMAX 8
#define NACC (NR * MMAX)

#ifdef USE_SUBGROUP
shared float red[NACC * WG];  // indexed [acc * n_subgroups + subgroup]
#else
shared float red[NACC * WG];  // [acc * WG + thread]
#endif

void main() {
    const uint row0 = wg_linear() * NR;
    if (row0 >= p.n) return;  // whole workgroups only: no barrier is skipped by part of one
    const uint tid = gl_LocalInvocationID.x;
    const uint nchunks = (p.k + 31u) / 32u;

    float acc[NACC];
    for (uint i = 0u; i < NACC; ++i) acc[i] = 0.0;
    float v[32];
    for (uint c = tid; c < nchunks; c += WG) {
        for (uint r = 0u; r < NR; ++r) {
            const uint row = row0 + r;
            if (row >= p.n) break;
            load_chunk(p.w_off + row * p.w_nb1, c, p.k, v);
            for (uint j = 0u; j < MM; ++j) {
                const uint xb = p.x_off + j * p.x_row + 32u * c;
                float s = 0.0;
                for (uint i = 0u; i < 32u; ++i) {
#ifdef W_FLOAT
                    const float xv = 32u * c + i < p.k ? x[xb + i] : 0.0;
#else
                    const float xv = x[xb + i];
#endif
                    s += v[i] * xv;
                }
                acc[r * MMAX + j] += s;
            }
        }
    }

#ifdef USE_SUBGROUP
    // gl_SubgroupSize (not gl_NumSubgroups) sizes the loop: besides being
    // what the hardware runs, referencing it works around Mesa lavapipe's
    // subgroupAdd reducing over half the lanes (TOOLCHAIN.md).
    const uint nsg = (WG + gl_SubgroupSize - 1u) / gl_SubgroupSize;
    for (uint i = 0u; i < NACC; ++i) {
        const float s = subgroupAdd(acc[i]);
        if (gl_SubgroupInvocationID == 0u) red[i * nsg + gl_SubgroupID] = s;
    }
    barrier();
    if (tid < NACC) {
        float s = 0.0;
        for (uint g = 0u; g < nsg; ++g) s += red[tid * nsg + g];
        acc[0] = s;
    }
#else
    for (uint i = 0u; i < NACC; ++i) red[i * WG + tid] = acc[i];
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1) {
        if (tid < s)
            for (uint i = 0u; i < NACC; ++i) red[i * WG + tid] += red[i * WG + tid + s];
        barrier();
    }
    if (tid < NACC) acc[0] = red[tid * WG];
#endif
    if (tid < NACC) {
        const uint r = tid / MMAX, j = tid % MMAX;
        if (row0 + r < p.n && j < p.m) dst[p.d_off + j * p.d_row + row0 + r] = acc[0];
    }
}
