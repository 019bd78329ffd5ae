#version 450
// ATTN_PAGED, phase 1: each token's new K and V (f32, kv_row per token) into
// the f16 pools at its slot (index[3t]). K pool (block_size, kv_row,
// n_blocks) keeps each block's keys transposed: dimension d of the key in
// slot s is element s % block_size of row d of block s / block_size. V pool
// (kv_row, n_slots): one row per slot. A slot outside the pool is skipped
// (never a write outside it), as on the CPU. One thread per (d, token).
#include "common.glsl"

layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer Kin { float kin[]; };
layout(std430, binding = 1) readonly buffer Vin { float vin[]; };
layout(std430, binding = 2) buffer Kp { float16_t kp[]; };
layout(std430, binding = 3) buffer Vp { float16_t vp[]; };
layout(std430, binding = 4) readonly buffer Ib { int idx[]; };

layout(push_constant) uniform Params {
    uint kv_row, n_tok, block_size, n_slots;
    uint k_nb1, k_nb2, v_nb1;  // pool strides in f16
    uint k_off, v_off, kp_off, vp_off, i_off;
} p;

void main() {
    const uint gid = wg_linear() * 256u + gl_LocalInvocationID.x;
    if (gid >= p.kv_row * p.n_tok) return;
    const uint d = gid % p.kv_row, t = gid / p.kv_row;
    const int slot = idx[p.i_off + 3u * t];
    if (slot < 0 || uint(slot) >= p.n_slots) return;
    const uint s = uint(slot);
    kp[p.kp_off + (s / p.block_size) * p.k_nb2 + d * p.k_nb1 + s % p.block_size] = float16_t(kin[p.k_off + gid]);
    vp[p.vp_off + s * p.v_nb1 + d] = float16_t(vin[p.v_off + gid]);
}
