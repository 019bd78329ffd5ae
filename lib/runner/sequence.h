// The runner: the only bridge from model graphs to backends. A Context owns a
// backend and the reusable buffers of one forward pass (graph, arena); a
// Sequence owns a KV cache and evaluates its queued tokens through its
// context. (The serving engine replaces the per-sequence cache with paged
// blocks shared by many sequences; this is the single-stream path.)
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend-impl.h"
#include "core/graph.h"
#include "model/model.h"

namespace vt {

class Context {
public:
    Context(const Model &model, const std::string &backend, uint32_t n_threads, uint32_t n_batch);
    ~Context();
    Context(const Context &) = delete;
    Context &operator=(const Context &) = delete;

    const Model &model() const { return model_; }
    uint32_t n_batch() const { return n_batch_; }

    // Builds, plans and runs one forward graph for args.n_tokens tokens
    // after n_past cached ones; returns the logits tensor (n_vocab, n_out) of
    // the rows listed in out_rows, valid until the next forward.
    const Tensor *forward(ForwardArgs &args, const int32_t *tokens, int64_t n_past, const int32_t *out_rows,
                          int64_t n_out);

    // One forward pass of the serving engine: tokens of many sequences at
    // explicit positions, K/V through the paged pools (see Op::ATTN_PAGED
    // for kv_index). Returns logits (n_vocab, n_out) of the rows in out_rows,
    // valid until the next forward.
    struct PagedBatch {
        const int32_t *tokens, *positions;  // (n_tokens)
        int64_t n_tokens;
        const int32_t *kv_index;            // (n_index)
        int64_t n_index;
        const int32_t *out_rows;            // (n_out)
        int64_t n_out;
        std::vector<Tensor> *k_pool, *v_pool;  // per layer (n_embd_kv, n_slots) f16
        int64_t block_size;
        int64_t n_ctx;                      // max_model_len
    };
    const Tensor *forward_paged(const PagedBatch &b);

    void *alloc_host(size_t size);
    void free_host(void *p);

private:
    // Builds the graph, sizes the arena and binds it; the caller fills the inputs, then compute().
    const Tensor *build(ForwardArgs &args, int64_t n_out, int64_t n_index);
    void compute();

    const Model &model_;
    vt_backend *backend_ = nullptr;
    uint32_t n_batch_;
    Graph graph_;
    uint8_t *arena_ = nullptr;  // grows to the largest plan, then stays
    size_t arena_size_ = 0;
};

class Sequence {
public:
    Sequence(Context &ctx, uint32_t n_ctx, bool logits_all);
    ~Sequence();
    Sequence(const Sequence &) = delete;
    Sequence &operator=(const Sequence &) = delete;

    void feed(const int32_t *tokens, size_t n);
    void step();
    const float *logits(int32_t i) const;
    size_t n_past() const { return (size_t)n_past_; }
    void reset();

private:
    Context &ctx_;
    uint32_t n_ctx_;
    bool logits_all_;
    int64_t n_past_ = 0;
    std::vector<int32_t> pending_;
    std::vector<Tensor> k_cache_, v_cache_;  // per layer: K^T (n_ctx, n_embd_kv), V (n_embd_kv, n_ctx), f16
    void *kv_mem_ = nullptr;
    std::vector<float> logits_;               // (n_vocab, n_rows_of_last_step)
    int64_t n_logit_rows_ = 0;
    std::vector<int32_t> out_rows_;           // scratch
};

} // namespace vt
