#version 450
// Element-wise ops over contiguous f32 tensors, one element per thread:
// OP_ADD, OP_MUL (src1 of src0's shape, or one row of ne0 repeated),
// OP_SCALE, OP_SWIGLU (silu(a) * b), OP_GEGLU (gelu_tanh(a) * b).
#include "common.glsl"

layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer Ab { float a[]; };
#ifndef OP_SCALE
layout(std430, binding = 1) readonly buffer Bb { float b[]; };
layout(std430, binding = 2) writeonly buffer Db { float dst[]; };
#else
layout(std430, binding = 1) writeonly buffer Db { float dst[]; };
#endif

layout(push_constant) uniform Params {
    uint n;        // elements
    uint ne0;      // row length (for a broadcast src1)
    uint one_row;  // src1 is one row repeated
    uint a_off, b_off, d_off;
    float scale;
} p;

#ifdef OP_GEGLU
// As ggml's CPU default (GGML_GELU_FP16): the input rounded to f16, the
// result rounded to f16, 0 below -10 and x above 10. The GPU's tanh may
// differ from libm's by an ulp, which moves the f16 result at most one f16
// ulp (tests allow that).
float gelu_f16(float x) {
    if (x <= -10.0) return 0.0;
    if (x >= 10.0) return x;
    const float h = unpackHalf2x16(packHalf2x16(vec2(x, 0.0))).x;
    const float g = 0.5 * h * (1.0 + tanh(0.79788456080286535587989211986876 * h * (1.0 + 0.044715 * h * h)));
    return unpackHalf2x16(packHalf2x16(vec2(g, 0.0))).x;
}
#endif

void main() {
    const uint i = wg_linear() * 256u + gl_LocalInvocationID.x;
    if (i >= p.n) return;
    const float x = a[p.a_off + i];
#if defined(OP_SCALE)
    dst[p.d_off + i] = x * p.scale;
#else
    const float y = b[p.b_off + (p.one_row != 0u ? i % p.ne0 : i)];
#if defined(OP_ADD)
    dst[p.d_off + i] = x + y;
#elif defined(OP_MUL)
    dst[p.d_off + i] = x * y;
#elif defined(OP_SWIGLU)
    dst[p.d_off + i] = x / (1.0 + exp(-x)) * y;
#elif defined(OP_GEGLU)
    dst[p.d_off + i] = gelu_f16(x) * y;
#else
#error "define one OP_<name>"
#endif
#endif
}
