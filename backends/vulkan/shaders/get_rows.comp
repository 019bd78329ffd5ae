#version 450
// GET_ROWS: dst row r = dequant(W row ids[r]), f32. One workgroup per
// gathered row; its threads take the row's 32-element chunks in turn. A W
// over one storage binding comes in several dispatches, each bound to rows
// row0 .. row0 + n_rows - 1: a dispatch writes only the ids in its range.
#include "common.glsl"

layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer Wb { uint16_t w16[]; };
layout(std430, binding = 1) readonly buffer Ib { int ids[]; };
layout(std430, binding = 2) writeonly buffer Db { float dst[]; };

layout(push_constant) uniform Params {
    uint k, n_ids, n_rows;  // row length, rows gathered, rows of W bound here
    uint row0, total_rows;  // the first of them; rows of the whole W
    uint w_off, w_nb1;      // bytes (even)
    uint i_off;             // ints
    uint d_off, d_row;      // floats
} p;

#include "dequant.glsl"

void main() {
    const uint r = wg_linear();
    if (r >= p.n_ids) return;
    const int id = ids[p.i_off + r];
    // An id outside W reads nothing (the CPU would read out of bounds): zeros,
    // written by the first dispatch.
    const bool valid = id >= 0 && uint(id) < p.total_rows;
    if (valid ? uint(id) < p.row0 || uint(id) - p.row0 >= p.n_rows : p.row0 != 0u) return;
    const bool ok = valid;
    const uint nchunks = (p.k + 31u) / 32u;
    float v[32];
    for (uint c = gl_LocalInvocationID.x; c < nchunks; c += 64u) {
        if (ok) {
            load_chunk(p.w_off + (uint(id) - p.row0) * p.w_nb1, c, p.k, v);
        } else {
            for (uint i = 0u; i < 32u; ++i) v[i] = 0.0;
        }
        const uint e0 = 32u * c;
        for (uint i = 0u; i < 32u; ++i)
            if (e0 + i < p.k) dst[p.d_off + r * p.d_row + e0 + i] = v[i];
    }
}
