// Causal grouped-query attention over a paged f16 KV pool: the one attention
// kernel of every forward pass (the serving engine's many sequences, and
// vt_seq's one sequence over a pool of its own).
//
// Layout. A layer's K pool is (block_size, kv_row, n_blocks): each block
// holds its keys transposed, one row of block_size f16 per key dimension; the
// V pool is (kv_row, n_slots), one f16 row per slot, slot = block *
// block_size + offset. The i32 index src5 holds, for token t, [3t] the slot
// its new K/V go to, [3t+1] how many positions it sees (its position + 1),
// [3t+2] where its sequence's block table starts in the same tensor; the
// tables follow the 3 * n_tok header. With a sliding window W
// (PagedAttnParams::window) a token sees only its last W positions, and the
// blocks wholly before them are not read (a sliding-window cache may have
// given them back).
//
// Phase 1 writes every token's K and V before any thread reads the pool: a
// sequence may read blocks that another sequence of the same batch fills
// (prefix-cache hits on blocks registered at allocation).
//
// Phase 2 works in units of (KV head, run of up to 16 consecutive tokens of
// one sequence): all queries of the run's tokens x the group's heads share
// each K and V load. Keys transposed put 16 keys in a register and V rows 16
// dimensions, so neither product needs a horizontal sum (Kernels::
// attn_scores over a batch of blocks, several key vectors in flight for a
// decode's few queries; attn_values block by block, its chain continuing
// across blocks, so a block boundary changes no bit). Blocks lie anywhere in
// the pool, so their rows are prefetched ahead of each product.
//
// Latent mode (src2 and src4 null, DeepSeek MLA: values read from the K
// pool) is ops-attention-latent.cpp; both share ops-attention-paged.h.
//
// Sinks (src6, gpt-oss): a logit per query head that joins each of its
// queries' softmax denominators (softmax_probs); the scores and the product
// with V are unchanged, so every ISA's kernels serve both.
//
// Rounding points follow llama.cpp's CPU path without flash attention, so
// logits agree with it: the query is rounded to f16 before QK^T, the softmax
// runs in f32 with a double sum, and the probabilities are rounded to f16
// before the product with V. Each sum is one f32 FMA chain in index order,
// so a token's result does not depend on which tokens share its step or its
// run: a key past a query's causal end, or before its own window inside its
// run's, adds an exact zero.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/quant.h"
#include "cpu/kernels/kernels.h"
#include "cpu-ops.h"
#include "ops-attention-paged.h"

