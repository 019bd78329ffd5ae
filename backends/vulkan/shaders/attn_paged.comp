#version 450
// ATTN_PAGED, phase 2: causal attention of one query (token t, head h) per
// workgroup over the keys it sees through its sequence's block table
// (index[3t + 2]): positions lo .. n_kv - 1, n_kv = index[3t + 1], lo the
// sliding window's start. Keys go in tiles of WG, one per thread (the K
// pool's transposed blocks make neighbouring keys neighbouring f16s); an
// online softmax in f32 rescales the running output per tile, and each
// thread owns head dimensions tid, tid + WG, ... of the output. KV head
// hk = h / (n_head / n_head_kv) (grouped-query attention). A malformed index
// (a block outside the pool, a table past the index, more keys than max_kv)
// gives zeros and reads nothing outside the pools, as on the CPU. Reductions
// go through shared memory with barriers (no subgroup ops: see TOOLCHAIN.md).
#include "common.glsl"

#define WG 64
#define MAXD 8  // head_dim <= WG * MAXD = 512

layout(local_size_x = WG) in;

layout(std430, binding = 0) readonly buffer Qb { float q[]; };
layout(std430, binding = 1) readonly buffer Kp { float16_t kp[]; };
layout(std430, binding = 2) readonly buffer Vp { float16_t vp[]; };
layout(std430, binding = 3) readonly buffer Ib { int idx[]; };
layout(std430, binding = 4) writeonly buffer Db { float dst[]; };

layout(push_constant) uniform Params {
    uint head_dim, n_head, n_head_kv, n_tok;
    uint block_size, n_blocks, n_idx, window, max_kv;
    float scale;
    uint k_nb1, k_nb2, v_nb1;  // pool strides in f16
    uint q_off, kp_off, vp_off, i_off, d_off;
} p;

shared float qs[WG * MAXD];
shared float ps[WG];
shared uint slots[WG];
shared float red[WG];
shared uint bad;

float reduce_max(uint tid, float v) {
    red[tid] = v;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1) {
        if (tid < s) red[tid] = max(red[tid], red[tid + s]);
        barrier();
    }
    const float r = red[0];
    barrier();
    return r;
}
float reduce_sum(uint tid, float v) {
    red[tid] = v;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1) {
        if (tid < s) red[tid] += red[tid + s];
        barrier();
    }
    const float r = red[0];
    barrier();
    return r;
}

void main() {
    const uint gid = wg_linear();
    if (gid >= p.n_head * p.n_tok) return;
    const uint tid = gl_LocalInvocationID.x;
    const uint h = gid % p.n_head, t = gid / p.n_head, hk = h / (p.n_head / p.n_head_kv);
    const uint hd = p.head_dim, out0 = p.d_off + (t * p.n_head + h) * hd;
    const int n_kv_i = idx[p.i_off + 3u * t + 1u], table_i = idx[p.i_off + 3u * t + 2u];

    if (tid == 0u) {
        bad = n_kv_i <= 0 || uint(n_kv_i) > p.max_kv || table_i < int(3u * p.n_tok) ? 1u : 0u;
    }
    barrier();
    const uint n_kv = uint(max(n_kv_i, 1)), table = p.i_off + uint(max(table_i, 0));
    const uint lo = p.window > 0u && n_kv > p.window ? n_kv - p.window : 0u;
    const uint b0 = lo / p.block_size, b1 = (n_kv + p.block_size - 1u) / p.block_size;
    if (bad == 0u && uint(table_i) + b1 > p.n_idx) bad = 1u;  // every thread agrees: no race on the value
    barrier();
    if (bad == 0u)
        for (uint b = b0 + tid; b < b1; b += WG) {
            const int e = idx[table + b];
            if (e < 0 || uint(e) >= p.n_blocks) atomicOr(bad, 1u);
        }
    for (uint d = tid; d < hd; d += WG) qs[d] = q[p.q_off + (t * p.n_head + h) * hd + d];
    barrier();
    if (bad != 0u) {
        for (uint d = tid; d < hd; d += WG) dst[out0 + d] = 0.0;
        return;
    }

    float m = -1.0 / 0.0, l = 0.0;
    float acc[MAXD];
    for (uint i = 0u; i < MAXD; ++i) acc[i] = 0.0;
    const uint kdim0 = hk * hd;
    for (uint j0 = lo; j0 < n_kv; j0 += WG) {
        const uint j = j0 + tid;
        float s = -1.0 / 0.0;
        if (j < n_kv) {
            const uint blk = uint(idx[table + j / p.block_size]), off = j % p.block_size;
            const uint kb = p.kp_off + blk * p.k_nb2 + kdim0 * p.k_nb1 + off;
            float dot = 0.0;
            for (uint d = 0u; d < hd; ++d) dot += qs[d] * float(kp[kb + d * p.k_nb1]);
            s = dot * p.scale;
            slots[tid] = blk * p.block_size + off;
        }
        const float m_new = max(m, reduce_max(tid, s));
        const float e = j < n_kv ? exp(s - m_new) : 0.0;
        ps[tid] = e;
        const float corr = exp(m - m_new);  // 0 on the first tile (m = -inf)
        l = l * corr + reduce_sum(tid, e);  // its barriers also publish ps and slots
        m = m_new;
        const uint nj = min(WG, n_kv - j0);
        for (uint i = 0u; i < MAXD; ++i) {
            const uint d = tid + WG * i;
            if (d >= hd) break;
            float a = acc[i] * corr;
            for (uint jj = 0u; jj < nj; ++jj) a += ps[jj] * float(vp[p.vp_off + slots[jj] * p.v_nb1 + kdim0 + d]);
            acc[i] = a;
        }
        barrier();  // ps and slots are rewritten by the next tile
    }
    const float inv = 1.0 / l;
    for (uint i = 0u; i < MAXD; ++i) {
        const uint d = tid + WG * i;
        if (d < hd) dst[out0 + d] = acc[i] * inv;
    }
}
