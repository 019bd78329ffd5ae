#include "runner/sequence.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/log.h"
#include "kv/kv-cache-manager.h"

namespace vt {

namespace {
vt_device *context_device(const Model &model, const std::string &name) {
    vt_device *dev = model.device();
    if (!name.empty() && name != device_name(dev)) {
        find_device(name.c_str());  // an unknown name gets the list of devices
        fail(VT_ERR_INVALID_ARGUMENT, "the model's weights are on %s, not %s: load it with that device",
             device_name(dev).c_str(), name.c_str());
    }
    return dev;
}
} // namespace

Context::Context(const Model &model, const std::string &device, uint32_t n_threads, uint32_t n_batch)
    : model_(model), own_exec_(std::make_unique<GraphExecutor>(context_device(model, device), n_threads)),
      exec_(own_exec_.get()), n_batch_(n_batch ? n_batch : 512) {}

Context::Context(const Model &model, Context &shared, uint32_t n_batch)
    : model_(model), exec_(shared.exec_), n_batch_(n_batch ? n_batch : 512) {
    if (model.device() != exec_->device())
        fail(VT_ERR_INTERNAL, "a context on %s cannot compute with %s's executor", device_name(model.device()).c_str(),
             device_name(exec_->device()).c_str());
}

Context::~Context() = default;

const Tensor *Context::build_graph(ForwardArgs &args, const PagedKv &kv, int64_t n_out,
                                   const std::vector<int64_t> &n_index) {
    const int64_t n = args.n_tokens;
    graph_.reset();
    // Each adapter adds a node (and a view) per projection it updates.
    graph_.reserve(8192 + lora_.size() * 2 * 16 * (size_t)model_.hparams.n_layer);
    args.graph = &graph_;
    args.tokens = graph_.input(DType::I32, {n}, "tokens");
    args.positions = graph_.input(DType::I32, {n}, "positions");
    args.out_rows = graph_.input(DType::I32, {n_out}, "out_rows");
    index_in_.clear();
    for (int64_t ni : n_index) index_in_.push_back(graph_.input(DType::I32, {ni}, "kv_index"));
    layer_index_.resize(kv.num_layers());
    for (uint32_t l = 0; l < layer_index_.size(); ++l)
        layer_index_[l] = kv.layer_group(l) == PagedKv::kNoGroup ? nullptr : index_in_[kv.layer_group(l)];
    args.kv_index = layer_index_;
    args.state_index = kv.num_slots() ? graph_.input(DType::I32, {3, n_state_seqs_}, "state_index") : nullptr;
    for (size_t a = 0; a < lora_.size(); ++a) {
        lora_[a].rows = graph_.input(DType::I32, {lora_counts_[a]}, "lora_rows");
        lora_[a].scales = graph_.input(DType::F32, {lora_counts_[a]}, "lora_scales");
    }
    args.lora = lora_;
    hidden_t_ = hidden_in_t_ = nullptr;
    if (pass_.hidden_out || pass_.mtp) args.hidden_out = &hidden_t_;
    if (!pass_.mtp) return model_.arch().build(model_, args);
    args.hidden_in = hidden_in_t_ = graph_.input(DType::F32, {(int64_t)model_.hparams.n_embd, n}, "hidden_in");
    return model_.arch().build_mtp(model_, args);
}

const Tensor *Context::build(ForwardArgs &args, const PagedKv &kv, int64_t n_out, const std::vector<int64_t> &n_index) {
    const Tensor *logits = build_graph(args, kv, n_out, n_index);
    reserve_arena(graph_.plan());
    graph_.bind(static_cast<uint8_t *>(arena_->iface->get_base(arena_.get())), arena_.get());
    return logits;
}

void Context::reserve_arena(size_t bytes) {
    if (arena_ && bytes <= arena_->size) return;
    arena_.reset();
    arena_ = buffer_alloc(exec_->device(), bytes, "compute arena");
    VT_LOG_DEBUG("compute arena: %.2f MiB", (double)bytes / (1 << 20));
}

void Context::compute() { exec_->compute(graph_.nodes()); }

ForwardArgs Context::prepare(PagedKv &kv, std::span<const BatchSeq> batch, int64_t n_ctx, int64_t &n_tok,
                             int64_t &n_out) {
    const uint32_t n_groups = (uint32_t)kv.groups().size();
    n_tok = 0;
    n_out = 0;
    n_state_seqs_ = (int64_t)batch.size();
    n_index_.assign(n_groups, 0);
    for (const BatchSeq &s : batch) {
        if (s.block_tables.size() != n_groups)
            fail(VT_ERR_INTERNAL, "%zu block tables for %u cache groups", s.block_tables.size(), n_groups);
        n_tok += (int64_t)s.tokens.size();
        for (uint32_t g = 0; g < n_groups; ++g) n_index_[g] += (int64_t)s.block_tables[g].size();
        if (s.logits == Logits::last && (s.n_last == 0 || s.n_last > s.tokens.size()))
            fail(VT_ERR_INTERNAL, "the logits of the last %u of %zu tokens", s.n_last, s.tokens.size());
        n_out += s.logits == Logits::all ? (int64_t)s.tokens.size() : s.logits == Logits::last ? s.n_last : 0;
    }
    if (n_tok == 0) fail(VT_ERR_INTERNAL, "a forward pass over no tokens");
    for (int64_t &ni : n_index_) ni += 3 * n_tok;
    // The batch's adapters, in order of first use, each with the tokens of
    // its sequences (build() makes their inputs).
    lora_.clear();
    lora_counts_.clear();
    for (const BatchSeq &s : batch) {
        if (!s.lora) continue;
        size_t a = 0;
        while (a < lora_.size() && lora_[a].adapter != s.lora) ++a;
        if (a == lora_.size()) {
            if (&s.lora->model() != &model_) fail(VT_ERR_INTERNAL, "a LoRA adapter of another model");
            lora_.push_back(LoraSlot{s.lora, nullptr, nullptr});
            lora_counts_.push_back(0);
        }
        lora_counts_[a] += (int64_t)s.tokens.size();
    }
    ForwardArgs args{};
    args.n_tokens = n_tok;
    args.k_cache = &kv.k();
    args.v_cache = &kv.v();
    args.n_ctx = n_ctx;
    return args;
}

size_t Context::arena_need(PagedKv &kv, std::span<const BatchSeq> batch, int64_t n_ctx) {
    int64_t n_tok = 0, n_out = 0;
    pass_ = Pass{};
    ForwardArgs args = prepare(kv, batch, n_ctx, n_tok, n_out);
    build_graph(args, kv, n_out ? n_out : 1, n_index_);
    const size_t need = graph_.plan();
    graph_.reset();
    return need;
}

const Tensor *Context::forward(PagedKv &kv, std::span<const BatchSeq> batch, int64_t n_ctx) {
    return forward(kv, batch, n_ctx, Pass{});
}

const Tensor *Context::forward(PagedKv &kv, std::span<const BatchSeq> batch, int64_t n_ctx, const Pass &pass) {
    if (pass.mtp && !pass.hidden_in) fail(VT_ERR_INTERNAL, "a multi-token-prediction pass without hidden states");
    pass_ = pass;
    hidden_ = {};
    const uint32_t n_groups = (uint32_t)kv.groups().size();
    int64_t n_tok = 0, n_out = 0;
    ForwardArgs args = prepare(kv, batch, n_ctx, n_tok, n_out);
    const Tensor *logits = build(args, kv, n_out ? n_out : 1, n_index_);

    // The inputs are packed on the host, then sent to the device's memory
    // (for the CPU, a copy of a few KB).
    const int64_t n_rows_in = n_out ? n_out : 1;
    const int64_t n_state = args.state_index ? 3 * (int64_t)batch.size() : 0;
    int64_t n_staged = 2 * n_tok + n_rows_in + n_state;
    for (int64_t ni : n_index_) n_staged += ni;
    staging_.resize((size_t)n_staged);
    int32_t *tok = staging_.data();
    int32_t *pos = tok + n_tok;
    int32_t *rows = pos + n_tok;
    int32_t *index_at = rows + n_rows_in;
    int64_t t = 0, r = 0;
    for (const BatchSeq &s : batch) {
        for (size_t i = 0; i < s.tokens.size(); ++i, ++t) {
            tok[t] = s.tokens[i];
            pos[t] = (int32_t)(s.start_pos + i);
            if (s.logits == Logits::all) rows[r++] = (int32_t)t;
        }
        if (s.logits == Logits::last)
            for (int64_t i = t - s.n_last; i < t; ++i) rows[r++] = (int32_t)i;
    }
    if (r == 0) rows[0] = 0;
    // Each group's index in Op::ATTN_PAGED's layout: per token [slot,
    // positions it sees, where its block table starts], then the tables.
    const uint32_t bs = kv.block_size();
    for (uint32_t g = 0; g < n_groups; ++g) {
        int32_t *idx = index_at;
        index_at += n_index_[g];
        int64_t tt = 0, table_at = 3 * n_tok;
        for (const BatchSeq &s : batch) {
            const std::vector<BlockId> &table = s.block_tables[g];
            const size_t n = s.tokens.size();
            if (((size_t)s.start_pos + n + bs - 1) / bs > table.size())
                fail(VT_ERR_INTERNAL, "a block table of %zu blocks for %zu positions", table.size(),
                     (size_t)s.start_pos + n);
            for (size_t b = 0; b < table.size(); ++b) {
                if (table[b] != kNoBlock && (table[b] < 0 || (uint32_t)table[b] >= kv.num_blocks(g)))
                    fail(VT_ERR_INTERNAL, "block %d outside the KV cache group's %u", table[b], kv.num_blocks(g));
                idx[table_at + (int64_t)b] = table[b];
            }
            for (size_t i = 0; i < n; ++i, ++tt) {
                const uint32_t p = s.start_pos + (uint32_t)i;
                if (table[p / bs] == kNoBlock) fail(VT_ERR_INTERNAL, "position %u has no KV block", p);
                idx[3 * tt] = (int32_t)kv_slot(table, p, bs);
                idx[3 * tt + 1] = (int32_t)(p + 1);
                idx[3 * tt + 2] = (int32_t)table_at;
            }
            table_at += (int64_t)table.size();
        }
    }
    // The recurrent layers' state index: per sequence {slot, tokens, fresh}.
    if (n_state) {
        int32_t *st = index_at;
        for (const BatchSeq &s : batch) {
            if (s.state_slot < 0 || (uint32_t)s.state_slot >= kv.num_slots())
                fail(VT_ERR_INTERNAL, "state slot %d outside the KV cache's %u", s.state_slot, kv.num_slots());
            *st++ = s.state_slot;
            *st++ = (int32_t)s.tokens.size();
            *st++ = s.start_pos == 0;
        }
        tensor_set(*args.state_index, index_at, 0, (size_t)n_state * sizeof(int32_t));
    }
    tensor_set(*args.tokens, tok, 0, (size_t)n_tok * sizeof(int32_t));
    tensor_set(*args.positions, pos, 0, (size_t)n_tok * sizeof(int32_t));
    tensor_set(*args.out_rows, rows, 0, (size_t)n_rows_in * sizeof(int32_t));
    index_at = rows + n_rows_in;
    for (uint32_t g = 0; g < n_groups; ++g) {
        tensor_set(*index_in_[g], index_at, 0, (size_t)n_index_[g] * sizeof(int32_t));
        index_at += n_index_[g];
    }
    // Every adapter's rows and scales staged first, then sent (a device's
    // copy may read the host memory after the call returns).
    lora_rows_.clear();
    lora_scales_.clear();
    for (const LoraSlot &slot : lora_) {
        int64_t t0 = 0;
        for (const BatchSeq &s : batch) {
            if (s.lora == slot.adapter)
                for (size_t i = 0; i < s.tokens.size(); ++i) {
                    lora_rows_.push_back((int32_t)(t0 + (int64_t)i));
                    lora_scales_.push_back(s.lora_scale * s.lora->scale());
                }
            t0 += (int64_t)s.tokens.size();
        }
    }
    for (size_t a = 0, at = 0; a < lora_.size(); at += (size_t)lora_counts_[a], ++a) {
        tensor_set(*lora_[a].rows, lora_rows_.data() + at, 0, (size_t)lora_counts_[a] * sizeof(int32_t));
        tensor_set(*lora_[a].scales, lora_scales_.data() + at, 0, (size_t)lora_counts_[a] * sizeof(float));
    }
    if (hidden_in_t_)
        tensor_set(*hidden_in_t_, pass.hidden_in, 0, (size_t)hidden_in_t_->nelements() * sizeof(float));
    compute();
    pass_ = Pass{};
    if (hidden_t_) {
        if (tensor_is_host(*hidden_t_)) {
            hidden_ = std::span<const float>(static_cast<const float *>(hidden_t_->data), (size_t)hidden_t_->nelements());
        } else {
            hidden_host_.resize((size_t)hidden_t_->nelements());
            tensor_get(*hidden_t_, hidden_host_.data(), 0, hidden_host_.size() * sizeof(float));
            hidden_ = hidden_host_;
        }
    }
    if (tensor_is_host(*logits)) return logits;
    logits_host_.resize((size_t)logits->nelements());
    tensor_get(*logits, logits_host_.data(), 0, logits_host_.size() * sizeof(float));
    logits_view_ = *logits;
    logits_view_.data = logits_host_.data();
    logits_view_.buffer = nullptr;
    return &logits_view_;
}

Sequence::Sequence(Context &ctx, uint32_t n_ctx, bool logits_all) : ctx_(ctx), logits_all_(logits_all) {
    const Model &model = ctx.model();
    const Hparams &hp = model.hparams;
    // The engine's default too: the training context up to 4096, 4096 when the file names none.
    n_ctx_ = n_ctx ? n_ctx : (hp.n_ctx_train && hp.n_ctx_train < 4096 ? hp.n_ctx_train : 4096);
    bool on_device = false;
    for (uint32_t l = 0; l < model.cache_layers.size(); ++l) on_device |= !device_is_host(model.layer_device(l));
    if (n_ctx == 0 && on_device) {
        // On a device, no more than its memory holds (the engine's rule,
        // engine/kv-plan.h), in whole blocks; the CPU's pages are taken
        // only as they are written.
        uint64_t per_token = 0, slot = 0;
        for (const LayerCacheSpec &l : model.cache_layers) {
            per_token += layer_bytes_per_token(l);
            slot += layer_bytes_per_slot(l);
        }
        const uint64_t limit = kv_memory_limit(model, ctx.executor().device(), 0, n_ctx_);
        const uint64_t rows = limit > slot ? limit - slot : 0;  // beside its one state slot
        const uint64_t fits = per_token ? rows / per_token / kBlockSize * kBlockSize : n_ctx_;
        if (fits < n_ctx_) {
            if (fits == 0) fail(VT_ERR_OUT_OF_MEMORY, "KV cache: not one block of %u tokens fits", kBlockSize);
            VT_LOG_INFO("sequence context: %llu tokens (what fits in the device's memory)", (unsigned long long)fits);
            n_ctx_ = (uint32_t)fits;
        }
    }
    // Full attention holds the whole context; a sliding window a ring of the
    // blocks one step of n_batch tokens can touch.
    const uint64_t ctx_blocks = (n_ctx_ + kBlockSize - 1) / kBlockSize;
    std::vector<uint32_t> blocks;
    for (const CacheGroup &g : cache_groups(model.cache_layers))
        blocks.push_back((uint32_t)(g.window ? std::min(ctx_blocks, sliding_blocks_per_step(g.window, ctx.n_batch(),
                                                                                            kBlockSize))
                                             : ctx_blocks));
    // Recurrent layers: one state slot, slot 0.
    const uint32_t n_slots = state_slots(model.cache_layers).layers.empty() ? 0 : 1;
    kv_ = std::make_unique<PagedKv>(model, blocks, kBlockSize, n_slots);
    tables_.resize(blocks.size());
    for (std::vector<BlockId> &t : tables_) t.reserve(ctx_blocks);  // no allocation while decoding
    pending_.reserve(ctx.n_batch());
    logits_.reserve((size_t)hp.n_vocab * (logits_all ? ctx.n_batch() : 1));
}

void Sequence::fill_tables(uint32_t first, uint32_t n) {
    const uint32_t n_blocks = (n + kBlockSize - 1) / kBlockSize;
    for (uint32_t g = 0; g < tables_.size(); ++g) {
        const uint32_t window = kv_->groups()[g].window, ring = kv_->num_blocks(g);
        const uint32_t before = window && first + 1 > window ? (first + 1 - window) / kBlockSize : 0;
        std::vector<BlockId> &t = tables_[g];
        t.resize(n_blocks);
        for (uint32_t b = 0; b < n_blocks; ++b) t[b] = b < before ? kNoBlock : (BlockId)(b % ring);
    }
}

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
        const int64_t n = std::min<int64_t>(total - off, ctx_.n_batch());
        const bool last_chunk = off + n == total;
        Context::BatchSeq s;
        s.tokens = std::span<const int32_t>(pending_.data() + off, (size_t)n);
        s.start_pos = (uint32_t)n_past_;
        fill_tables((uint32_t)n_past_, (uint32_t)(n_past_ + n));
        s.block_tables = tables_;
        s.lora = lora_.get();
        s.lora_scale = lora_scale_;
        s.state_slot = kv_->num_slots() ? 0 : -1;
        s.logits = logits_all_ ? Context::Logits::all : last_chunk ? Context::Logits::last : Context::Logits::none;
        const Tensor *lg = ctx_.forward(*kv_, std::span<const Context::BatchSeq>(&s, 1), n_ctx_);
        n_past_ += n;
        if (s.logits != Context::Logits::none) {
            const size_t rows = s.logits == Context::Logits::all ? (size_t)n : 1;
            const float *src = static_cast<const float *>(lg->data);
            logits_.insert(logits_.end(), src, src + (size_t)n_vocab * rows);
            n_logit_rows_ += (int64_t)rows;
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

void Sequence::set_lora(std::shared_ptr<const LoraAdapter> lora, float scale) {
    if (lora && &lora->model() != &ctx_.model())
        fail(VT_ERR_INVALID_ARGUMENT, "the LoRA adapter belongs to another model");
    if (!std::isfinite(scale)) fail(VT_ERR_INVALID_ARGUMENT, "the LoRA scale %g is not finite", (double)scale);
    lora_ = scale != 0.0f ? std::move(lora) : nullptr;  // scale 0 is the base model, exactly
    lora_scale_ = scale;
}

void Sequence::reset() {
    n_past_ = 0;
    pending_.clear();
    logits_.clear();
    n_logit_rows_ = 0;
}

} // namespace vt
