// Causal grouped-query attention over the paged KV pool of the serving
// engine (lib/engine): many sequences in one batch, each reading its keys and
// values through its own block table.
//
// Layout: the K and V pools of a layer hold one f16 row (n_embd_kv) per slot;
// slot = block * block_size + offset. The i32 index tensor src5 holds, for
// token t, [3t] the slot its new K/V go to, [3t+1] how many positions it
// sees (its position + 1), [3t+2] where its sequence's block table starts in
// the same tensor; the tables follow the 3 * n_tok header. With a sliding
// window W (PagedAttnParams::window), a token sees only its last W positions
// and blocks wholly before them are not read.
//
// Phase 1 writes every token's K and V before any thread reads the pool:
// a sequence may read blocks that another sequence of the same batch fills
// (prefix-cache hits on blocks registered at allocation).
//
// Phase 2 is one (token, kv head) pair at a time over all query heads of the
// group, so each K/V row is converted once per group. Softmax is online over
// blocks (running max and sum, accumulator rescaled when the max grows), in
// f32 throughout: no score buffer grows with the context. Each pair's result
// depends only on its own query and the rows it reads, so a sequence's
// output does not depend on what else is in the batch.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/quant.h"
#include "cpu-ops.h"

namespace vt::cpu {

namespace {
struct PagedShape {
    int64_t head_dim, n_head, n_head_kv, group, n_tok, kv_row, block_size, window;
};
PagedShape paged_shape(const Node &n) {
    PagedShape s;
    s.head_dim = n.src[0]->ne[0];
    s.n_head = n.src[0]->ne[1];
    s.n_head_kv = n.src[1]->ne[1];
    s.group = s.n_head / s.n_head_kv;
    s.n_tok = n.src[0]->ne[2];
    s.kv_row = s.head_dim * s.n_head_kv;
    s.block_size = n.params.attn_paged.block_size;
    s.window = n.params.attn_paged.window;
    return s;
}
// Per-thread scratch in floats: per query head of a group an f16 query, an
// accumulator, running max and sum; a converted V row; block scores.
size_t paged_scratch_floats(const PagedShape &s) {
    return (size_t)(s.group * (s.head_dim / 2 + 1 + s.head_dim + 2) + s.head_dim + s.group * s.block_size + 64);
}
} // namespace

size_t work_size_attn_paged(const Node &n, int nth) {
    return (size_t)nth * paged_scratch_floats(paged_shape(n)) * sizeof(float);
}

bool supports_attn_paged(const Node &n) {
    const Tensor *q = n.src[0], *k = n.src[1], *v = n.src[2], *kp = n.src[3], *vp = n.src[4], *idx = n.src[5];
    const PagedAttnParams &p = n.params.attn_paged;
    if (!(is_f32(q) && is_f32(k) && is_f32(v) && kp->type == DType::F16 && vp->type == DType::F16 &&
          idx->type == DType::I32 && is_f32(n.dst) && same_shape(q, n.dst) && same_shape(k, v) && p.block_size > 0 &&
          p.window >= 0))
        return false;
    const int64_t head_dim = q->ne[0], n_head = q->ne[1], n_head_kv = k->ne[1], n_tok = q->ne[2];
    const int64_t kv_row = head_dim * n_head_kv;
    if (head_dim % 2 != 0 || k->ne[0] != head_dim || k->ne[2] != n_tok || q->ne[3] != 1 || k->ne[3] != 1) return false;
    return n_head_kv > 0 && n_head % n_head_kv == 0 && kp->ne[0] == kv_row && vp->ne[0] == kv_row &&
           kp->ne[1] == vp->ne[1] && kp->ne[1] % p.block_size == 0 && idx->ne[0] >= 3 * n_tok;
}

void op_attn_paged(const Node &n, const OpCtx &c) {
    const PagedShape s = paged_shape(n);
    const Tensor *kc = n.src[3], *vc = n.src[4];  // (kv_row, n_slots) each
    const int32_t *idx = static_cast<const int32_t *>(n.src[5]->data);
    const int64_t n_idx = n.src[5]->ne[0], n_slots = kc->ne[1];
    const float scale = n.params.attn_paged.scale;
    const VecDotFn dot16 = vec_dot_fn(DType::F16);
    uint8_t *kbase = static_cast<uint8_t *>(kc->data);
    uint8_t *vbase = static_cast<uint8_t *>(vc->data);

    // Phase 1: every token's K and V rows into their slots, as f16.
    {
        int64_t b, e;
        split(s.n_tok, c.ith, c.nth, b, e);
        for (int64_t t = b; t < e; ++t) {
            const int64_t slot = idx[3 * t];
            if (slot < 0 || slot >= n_slots) continue;  // the runner never sends one; never write outside
            const float *kr = static_cast<const float *>(n.src[1]->data) + t * s.kv_row;
            const float *vr = static_cast<const float *>(n.src[2]->data) + t * s.kv_row;
            quantize_row(DType::F16, kr, kbase + (size_t)slot * kc->nb[1], s.kv_row);
            quantize_row(DType::F16, vr, vbase + (size_t)slot * vc->nb[1], s.kv_row);
        }
        c.barrier();
    }

    // Phase 2.
    float *scratch = reinterpret_cast<float *>(c.wdata) + (size_t)c.ith * paged_scratch_floats(s);
    uint16_t *q16 = reinterpret_cast<uint16_t *>(scratch);              // (head_dim, group) f16
    float *acc = scratch + s.group * (s.head_dim / 2 + 1);              // (head_dim, group)
    float *mx = acc + s.group * s.head_dim;                             // (group)
    float *sum = mx + s.group;                                          // (group)
    float *vrow = sum + s.group;                                        // (head_dim)
    float *sc = vrow + s.head_dim;                                      // (block_size, group)
    const int64_t hd = s.head_dim, G = s.group, bs = s.block_size;
    const size_t q16_stride = (size_t)(hd / 2 + 1) * 2;                 // in uint16

    // Causal rows differ in length: deal the pairs out round-robin.
    for (int64_t pair = c.ith; pair < s.n_tok * s.n_head_kv; pair += c.nth) {
        const int64_t t = pair / s.n_head_kv, hk = pair % s.n_head_kv;
        const int64_t n_kv = idx[3 * t + 1], table_at = idx[3 * t + 2];
        float *out_t = static_cast<float *>(n.dst->data) + t * s.n_head * hd;
        const int64_t n_blocks = (n_kv + bs - 1) / bs;
        if (n_kv <= 0 || table_at < 3 * s.n_tok || table_at + n_blocks > n_idx) {
            std::memset(out_t + hk * G * hd, 0, (size_t)(G * hd) * sizeof(float));  // malformed index: no reads
            continue;
        }
        for (int64_t g = 0; g < G; ++g) {
            const float *q = static_cast<const float *>(n.src[0]->data) + (t * s.n_head + hk * G + g) * hd;
            quantize_row(DType::F16, q, q16 + g * q16_stride, hd);
            mx[g] = -INFINITY;
            sum[g] = 0.0f;
        }
        std::fill(acc, acc + G * hd, 0.0f);
        const int32_t *table = idx + table_at;
        // A sliding window starts at position lo: blocks before it are not read.
        const int64_t lo = s.window > 0 && n_kv > s.window ? n_kv - s.window : 0;
        for (int64_t b = lo / bs; b < n_blocks; ++b) {
            const int64_t blk = table[b];
            const int64_t j0 = b * bs < lo ? lo - b * bs : 0;
            const int64_t cnt = std::min(bs, n_kv - b * bs) - j0;
            if (blk < 0 || (blk + 1) * bs > n_slots) continue;  // never read outside the pool
            const size_t slot0 = (size_t)(blk * bs + j0);
            // Scores of the block for every head of the group.
            for (int64_t g = 0; g < G; ++g) {
                float m = mx[g];
                for (int64_t j = 0; j < cnt; ++j) {
                    const uint8_t *krow = kbase + (slot0 + j) * kc->nb[1] + (size_t)hk * hd * 2;
                    const float v = dot16(hd, krow, q16 + g * q16_stride) * scale;
                    sc[g * bs + j] = v;
                    m = std::max(m, v);
                }
                // Rescale what was accumulated under the old max.
                const float corr = std::exp(mx[g] - m);  // exp(-inf) = 0 on the first block
                if (corr != 1.0f) {
                    sum[g] *= corr;
                    float *a = acc + g * hd;
                    for (int64_t d = 0; d < hd; ++d) a[d] *= corr;
                }
                mx[g] = m;
                float bsum = 0.0f;
                for (int64_t j = 0; j < cnt; ++j) {
                    sc[g * bs + j] = std::exp(sc[g * bs + j] - m);
                    bsum += sc[g * bs + j];
                }
                sum[g] += bsum;
            }
            // Values: each row converted once, added into every head's accumulator.
            for (int64_t j = 0; j < cnt; ++j) {
                dequantize_row(DType::F16, vbase + (slot0 + j) * vc->nb[1] + (size_t)hk * hd * 2, vrow, hd);
                for (int64_t g = 0; g < G; ++g) {
                    const float p = sc[g * bs + j];
                    float *a = acc + g * hd;
                    for (int64_t d = 0; d < hd; ++d) a[d] += p * vrow[d];
                }
            }
        }
        for (int64_t g = 0; g < G; ++g) {
            const float inv = sum[g] > 0.0f ? 1.0f / sum[g] : 0.0f;
            float *o = out_t + (hk * G + g) * hd;
            for (int64_t d = 0; d < hd; ++d) o[d] = acc[g * hd + d] * inv;
        }
    }
}

} // namespace vt::cpu
