// Supports rules and recording of each op. The rules follow the CPU
// backend's (backends/cpu/ops-*.cpp) so a graph splits the same way, plus
// what the device adds: every tensor must fit one storage binding (see
// max_binding_bytes), and weight types are those with a shader variant.
// Push-constant structs mirror the shaders' Params blocks field for field.
#include "vk-ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "vk-device.h"
#include "vk-log.h"

namespace vt::vk {

namespace {

// The shader-name suffix of a weight type, or nullptr when no shader reads it
// (Q2_K, Q3_K, MXFP4, the activation-only Q8_1/Q8_K).
const char *weight_suffix(DType t) {
    switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::Q4_0: return "q4_0";
    case DType::Q4_1: return "q4_1";
    case DType::Q5_0: return "q5_0";
    case DType::Q5_1: return "q5_1";
    case DType::Q8_0: return "q8_0";
    case DType::Q4_K: return "q4_k";
    case DType::Q5_K: return "q5_k";
    case DType::Q6_K: return "q6_k";
    case DType::IQ4_NL: return "iq4_nl";
    case DType::IQ4_XS: return "iq4_xs";
    case DType::NVFP4: return "nvfp4";
    case DType::Q1_0: return "q1_0";
    case DType::Q2_0: return "q2_0";
    case DType::FP8_E4M3: return "fp8_e4m3";
    default: return nullptr;
    }
}

// Tokens up to which MUL_MAT takes the mat-vec shader (its MMAX).
constexpr int64_t kMatVecMaxTokens = 8;
constexpr uint32_t kMatVecRows = 2;  // NR of mul_mat_vec.comp
constexpr uint32_t kTile = 32;       // T of mul_mat_tiled.comp
constexpr int64_t kMaxHeadDim = 512;  // WG * MAXD of attn_paged.comp

bool contiguous_f32(const Tensor *t) { return t && t->type == DType::F32 && t->is_contiguous(); }
bool same_shape(const Tensor *a, const Tensor *b) {
    for (int d = 0; d < kMaxDims; ++d)
        if (a->ne[d] != b->ne[d]) return false;
    return true;
}
bool broadcast_row_ok(const Node &n) {
    const Tensor *a = n.src[0], *b = n.src[1];
    return contiguous_f32(a) && contiguous_f32(b) && contiguous_f32(n.dst) && same_shape(a, n.dst) &&
           (same_shape(a, b) || (b->ne[0] == a->ne[0] && b->nrows() == 1));
}
bool gated_ok(const Node &n) {
    return contiguous_f32(n.src[0]) && contiguous_f32(n.src[1]) && contiguous_f32(n.dst) &&
           same_shape(n.src[0], n.src[1]) && same_shape(n.src[0], n.dst);
}
// A weight matrix (k, rows) a shader reads: a supported type, rows of whole
// blocks one after another at stride nb[1] (even: shaders read u16 words).
bool weight_ok(const Tensor *w) {
    return w && weight_suffix(w->type) && w->nb[0] == dtype_info(w->type).block_bytes && w->nb[1] % 2 == 0 &&
           w->ne[2] == 1 && w->ne[3] == 1 && w->ne[0] % dtype_info(w->type).block_elems == 0;
}

bool supports_get_rows(const Node &n) {
    const Tensor *w = n.src[0], *ids = n.src[1];
    return weight_ok(w) && ids->type == DType::I32 && ids->is_contiguous() && contiguous_f32(n.dst) &&
           n.dst->ne[0] == w->ne[0] && n.dst->nrows() == ids->ne[0];
}
bool supports_mul_mat(const Node &n) {
    const Tensor *w = n.src[0], *x = n.src[1];
    return weight_ok(w) && contiguous_f32(x) && contiguous_f32(n.dst) && x->ne[0] == w->ne[0] &&
           n.dst->ne[0] == w->ne[1] && n.dst->nrows() == x->nrows();
}
bool supports_rms_norm(const Node &n) {
    return contiguous_f32(n.src[0]) && contiguous_f32(n.src[1]) && contiguous_f32(n.dst) &&
           same_shape(n.src[0], n.dst) && n.src[1]->nelements() == n.src[0]->ne[0];
}
bool supports_rope(const Node &n) {
    const RopeParams &p = n.params.rope;
    const Tensor *x = n.src[0], *f = n.src[2];
    return contiguous_f32(x) && contiguous_f32(n.dst) && same_shape(x, n.dst) && x->ne[3] == 1 &&
           n.src[1]->type == DType::I32 && n.src[1]->is_contiguous() && n.src[1]->ne[0] == x->ne[2] &&
           (p.mode == kRopeAdjacent || p.mode == kRopeNeox) && p.n_rot > 0 && p.n_rot % 2 == 0 &&
           p.n_rot <= x->ne[0] && p.freq_base > 0.0f && p.freq_scale > 0.0f &&
           (p.ext_factor == 0.0f || p.n_ctx_orig > 0) && (!f || (contiguous_f32(f) && f->nelements() == p.n_rot / 2));
}
bool supports_attn_paged(const Node &n) {
    const Tensor *q = n.src[0], *k = n.src[1], *v = n.src[2], *kp = n.src[3], *vp = n.src[4], *idx = n.src[5];
    // The latent mode (src2 and src4 null, DeepSeek MLA) has no shader: the
    // graph executor runs it on the CPU.
    if (!vp) return false;
    // Nor do attention sinks (src6, gpt-oss): the CPU runs those layers.
    if (n.src[6]) return false;
    const PagedAttnParams &p = n.params.attn_paged;
    if (!k && !v) {
        // Read-only mode (Gemma 4's KV-shared layers): the attention
        // dispatch alone, the KV heads from the pool's row.
        const int64_t head_dim = q->ne[0], bs = kp->ne[0];
        const int64_t n_head_kv = head_dim > 0 ? kp->ne[1] / head_dim : 0;
        return contiguous_f32(q) && kp->type == DType::F16 && vp->type == DType::F16 && idx->type == DType::I32 &&
               idx->is_contiguous() && contiguous_f32(n.dst) && same_shape(q, n.dst) && p.window >= 0 &&
               p.max_kv > 0 && q->ne[3] == 1 && kp->ne[3] == 1 && head_dim <= kMaxHeadDim && n_head_kv > 0 &&
               kp->ne[1] == head_dim * n_head_kv && q->ne[1] % n_head_kv == 0 && bs > 0 && vp->ne[0] == kp->ne[1] &&
               vp->ne[1] == bs * kp->ne[2] && kp->nb[0] == 2 && vp->nb[0] == 2 && idx->ne[0] >= 3 * q->ne[2];
    }
    if (!k || !v) return false;
    if (!(contiguous_f32(q) && contiguous_f32(k) && contiguous_f32(v) && kp->type == DType::F16 &&
          vp->type == DType::F16 && idx->type == DType::I32 && idx->is_contiguous() && contiguous_f32(n.dst) &&
          same_shape(q, n.dst) && same_shape(k, v) && p.window >= 0 && p.max_kv > 0))
        return false;
    const int64_t head_dim = q->ne[0], n_head = q->ne[1], n_head_kv = k->ne[1], n_tok = q->ne[2];
    const int64_t kv_row = head_dim * n_head_kv, bs = kp->ne[0];
    if (k->ne[0] != head_dim || k->ne[2] != n_tok || q->ne[3] != 1 || k->ne[3] != 1 || kp->ne[3] != 1 ||
        head_dim > kMaxHeadDim)
        return false;
    return n_head_kv > 0 && n_head % n_head_kv == 0 && bs > 0 && kp->ne[1] == kv_row && vp->ne[0] == kv_row &&
           vp->ne[1] == bs * kp->ne[2] && kp->nb[0] == 2 && vp->nb[0] == 2 && idx->ne[0] >= 3 * n_tok;
}

bool supports_op_rules(const Node &n) {
    // Another backend's private layouts (the CPU's _X16) are not ours to read.
    if (n.dst->layout != 0) return false;
    for (const Tensor *t : n.src)
        if (t && t->layout != 0) return false;
    switch (n.op) {
    case Op::GET_ROWS: return supports_get_rows(n);
    case Op::RMS_NORM: return supports_rms_norm(n);
    case Op::MUL_MAT: return supports_mul_mat(n);
    case Op::ADD:
    case Op::MUL: return broadcast_row_ok(n);
    case Op::ROPE: return supports_rope(n);
    // gpt-oss's clamped SwiGLU (limit > 0) has no shader: the CPU runs it.
    case Op::SWIGLU: return gated_ok(n) && n.params.swiglu.limit == 0.0f;
    case Op::GEGLU: return gated_ok(n);
    case Op::ATTN_PAGED: return supports_attn_paged(n);
    case Op::SCALE: return contiguous_f32(n.src[0]) && contiguous_f32(n.dst) && same_shape(n.src[0], n.dst);
    // No shaders for the linear-attention ops (UNARY, L2_NORM,
    // RMS_NORM_GATED, CONV1D_CAUSAL, GATED_DELTA_RULE, SSM_SCAN), for RMS_NORM without
    // a weight or for ADD/MUL broadcasts other than one row: the graph
    // executor runs them on the CPU.
    default: return false;
    }
}

// ---- recording ------------------------------------------------------------------

uint32_t u32(int64_t v) { return (uint32_t)v; }

struct MatPush {
    uint32_t k, n, m, w_off, w_nb1, x_off, x_row, d_off, d_row;
};

// Rows of w one binding takes: all of them, or (a weight over one binding:
// a token embedding or output matrix on lavapipe's 128 MiB) as many as fit,
// the op then going in several dispatches over row ranges.
int64_t rows_per_binding(const Device &d, const Tensor *w) {
    const size_t limit = max_binding_bytes(d) - (size_t)d.caps.storage_align;
    if (tensor_span(*w) <= limit) return w->ne[1];
    return (int64_t)(limit / w->nb[1]);
}
// Rows [row0, row0 + rows) of w as a tensor of their own.
Tensor row_range(const Tensor *w, int64_t row0, int64_t rows) {
    Tensor t = *w;
    t.ne[1] = rows;
    t.data = static_cast<uint8_t *>(w->data) + (size_t)row0 * w->nb[1];
    return t;
}

vt_status record_mul_mat(Recorder &r, const Node &n) {
    const Tensor *w = n.src[0], *x = n.src[1];
    Bind bx, bd;
    if (!r.bind(x, bx) || !r.bind(n.dst, bd)) return VT_ERR_INVALID_ARGUMENT;
    Device &d = r.device();
    const int64_t m = x->nrows(), step = rows_per_binding(d, w);
    const std::string t = weight_suffix(w->type);
    // Each range writes its own columns of dst (d_off moves, d_row stays n).
    for (int64_t row0 = 0; row0 < w->ne[1]; row0 += step) {
        const int64_t rows = std::min(step, w->ne[1] - row0);
        const Tensor part = row_range(w, row0, rows);
        Bind bw;
        if (!r.bind(&part, bw)) return VT_ERR_INVALID_ARGUMENT;
        const MatPush p{u32(w->ne[0]), u32(rows), u32(m), bw.rem, u32(w->nb[1]), bx.rem / 4, u32(x->ne[0]),
                        bd.rem / 4 + u32(row0), u32(n.dst->ne[0])};
        vt_status st;
        if (m <= kMatVecMaxTokens) {
            const std::string name = (d.caps.subgroup_arith ? "mmv_sg_" : "mmv_") + t;
            st = r.dispatch(name.c_str(), d.matvec_wg, {bw, bx, bd}, &p, sizeof p,
                            (uint64_t)(rows + kMatVecRows - 1) / kMatVecRows, u32(m));
        } else {
            const uint64_t tiles = (uint64_t)((rows + kTile - 1) / kTile) * (uint64_t)((m + kTile - 1) / kTile);
            st = r.dispatch(("mmt_" + t).c_str(), 0, {bw, bx, bd}, &p, sizeof p, tiles);
        }
        if (st != VT_OK) return st;
    }
    return VT_OK;
}

vt_status record_get_rows(Recorder &r, const Node &n) {
    const Tensor *w = n.src[0], *ids = n.src[1];
    Bind bi, bd;
    if (!r.bind(ids, bi) || !r.bind(n.dst, bd)) return VT_ERR_INVALID_ARGUMENT;
    const int64_t step = rows_per_binding(r.device(), w);
    const std::string name = "get_rows_" + std::string(weight_suffix(w->type));
    for (int64_t row0 = 0; row0 < w->ne[1]; row0 += step) {
        const int64_t rows = std::min(step, w->ne[1] - row0);
        const Tensor part = row_range(w, row0, rows);
        Bind bw;
        if (!r.bind(&part, bw)) return VT_ERR_INVALID_ARGUMENT;
        struct {
            uint32_t k, n_ids, n_rows, row0, total_rows, w_off, w_nb1, i_off, d_off, d_row;
        } p{u32(w->ne[0]), u32(ids->ne[0]), u32(rows), u32(row0), u32(w->ne[1]), bw.rem, u32(w->nb[1]),
            bi.rem / 4, bd.rem / 4, u32(n.dst->ne[0])};
        vt_status st = r.dispatch(name.c_str(), 0, {bw, bi, bd}, &p, sizeof p, (uint64_t)ids->ne[0]);
        if (st != VT_OK) return st;
    }
    return VT_OK;
}

struct EwPush {
    uint32_t n, ne0, one_row, a_off, b_off, d_off;
    float scale;
};

vt_status record_elementwise(Recorder &r, const Node &n, const char *name) {
    const bool unary = n.op == Op::SCALE;
    Bind ba, bb, bd;
    if (!r.bind(n.src[0], ba) || (!unary && !r.bind(n.src[1], bb)) || !r.bind(n.dst, bd))
        return VT_ERR_INVALID_ARGUMENT;
    const int64_t total = n.dst->nelements();
    EwPush p{u32(total), u32(n.src[0]->ne[0]), 0, ba.rem / 4, bb.rem / 4, bd.rem / 4, 0.0f};
    if (!unary) p.one_row = n.src[1]->nelements() != n.src[0]->nelements();
    if (unary) p.scale = n.params.scale.scale;
    const uint64_t groups = (uint64_t)(total + 255) / 256;
    if (unary) return r.dispatch(name, 0, {ba, bd}, &p, sizeof p, groups);
    return r.dispatch(name, 0, {ba, bb, bd}, &p, sizeof p, groups);
}

vt_status record_rms_norm(Recorder &r, const Node &n) {
    Bind bx, bw, bd;
    if (!r.bind(n.src[0], bx) || !r.bind(n.src[1], bw) || !r.bind(n.dst, bd)) return VT_ERR_INVALID_ARGUMENT;
    struct {
        uint32_t ne0, n_rows, x_off, w_off, d_off;
        float eps;
    } p{u32(n.src[0]->ne[0]), u32(n.src[0]->nrows()), bx.rem / 4, bw.rem / 4, bd.rem / 4, n.params.rms_norm.eps};
    return r.dispatch("rms_norm", 0, {bx, bw, bd}, &p, sizeof p, (uint64_t)n.src[0]->nrows());
}

float yarn_corr_dim(int n_dims, int n_ctx_orig, float n_rot, float base) {
    return (float)n_dims * std::log((float)n_ctx_orig / (n_rot * 2.0f * (float)M_PI)) / (2.0f * std::log(base));
}

vt_status record_rope(Recorder &r, const Node &n) {
    const RopeParams &rp = n.params.rope;
    const Tensor *x = n.src[0];
    Bind bx, bp, bf, bd;
    if (!r.bind(x, bx) || !r.bind(n.src[1], bp) || !r.bind(n.src[2] ? n.src[2] : x, bf) || !r.bind(n.dst, bd))
        return VT_ERR_INVALID_ARGUMENT;
    // The host-side terms exactly as the CPU computes them (ops-rope.cpp).
    float corr0 = 0.0f, corr1 = 0.0f, mscale = rp.attn_factor;
    if (rp.ext_factor != 0.0f) {
        const float fast = yarn_corr_dim(rp.n_rot, rp.n_ctx_orig, rp.beta_fast, rp.freq_base);
        const float slow = yarn_corr_dim(rp.n_rot, rp.n_ctx_orig, rp.beta_slow, rp.freq_base);
        corr0 = std::max(0.0f, rp.yarn_exact ? fast : std::floor(fast));  // yarn_exact: transformers' truncate false
        corr1 = std::min((float)(rp.n_rot - 1), rp.yarn_exact ? slow : std::ceil(slow));
        mscale *= 1.0f + 0.1f * std::log(1.0f / rp.freq_scale);
    }
    struct {
        uint32_t head_dim, n_head, n_tok, n_rot, neox, has_ff;
        float theta_scale, freq_scale, ext_factor, mscale, corr0, corr1;
        uint32_t x_off, p_off, f_off, d_off;
    } p{u32(x->ne[0]), u32(x->ne[1]), u32(x->ne[2]), u32(rp.n_rot), rp.mode == kRopeNeox ? 1u : 0u,
        n.src[2] ? 1u : 0u, std::pow(rp.freq_base, -2.0f / (float)rp.n_rot), rp.freq_scale, rp.ext_factor, mscale,
        corr0, corr1, bx.rem / 4, bp.rem / 4, bf.rem / 4, bd.rem / 4};
    const uint64_t threads = (uint64_t)((x->ne[0] + 1) / 2) * (uint64_t)(x->ne[1] * x->ne[2]);
    return r.dispatch("rope", 0, {bx, bp, bf, bd}, &p, sizeof p, (threads + 255) / 256);
}

vt_status record_attn_paged(Recorder &r, const Node &n) {
    const Tensor *q = n.src[0], *k = n.src[1], *kp = n.src[3], *vp = n.src[4], *idx = n.src[5];
    Bind bq, bk, bv, bkp, bvp, bi, bd;
    if (!r.bind(q, bq) || (k && (!r.bind(k, bk) || !r.bind(n.src[2], bv))) || !r.bind(kp, bkp) ||
        !r.bind(vp, bvp) || !r.bind(idx, bi) || !r.bind(n.dst, bd))
        return VT_ERR_INVALID_ARGUMENT;
    const int64_t head_dim = q->ne[0], n_head = q->ne[1], n_tok = q->ne[2];
    const int64_t n_head_kv = k ? k->ne[1] : kp->ne[1] / head_dim;
    const int64_t kv_row = head_dim * n_head_kv, bs = kp->ne[0];
    // Read-only mode (k null) skips the write: an earlier node wrote the pools.
    if (k) {
        struct {
            uint32_t kv_row, n_tok, block_size, n_slots, k_nb1, k_nb2, v_nb1, k_off, v_off, kp_off, vp_off, i_off;
        } pw{u32(kv_row), u32(n_tok), u32(bs), u32(bs * kp->ne[2]), u32(kp->nb[1] / 2), u32(kp->nb[2] / 2),
             u32(vp->nb[1] / 2), bk.rem / 4, bv.rem / 4, bkp.rem / 2, bvp.rem / 2, bi.rem / 4};
        vt_status st = r.dispatch("kv_write", 0, {bk, bv, bkp, bvp, bi}, &pw, sizeof pw,
                                  ((uint64_t)kv_row * (uint64_t)n_tok + 255) / 256);
        if (st != VT_OK) return st;
        // Every token's K/V must be in the pools before any query reads them (a
        // sequence may read blocks another sequence of the batch fills).
        r.barrier();
    }
    const PagedAttnParams &ap = n.params.attn_paged;
    struct {
        uint32_t head_dim, n_head, n_head_kv, n_tok, block_size, n_blocks, n_idx, window, max_kv;
        float scale;
        uint32_t k_nb1, k_nb2, v_nb1, q_off, kp_off, vp_off, i_off, d_off;
    } pa{u32(head_dim), u32(n_head), u32(n_head_kv), u32(n_tok), u32(bs), u32(kp->ne[2]), u32(idx->ne[0]),
         u32(ap.window), u32(ap.max_kv), ap.scale, u32(kp->nb[1] / 2), u32(kp->nb[2] / 2), u32(vp->nb[1] / 2),
         bq.rem / 4, bkp.rem / 2, bvp.rem / 2, bi.rem / 4, bd.rem / 4};
    return r.dispatch("attn_paged", 0, {bq, bkp, bvp, bi, bd}, &pa, sizeof pa, (uint64_t)(n_head * n_tok));
}

} // namespace

