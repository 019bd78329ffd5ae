// Row gathers and element-wise ops.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/quant.h"
#include "core/quant/blocks.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/repack.h"
#include "cpu-ops.h"

namespace vt::cpu {

namespace {
// Row `row` of an _X16 matrix (rows interleaved in groups of 16), through
// blocks of its base type a chunk at a time.
void get_row_x16(const Tensor &w, int64_t row, float *out) {
    constexpr int64_t kChunk = 16;
    quant::BlockQ4_K tmp[kChunk]; // the largest base block
    const DType base = w.type;
    const int64_t be = quant::x16_block_elems(base), nb = w.ne[0] / be;
    const uint8_t *group = static_cast<const uint8_t *>(w.data) + (size_t)(row / 16) * 16 * w.nb[1];
    for (int64_t b0 = 0; b0 < nb; b0 += kChunk) {
        const int64_t n = nb - b0 < kChunk ? nb - b0 : kChunk;
        quant::unpack_row_x16(base, group, w.ne[0], (int)(row % 16), b0, n, tmp);
        dequantize_row(base, tmp, out + b0 * be, n * be);
    }
}
} // namespace

void op_get_rows(const Node &n, const OpCtx &c) {
    const Tensor *w = n.src[0], *ids = n.src[1];
    Tensor *dst = n.dst;
    int64_t rows = ids->ne[0], b, e;
    split(rows, c.ith, c.nth, b, e);
    const int32_t *id = static_cast<const int32_t *>(ids->data);
    for (int64_t r = b; r < e; ++r) {
        const uint8_t *src = static_cast<const uint8_t *>(w->data) + (size_t)id[r] * w->nb[1];
        float *out = reinterpret_cast<float *>(static_cast<uint8_t *>(dst->data) + (size_t)r * dst->nb[1]);
        if (is_x16(*w)) {
            get_row_x16(*w, id[r], out);
            continue;
        }
        if (w->type == DType::F32) std::memcpy(out, src, (size_t)w->ne[0] * sizeof(float));
        else dequantize_row(w->type, src, out, w->ne[0]);
    }
}

// An _X16 matrix is read in whole groups of 16 rows and whole blocks.
bool whole_x16_groups(const Tensor &w) {
    return quant::x16_slot(w.type) >= 0 && quant::x16_fits(w.type, w.ne[0], w.ne[1]) && w.is_contiguous();
}

bool supports_get_rows(const Node &n) {
    // _X16 rows are interleaved in whole groups of 16.
    const Tensor *w = n.src[0];
    return n.src[1]->type == DType::I32 && is_f32(n.dst) && w->nb[0] == dtype_info(w->type).block_bytes &&
           n.dst->ne[0] == w->ne[0] && n.dst->nrows() == n.src[1]->ne[0] &&
           (w->layout == 0 || (is_x16(*w) && whole_x16_groups(*w)));
}
size_t work_size_get_rows(const Node &, int) { return 0; }

namespace {
// dst = f(src0, src1) element-wise, src1 broadcast (broadcast_ok): the same
// shape and one row repeated are the common cases and keep their own loops;
// otherwise each row of src0 finds its row of src1 by clamping indices to
// src1's extents, and an src1 row of one value is a scalar. One f per
// element in every path, so all paths give the same bits.
template <typename F>
void broadcast_rows(const Node &n, const OpCtx &c, F f) {
    const Tensor *ta = n.src[0], *tb = n.src[1];
    const float *a = static_cast<const float *>(ta->data);
    const float *bsrc = static_cast<const float *>(tb->data);
    float *d = static_cast<float *>(n.dst->data);
    const int64_t ne0 = ta->ne[0];
    const bool same = same_shape(ta, tb);
    const bool one_row = !same && tb->ne[0] == ne0 && tb->nrows() == 1;
    int64_t b, e;
    split(n.dst->nrows(), c.ith, c.nth, b, e);
    if (same || one_row) {
        for (int64_t r = b; r < e; ++r) {
            const float *ar = a + r * ne0, *br = one_row ? bsrc : bsrc + r * ne0;
            float *dr = d + r * ne0;
            for (int64_t i = 0; i < ne0; ++i) dr[i] = f(ar[i], br[i]);
        }
        return;
    }
    const int64_t n1 = ta->ne[1], n2 = ta->ne[2];
    for (int64_t r = b; r < e; ++r) {
        const int64_t i1 = r % n1, i2 = r / n1 % n2, i3 = r / (n1 * n2);
        const int64_t rb = ((tb->ne[3] == 1 ? 0 : i3) * tb->ne[2] + (tb->ne[2] == 1 ? 0 : i2)) * tb->ne[1] +
                           (tb->ne[1] == 1 ? 0 : i1);
        const float *ar = a + r * ne0, *br = bsrc + rb * tb->ne[0];
        float *dr = d + r * ne0;
        if (tb->ne[0] == 1) {
            const float y = br[0];
            for (int64_t i = 0; i < ne0; ++i) dr[i] = f(ar[i], y);
        } else {
            for (int64_t i = 0; i < ne0; ++i) dr[i] = f(ar[i], br[i]);
        }
    }
}
} // namespace

void op_add(const Node &n, const OpCtx &c) {
    broadcast_rows(n, c, [](float x, float y) { return x + y; });
}
bool supports_add(const Node &n) { return broadcast_ok(n); }
size_t work_size_add(const Node &, int) { return 0; }

void op_mul(const Node &n, const OpCtx &c) {
    broadcast_rows(n, c, [](float x, float y) { return x * y; });
}
bool supports_mul(const Node &n) { return broadcast_ok(n); }
size_t work_size_mul(const Node &, int) { return 0; }

void op_scale(const Node &n, const OpCtx &c) {
    const float *a = static_cast<const float *>(n.src[0]->data);
    float *d = static_cast<float *>(n.dst->data);
    const float s = n.params.scale.scale;
    int64_t b, e;
    split(n.dst->nelements(), c.ith, c.nth, b, e);
    for (int64_t i = b; i < e; ++i) d[i] = a[i] * s;
}
bool supports_scale(const Node &n) { return is_f32(n.src[0]) && is_f32(n.dst) && same_shape(n.src[0], n.dst); }
size_t work_size_scale(const Node &, int) { return 0; }

static bool gated_ok(const Node &n) {
    return is_f32(n.src[0]) && is_f32(n.src[1]) && is_f32(n.dst) && same_shape(n.src[0], n.src[1]) &&
           same_shape(n.src[0], n.dst);
}

void op_swiglu(const Node &n, const OpCtx &c) {
    const float *g = static_cast<const float *>(n.src[0]->data);
    const float *u = static_cast<const float *>(n.src[1]->data);
    float *d = static_cast<float *>(n.dst->data);
    int64_t b, e;
    split(n.dst->nelements(), c.ith, c.nth, b, e);
    const SwigluParams &p = n.params.swiglu;
    if (p.limit > 0.0f) {
        // gpt-oss's clamped form, in ggml's swiglu_oai order (the gate's
        // sigmoid through libm expf, then the shifted up): a few experts' rows
        // per token, so the scalar loop costs nothing next to their products.
        for (int64_t i = b; i < e; ++i) {
            const float x = std::min(g[i], p.limit), y = std::min(std::max(u[i], -p.limit), p.limit);
            d[i] = x / (1.0f + std::exp(-p.alpha * x)) * (y + 1.0f);
        }
        return;
    }
    quant::active_kernels().swiglu(g + b, u + b, d + b, e - b);
}
bool supports_swiglu(const Node &n) {
    const SwigluParams &p = n.params.swiglu;
    return gated_ok(n) && p.limit >= 0.0f && std::isfinite(p.limit) && std::isfinite(p.alpha);
}
size_t work_size_swiglu(const Node &, int) { return 0; }

namespace {
// GELU with the tanh approximation, as ggml's CPU backend computes it by
// default (GGML_GELU_FP16): the input rounded to f16 indexes a table of
// f16-rounded results; beyond +-10 it is 0 or x. Matching that rounding is
// what keeps Gemma's logits next to llama.cpp's.
float gelu_tanh_f32(float x) {
    constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
    constexpr float kCoefA = 0.044715f;
    return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCoefA * x * x)));
}
const uint16_t *gelu_f16_table() {
    static const std::vector<uint16_t> table = [] {
        std::vector<uint16_t> t(65536);
        for (uint32_t i = 0; i < 65536; ++i) {
            t[i] = quant::f2h(gelu_tanh_f32(quant::h2f((uint16_t)i)));
        }
        return t;
    }();
    return table.data();
}
} // namespace

void op_geglu(const Node &n, const OpCtx &c) {
    const float *g = static_cast<const float *>(n.src[0]->data);
    const float *u = static_cast<const float *>(n.src[1]->data);
    float *d = static_cast<float *>(n.dst->data);
    const uint16_t *table = gelu_f16_table();
    int64_t b, e;
    split(n.dst->nelements(), c.ith, c.nth, b, e);
    for (int64_t i = b; i < e; ++i) {
        const float x = g[i];
        float y;
        if (x <= -10.0f) {
            y = 0.0f;
        } else if (x >= 10.0f) {
            y = x;
        } else {
            y = quant::h2f(table[quant::f2h(x)]);
        }
        d[i] = y * u[i];
    }
}
bool supports_geglu(const Node &n) { return gated_ok(n); }
size_t work_size_geglu(const Node &, int) { return 0; }

} // namespace vt::cpu
