// Multi-token-prediction proposals for speculative decoding (vLLM's "mtp"
// method, llama.cpp's draft-mtp): the checkpoint's own MTP layer
// (Architecture::build_mtp, models/mtp-head.h: Qwen3.5's mtp.*, DeepSeek-V3's
// next-n layer, the nextn block of a GGUF) drafts from the model's final
// hidden states.
//
// The MTP layer has a KV cache of its own, a layer after the model's in the
// engine's pool (PagedKv made with_mtp): the same blocks and block tables as
// the model's full-attention layers, so it is shared through the prefix
// cache and freed with them. Its row at position p is computed from the
// token at p + 1 and the model's hidden state at p (vLLM's convention;
// transformers stores it at p + 1, the same attention under rope). So after
// every target step, the MTP layer computes its rows for the positions that
// step computed and kept (step()), each sequence's last row predicting the
// token after the one just sampled: the first draft token. A k-token draft
// chains the layer k - 1 times more on its own output, each pass one token
// per drafting sequence at the next position (the engine lends those
// positions room in the sequence's blocks for the pass and takes it back:
// rows past what the model keeps are overwritten by the next step).
//
// A prefix-cache hit serves the MTP layer's rows with the model's; the row
// at a hit's last position was computed from the token after it in the
// sequence that cached it, which may differ (drafts only, never output).
//
// Not thread-safe: the engine's thread.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runner/paged-kv.h"
#include "runner/sequence.h"

namespace vt {

class MtpProposer {
public:
    // ctx computes the model; kv is the engine's pool, made with_mtp; n_ctx
    // as Context::forward's. Errors: VT_ERR_INVALID_ARGUMENT (a model without
    // an MTP layer, a pool without its cache).
    MtpProposer(Context &ctx, PagedKv &kv, int64_t n_ctx);

    // One sequence's share of the model's last step.
    struct Part {
        uint32_t start = 0;                 // the first position the step computed
        std::span<const int32_t> next;      // per kept position p = start.., the token at p + 1
        const float *hidden = nullptr;      // per kept position, the model's hidden state (n_embd floats)
        std::span<const std::vector<BlockId>> tables;  // per cache group, covering start + next.size() positions
                                                       // (and k - 1 more where k > 1)
        int32_t state_slot = -1;            // its state slot, where the model has recurrent layers
        uint32_t k = 0;                     // the tokens to draft after its last: 0 = its rows only
    };
    // Computes every part's MTP rows, then drafts: out[i] holds up to
    // parts[i].k greedy tokens. Throws vt::Error (the pool's state is
    // unchanged but for MTP rows).
    void step(std::span<const Part> parts, std::vector<std::vector<int32_t>> &out);

private:
    Context &ctx_;
    PagedKv &kv_;
    int64_t n_ctx_;
    uint32_t n_embd_, n_vocab_;
    // step() scratch
    std::vector<Context::BatchSeq> batch_;
    std::vector<float> hidden_;
    std::vector<int32_t> fed_;
};

} // namespace vt
