#version 450
// ROPE over x (head_dim, n_head, n_tok): one thread per pair of elements.
// Pair i < n_rot/2 rotates (2i, 2i+1) (adjacent mode) or (i, i + n_rot/2)
// (neox); the rest copy the unrotated tail. The angle follows the CPU's
// rope cache: theta = pos * theta_scale^i by repeated multiplication (as
// ggml, so the rounding matches), divided by the frequency factor, then
// YaRN's ramp between interpolated and extrapolated angles; mscale (attn
// factor and YaRN's magnitude term) comes from the host.
#include "common.glsl"

layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer Xb { float x[]; };
layout(std430, binding = 1) readonly buffer Pb { int pos[]; };
layout(std430, binding = 2) readonly buffer Fb { float ff[]; };  // bound to x when there are no factors
layout(std430, binding = 3) writeonly buffer Db { float dst[]; };

layout(push_constant) uniform Params {
    uint head_dim, n_head, n_tok, n_rot;
    uint neox, has_ff;
    float theta_scale, freq_scale, ext_factor, mscale, corr0, corr1;
    uint x_off, p_off, f_off, d_off;
} p;

void main() {
    const uint pairs = (p.head_dim + 1u) / 2u;
    const uint gid = wg_linear() * 256u + gl_LocalInvocationID.x;
    if (gid >= pairs * p.n_head * p.n_tok) return;
    const uint i = gid % pairs, h = (gid / pairs) % p.n_head, t = gid / (pairs * p.n_head);
    const uint base = (t * p.n_head + h) * p.head_dim;
    const uint half_rot = p.n_rot / 2u;
    if (i >= half_rot) {  // the unrotated tail, two elements per thread
        const uint e = p.n_rot + 2u * (i - half_rot);
        if (e < p.head_dim) dst[p.d_off + base + e] = x[p.x_off + base + e];
        if (e + 1u < p.head_dim) dst[p.d_off + base + e + 1u] = x[p.x_off + base + e + 1u];
        return;
    }
    float theta = float(pos[p.p_off + t]);
    for (uint j = 0u; j < i; ++j) theta *= p.theta_scale;
    const float extrap = p.has_ff != 0u ? theta / ff[p.f_off + i] : theta;
    const float interp = p.freq_scale * extrap;
    float th = interp;
    if (p.ext_factor != 0.0) {
        const float y = (float(i) - p.corr0) / max(0.001, p.corr1 - p.corr0);
        const float ramp = (1.0 - min(1.0, max(0.0, y))) * p.ext_factor;
        th = interp * (1.0 - ramp) + extrap * ramp;
    }
    const float cs = cos(th) * p.mscale, sn = sin(th) * p.mscale;
    const uint i0 = p.neox != 0u ? i : 2u * i, i1 = p.neox != 0u ? i + half_rot : 2u * i + 1u;
    const float x0 = x[p.x_off + base + i0], x1 = x[p.x_off + base + i1];
    dst[p.d_off + base + i0] = x0 * cs - x1 * sn;
    dst[p.d_off + base + i1] = x0 * sn + x1 * cs;
}