size_t tensor_span(const Tensor &t) {
    size_t s = row_bytes(t.type, t.ne[0]);
    for (int d = 1; d < kMaxDims; ++d) s += (size_t)(t.ne[d] - 1) * t.nb[d];
    return s;
}

size_t max_binding_bytes(const Device &d) {
    return (size_t)std::min<VkDeviceSize>(d.caps.max_storage_range, (VkDeviceSize)1 << 31);
}

bool supports_node(const Device &d, const Node &n) {
    if ((int)n.op < 0 || (int)n.op >= kOpCount || !n.dst || !supports_op_rules(n)) return false;
    // Every tensor within one binding, but for the weights of MUL_MAT and
    // GET_ROWS, which go in row ranges (a row must fit). Anything else
    // bigger would need buffer device address or a split of the op: not
    // done, so the node stays on the CPU.
    const size_t limit = max_binding_bytes(d) - (size_t)d.caps.storage_align;
    if (tensor_span(*n.dst) > limit) return false;
    const bool split_rows = n.op == Op::MUL_MAT || n.op == Op::GET_ROWS;
    if (split_rows && n.src[0]->nb[1] > limit) return false;
    for (int i = split_rows ? 1 : 0; i < op_n_src(n.op); ++i)
        if (n.src[i] && tensor_span(*n.src[i]) > limit) {
            VK_LOG_DEBUG("%s: %s source %d spans %zu bytes, over one binding (%zu)", d.name.c_str(), op_name(n.op), i,
                         tensor_span(*n.src[i]), limit);
            return false;
        }
    return true;
}

