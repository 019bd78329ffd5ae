#include "engine/mtp.h"

#include <cstring>

#include "core/error.h"
#include "sample/sampler.h"

namespace vt {

MtpProposer::MtpProposer(Context &ctx, PagedKv &kv, int64_t n_ctx)
    : ctx_(ctx), kv_(kv), n_ctx_(n_ctx), n_embd_(ctx.model().hparams.n_embd), n_vocab_(ctx.model().hparams.n_vocab) {
    const Model &m = ctx.model();
    if (!m.arch().has_mtp())
        fail(VT_ERR_INVALID_ARGUMENT, "speculative decoding: %s has no multi-token-prediction layer",
             m.arch_name().c_str());
    if (kv.num_layers() != m.cache_layers.size() + m.mtp_cache.size())
        fail(VT_ERR_INTERNAL, "speculative decoding: the KV cache has no room for the multi-token-prediction layer");
}

void MtpProposer::step(std::span<const Part> parts, std::vector<std::vector<int32_t>> &out) {
    out.assign(parts.size(), {});
    // The rows of every part, its last one's logits where it drafts.
    batch_.clear();
    hidden_.clear();
    std::vector<size_t> drafting;  // parts that draft, in batch order
    for (size_t i = 0; i < parts.size(); ++i) {
        const Part &p = parts[i];
        if (p.next.empty()) continue;
        Context::BatchSeq b;
        b.tokens = p.next;
        b.start_pos = p.start;
        b.block_tables = p.tables;
        b.state_slot = p.state_slot;
        b.logits = p.k ? Context::Logits::last : Context::Logits::none;
        batch_.push_back(b);
        hidden_.insert(hidden_.end(), p.hidden, p.hidden + p.next.size() * n_embd_);
        if (p.k) drafting.push_back(i);
    }
    if (batch_.empty()) return;
    Context::Pass pass;
    pass.mtp = true;
    pass.hidden_in = hidden_.data();
    const Tensor *logits = ctx_.forward(kv_, batch_, n_ctx_, pass);
    // The drafting parts' greedy tokens, and their last rows' MTP hidden
    // states for the next pass.
    std::vector<float> own;
    own.reserve(drafting.size() * n_embd_);
    {
        const float *row = static_cast<const float *>(logits->data);
        const std::span<const float> h = ctx_.hidden();
        size_t at = 0, d = 0;
        for (size_t i = 0; i < parts.size() && d < drafting.size(); ++i) {
            const size_t n = parts[i].next.size();
            at += n;
            if (i != drafting[d]) continue;
            out[i].push_back((int32_t)first_max_index(row, n_vocab_));
            row += n_vocab_;
            own.insert(own.end(), h.begin() + (ptrdiff_t)((at - 1) * n_embd_), h.begin() + (ptrdiff_t)(at * n_embd_));
            ++d;
        }
    }
    // Then the chain: one token a pass per part still short of its k, at the
    // position after its last row, from the layer's own last hidden state.
    std::vector<size_t> in_pass;
    fed_.resize(parts.size());
    for (uint32_t step = 1;; ++step) {
        batch_.clear();
        hidden_.clear();
        in_pass.clear();
        for (size_t d = 0; d < drafting.size(); ++d) {
            const Part &p = parts[drafting[d]];
            if (step >= p.k) continue;
            fed_[d] = out[drafting[d]].back();
            Context::BatchSeq b;
            b.tokens = std::span<const int32_t>(&fed_[d], 1);
            b.start_pos = p.start + (uint32_t)p.next.size() + step - 1;
            b.block_tables = p.tables;
            b.state_slot = p.state_slot;
            batch_.push_back(b);
            hidden_.insert(hidden_.end(), own.begin() + (ptrdiff_t)(d * n_embd_), own.begin() + (ptrdiff_t)((d + 1) * n_embd_));
            in_pass.push_back(d);
        }
        if (batch_.empty()) break;
        pass.hidden_in = hidden_.data();
        logits = ctx_.forward(kv_, batch_, n_ctx_, pass);
        const float *row = static_cast<const float *>(logits->data);
        const std::span<const float> h = ctx_.hidden();
        for (size_t j = 0; j < in_pass.size(); ++j) {
            const size_t d = in_pass[j];
            out[drafting[d]].push_back((int32_t)first_max_index(row + j * n_vocab_, n_vocab_));
            std::memcpy(own.data() + d * n_embd_, h.data() + j * n_embd_, n_embd_ * sizeof(float));
        }
    }
}

} // namespace vt
