#include "runner/sequence.h"

#include <cstring>

#include "core/error.h"
#include "core/log.h"

namespace vt {

Context::Context(const Model &model, const std::string &backend, uint32_t n_threads, uint32_t n_batch)
    : model_(model), n_batch_(n_batch ? n_batch : 512) {
    vt_backend_params bp{n_threads};
    backend_ = backend_create(backend.c_str(), bp);
}

Context::~Context() {
    if (arena_) free_host(arena_);
    backend_free(backend_);
}

void *Context::alloc_host(size_t size) {
    void *p = backend_->iface->alloc_host ? backend_->iface->alloc_host(backend_->context, size)
                                          : std::aligned_alloc(64, (size + 63) & ~(size_t)63);
    if (!p) fail(VT_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes", size);
    return p;
}

void Context::free_host(void *p) {
    if (backend_->iface->free_host) backend_->iface->free_host(backend_->context, p);
    else std::free(p);
}

const Tensor *Context::build(ForwardArgs &args, int64_t n_out, int64_t n_index) {
    const int64_t n = args.n_tokens;
    graph_.reset();
    args.graph = &graph_;
    args.tokens = graph_.input(DType::I32, {n}, "tokens");
    args.positions = graph_.input(DType::I32, {n}, "positions");
    args.out_rows = graph_.input(DType::I32, {n_out}, "out_rows");
    args.kv_index = n_index ? graph_.input(DType::I32, {n_index}, "kv_index") : nullptr;
    const Tensor *logits = model_.arch().build(model_, args);
    size_t need = graph_.plan();
    if (need > arena_size_) {
        if (arena_) free_host(arena_);
        arena_ = nullptr;
        arena_size_ = 0;
        arena_ = static_cast<uint8_t *>(alloc_host(need));
        arena_size_ = need;
        VT_LOG_DEBUG("compute arena: %.2f MiB", (double)need / (1 << 20));
    }
    graph_.bind(arena_);
    return logits;
}

void Context::compute() {
    const std::vector<Node> &nodes = graph_.nodes();
    vt_status st = backend_->iface->graph_compute(backend_->context, nodes.data(), (int)nodes.size());
    if (st != VT_OK) fail(st, "backend %s failed to compute the graph", backend_->iface->get_name(backend_->context));
}

const Tensor *Context::forward(ForwardArgs &args, const int32_t *tokens, int64_t n_past, const int32_t *out_rows,
                               int64_t n_out) {
    const int64_t n = args.n_tokens;
    args.n_past = n_past;
    const Tensor *logits = build(args, n_out, 0);
    std::memcpy(args.tokens->data, tokens, (size_t)n * sizeof(int32_t));
    int32_t *pos = static_cast<int32_t *>(args.positions->data);
    for (int64_t i = 0; i < n; ++i) pos[i] = (int32_t)(n_past + i);
    std::memcpy(args.out_rows->data, out_rows, (size_t)n_out * sizeof(int32_t));
    compute();
    return logits;
}

const Tensor *Context::forward_paged(const PagedBatch &b) {
    ForwardArgs args{};
    args.n_tokens = b.n_tokens;
    args.k_cache = b.k_pool;
    args.v_cache = b.v_pool;
    args.block_size = b.block_size;
    args.n_ctx = b.n_ctx;
    const Tensor *logits = build(args, b.n_out, b.n_index);
    std::memcpy(args.tokens->data, b.tokens, (size_t)b.n_tokens * sizeof(int32_t));
    std::memcpy(args.positions->data, b.positions, (size_t)b.n_tokens * sizeof(int32_t));
    std::memcpy(args.out_rows->data, b.out_rows, (size_t)b.n_out * sizeof(int32_t));
    std::memcpy(args.kv_index->data, b.kv_index, (size_t)b.n_index * sizeof(int32_t));
    compute();
    return logits;
}

Sequence::Sequence(Context &ctx, uint32_t n_ctx, bool logits_all) : ctx_(ctx), logits_all_(logits_all) {
    const Model &model = ctx.model();
    const Hparams &hp = model.hparams;
    n_ctx_ = n_ctx ? n_ctx : (hp.n_ctx_train < 4096 ? hp.n_ctx_train : 4096);
    kv_mem_ = ctx.alloc_host(kv_bytes_per_token(model.cache_layers) * n_ctx_);
    k_cache_.resize(hp.n_layer);
    v_cache_.resize(hp.n_layer);
    uint8_t *p = static_cast<uint8_t *>(kv_mem_);
    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        const int64_t kv_row = model.cache_layers[l].kv_row;
        const size_t layer_bytes = row_bytes(DType::F16, kv_row) * n_ctx_;
        // K is stored transposed (one row per dimension): see ops-attention.
        tensor_init(k_cache_[l], DType::F16, n_ctx_, kv_row, 1, 1, p, "k_cache");
        p += layer_bytes;
        tensor_init(v_cache_[l], DType::F16, kv_row, n_ctx_, 1, 1, p, "v_cache");
        p += layer_bytes;
    }
    pending_.reserve(ctx.n_batch());
    out_rows_.reserve(ctx.n_batch());
    logits_.reserve((size_t)hp.n_vocab * (logits_all ? ctx.n_batch() : 1));
}

Sequence::~Sequence() { ctx_.free_host(kv_mem_); }

void Sequence::feed(const int32_t *tokens, size_t n) {
    const uint32_t n_vocab = ctx_.model().hparams.n_vocab;
    for (size_t i = 0; i < n; ++i)
        if (tokens[i] < 0 || (uint32_t)tokens[i] >= n_vocab)
            fail(VT_ERR_INVALID_ARGUMENT, "token %zu is %d, outside the vocabulary [0, %u)", i, tokens[i], n_vocab);
    if ((size_t)n_past_ + pending_.size() + n > n_ctx_)
        fail(VT_ERR_CONTEXT_FULL, "%zu tokens do not fit: %lld evaluated + %zu queued, context holds %u", n,
             (long long)n_past_, pending_.size(), n_ctx_);
    pending_.insert(pending_.end(), tokens, tokens + n);
}

void Sequence::step() {
    if (pending_.empty()) fail(VT_ERR_INVALID_STATE, "no tokens queued: call vt_seq_feed first");
    const uint32_t n_vocab = ctx_.model().hparams.n_vocab;
    const int64_t total = (int64_t)pending_.size();
    n_logit_rows_ = 0;
    logits_.clear();
    for (int64_t off = 0; off < total; off += ctx_.n_batch()) {
        const int64_t n = total - off < (int64_t)ctx_.n_batch() ? total - off : (int64_t)ctx_.n_batch();
        const bool last_chunk = off + n == total;
        out_rows_.clear();
        if (logits_all_) {
            for (int64_t i = 0; i < n; ++i) out_rows_.push_back((int32_t)i);
        } else if (last_chunk) {
            out_rows_.push_back((int32_t)(n - 1));
        } else {
            out_rows_.push_back((int32_t)(n - 1));  // computed, then dropped: keeps one graph shape
        }
        ForwardArgs args{};
        args.n_tokens = n;
        args.n_ctx = n_ctx_;
        args.k_cache = &k_cache_;
        args.v_cache = &v_cache_;
        const Tensor *lg = ctx_.forward(args, pending_.data() + off, n_past_, out_rows_.data(), (int64_t)out_rows_.size());
        n_past_ += n;
        if (logits_all_ || last_chunk) {
            const float *src = static_cast<const float *>(lg->data);
            logits_.insert(logits_.end(), src, src + (size_t)n_vocab * out_rows_.size());
            n_logit_rows_ += (int64_t)out_rows_.size();
        }
    }
    pending_.clear();
}

const float *Sequence::logits(int32_t i) const {
    if (n_logit_rows_ == 0) fail(VT_ERR_INVALID_STATE, "no logits: call vt_seq_step first");
    const size_t n_vocab = ctx_.model().hparams.n_vocab;
    if (i == -1) return logits_.data() + (size_t)(n_logit_rows_ - 1) * n_vocab;
    if (!logits_all_) fail(VT_ERR_INVALID_ARGUMENT, "logits of token %d need a sequence created with logits_all", i);
    if (i < 0 || i >= n_logit_rows_)
        fail(VT_ERR_INVALID_ARGUMENT, "token index %d outside the last step's %lld tokens", i, (long long)n_logit_rows_);
    return logits_.data() + (size_t)i * n_vocab;
}

void Sequence::reset() {
    n_past_ = 0;
    pending_.clear();
    logits_.clear();
    n_logit_rows_ = 0;
}

} // namespace vt