uint32_t dispatch_count(const Device &d, const Node &n) {
    if (n.op == Op::ATTN_PAGED) return n.src[1] ? 2 : 1;
    if (n.op == Op::MUL_MAT || n.op == Op::GET_ROWS) {
        const int64_t step = rows_per_binding(d, n.src[0]);
        return (uint32_t)((n.src[0]->ne[1] + step - 1) / step);
    }
    return 1;
}

vt_status record_node(Recorder &r, const Node &n) {
    switch (n.op) {
    case Op::GET_ROWS: return record_get_rows(r, n);
    case Op::RMS_NORM: return record_rms_norm(r, n);
    case Op::MUL_MAT: return record_mul_mat(r, n);
    case Op::ADD: return record_elementwise(r, n, "ew_add");
    case Op::MUL: return record_elementwise(r, n, "ew_mul");
    case Op::SCALE: return record_elementwise(r, n, "ew_scale");
    case Op::SWIGLU: return record_elementwise(r, n, "ew_swiglu");
    case Op::GEGLU: return record_elementwise(r, n, "ew_geglu");
    case Op::ROPE: return record_rope(r, n);
    case Op::ATTN_PAGED: return record_attn_paged(r, n);
    default: return VT_ERR_UNSUPPORTED;
    }
}

} // namespace vt::vk
