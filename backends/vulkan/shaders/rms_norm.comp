#version 450
// RMS_NORM: dst = x / sqrt(mean(x^2) + eps) * w per row of ne0; one
// workgroup per row, the sum of squares reduced through shared memory (the
// barriers also keep clear of Mesa lavapipe's subgroupAdd bug).
#include "common.glsl"

layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer Xb { float x[]; };
layout(std430, binding = 1) readonly buffer Wb { float w[]; };
layout(std430, binding = 2) writeonly buffer Db { float dst[]; };

layout(push_constant) uniform Params {
    uint ne0, n_rows;
    uint x_off, w_off, d_off;
    float eps;
} p;

shared float red[256];

void main() {
    const uint r = wg_linear();
    if (r >= p.n_rows) return;
    const uint tid = gl_LocalInvocationID.x, xb = p.x_off + r * p.ne0;
    float s = 0.0;
    for (uint i = tid; i < p.ne0; i += 256u) {
        const float v = x[xb + i];
        s += v * v;
    }
    red[tid] = s;
    barrier();
    for (uint h = 128u; h > 0u; h >>= 1) {
        if (tid < h) red[tid] += red[tid + h];
        barrier();
    }
    const float scale = 1.0 / sqrt(red[0] / float(p.ne0) + p.eps);
    for (uint i = tid; i < p.ne0; i += 256u) dst[p.d_off + r * p.ne0 + i] = (x[xb + i] * scale) * w[p.w_off + i];
}