namespace vt::cpu {

size_t work_size_attn_paged(const Node &n, int nth) {
    return (size_t)nth * scratch_floats(paged_shape(n)) * sizeof(float);
}

bool supports_attn_paged(const Node &n) {
    const Tensor *q = n.src[0], *k = n.src[1], *v = n.src[2], *kp = n.src[3], *vp = n.src[4], *idx = n.src[5];
    if (!kp || !idx) return false;
    if (attn_is_latent(n)) return supports_attn_latent(n);
    if (!v || !vp) return false;  // one of the two: neither mode
    const PagedAttnParams &p = n.params.attn_paged;
    // Sinks: one f32 logit per query head.
    if (const Tensor *sk = n.src[6]; sk && !(is_f32(sk) && sk->is_contiguous() && sk->nelements() == q->ne[1]))
        return false;
    if (!(is_f32(q) && is_f32(k) && is_f32(v) && kp->type == DType::F16 && vp->type == DType::F16 &&
          idx->type == DType::I32 && is_f32(n.dst) && same_shape(q, n.dst) && same_shape(k, v) && p.window >= 0 &&
          p.max_kv > 0))
        return false;
    const int64_t head_dim = q->ne[0], n_head = q->ne[1], n_head_kv = k->ne[1], n_tok = q->ne[2];
    const int64_t kv_row = head_dim * n_head_kv, bs = kp->ne[0];
    if (k->ne[0] != head_dim || k->ne[2] != n_tok || q->ne[3] != 1 || k->ne[3] != 1 || kp->ne[3] != 1) return false;
    // Rows of both pools contiguous: K's block rows and V's slot rows.
    return n_head_kv > 0 && n_head % n_head_kv == 0 && bs > 0 && kp->ne[1] == kv_row && vp->ne[0] == kv_row &&
           vp->ne[1] == bs * kp->ne[2] && kp->nb[0] == 2 && vp->nb[0] == 2 && idx->ne[0] >= 3 * n_tok;
}

void op_attn_paged(const Node &n, const OpCtx &c) {
    if (attn_is_latent(n)) return op_attn_latent(n, c);
    const PagedShape s = paged_shape(n);
    const Tensor *kc = n.src[3], *vc = n.src[4];
    const int32_t *idx = static_cast<const int32_t *>(n.src[5]->data);
    const int64_t n_idx = n.src[5]->ne[0], bs = s.block_size;
    const float scale = n.params.attn_paged.scale;
    const float *sinks = n.src[6] ? static_cast<const float *>(n.src[6]->data) : nullptr;  // (n_head)
    uint8_t *vbase = static_cast<uint8_t *>(vc->data);
    const quant::Kernels &kern = quant::active_kernels();
    float *scratch = reinterpret_cast<float *>(c.wdata) + (size_t)c.ith * scratch_floats(s);

    // Phase 1: every token's K (one f16 per dimension row of its block) and
    // V row into its slot.
    write_new_rows(n, c, s, reinterpret_cast<uint16_t *>(scratch));

    // Phase 2.
    const int64_t hd = s.head_dim, G = s.group, nq_max = queries_per_unit(s), ps = row_keys(s);
    float **outs = reinterpret_cast<float **>(scratch);
    float *qf = reinterpret_cast<float *>(outs + nq_max);
    float *pf = qf + (size_t)nq_max * hd;
    const size_t vs = vc->nb[1] / 2;  // in f16
    // Later runs of a sequence see more keys: deal the units out round-robin.
    for_each_run(idx, s.n_tok, [&](int64_t unit, int64_t t0, int64_t nt) {
        for (int64_t hk = 0; hk < s.n_head_kv; ++hk) {
            if ((unit * s.n_head_kv + hk) % c.nth != c.ith) continue;
            const int64_t nq = nt * G;
            for (int64_t i = 0; i < nq; ++i)
                outs[i] = static_cast<float *>(n.dst->data) + ((t0 + i / G) * s.n_head + hk * G + i % G) * hd;
            const int64_t n_kv0 = idx[3 * t0 + 1], n_keys = n_kv0 + nt - 1, table_at = idx[3 * t0 + 2];
            const int64_t key0 = window_start(n_kv0, s.window), b0 = key0 / bs, b1 = (n_keys + bs - 1) / bs;
            const int32_t *table = idx + table_at;
            // A malformed index: no reads outside the pool, zeros out.
            if (!unit_index_ok(s, idx, n_idx, n_kv0, n_keys, key0, table_at, b0, b1)) {
                for (int64_t i = 0; i < nq; ++i) std::memset(outs[i], 0, (size_t)hd * sizeof(float));
                continue;
            }
            // Query (t0 + i / G, head hk * G + i % G) is row i: f16-rounded, as f32.
            for (int64_t i = 0; i < nq; ++i) {
                const float *q = static_cast<const float *>(n.src[0]->data) + ((t0 + i / G) * s.n_head + hk * G + i % G) * hd;
                round_query(q, qf + i * hd, hd);
            }
            // This head's K rows of every block (hd rows of bs f16, contiguous):
            // the blocks lie anywhere in the pool, where no hardware
            // prefetcher follows, and a decode reads each only once.
            for (int64_t b = b0; b < b1; ++b)
                prefetch_rows(static_cast<const uint8_t *>(kc->data) + (size_t)table[b] * kc->nb[2] +
                                  (size_t)(hk * hd) * kc->nb[1],
                              1, 0, (size_t)(hd * kc->nb[1]));
            // Scores of keys key0 .. n_keys - 1 into pf (row i at i * ps, key j at j - key0).
            block_scores(kern, kc, table, hk, qf, nq, hd, key0, n_keys, b0, b1, pf, ps);
            // Softmax per query over its own window; probabilities rounded to
            // f16 and back, zero outside it.
            for (int64_t i = 0; i < nq; ++i)  // row i indexed by key
                softmax_probs(kern, pf + i * ps - key0, key0, n_kv0 + i / G, n_keys, s.window, scale,
                              sinks ? sinks + hk * G + i % G : nullptr);
            for (int64_t b = b0; b < b1; ++b) {
                const int64_t j0 = std::max(key0, b * bs), j1 = std::min(n_keys, (b + 1) * bs);
                const uint16_t *v = reinterpret_cast<const uint16_t *>(vbase + (size_t)(table[b] * bs + (j0 - b * bs)) *
                                                                                   vc->nb[1]) +
                                    hk * hd;
                // The next block's rows of this head: a pool's blocks lie
                // anywhere, so the hardware prefetchers cannot see them coming.
                if (b + 1 < b1)
                    prefetch_rows(vbase + (size_t)table[b + 1] * bs * vc->nb[1] + (size_t)hk * hd * 2, bs, vc->nb[1],
                                  (size_t)hd * 2);
                kern.attn_values(pf + (j0 - key0), (size_t)ps, nq, j1 - j0, v, vs, hd, outs, b > b0);
            }
        }
    });
}

} // namespace vt::cpu
