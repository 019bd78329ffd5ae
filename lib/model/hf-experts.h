// The experts of a mixture-of-experts folder as GGUF's stacked tensors.
// Checkpoints keep one matrix per expert ("model.layers.<i>.mlp.experts.<e>.
// gate_proj.weight", Mixtral's "block_sparse_moe.experts.<e>.w1.weight") or,
// as transformers 5 holds them in memory, one fused 3-D tensor per layer
// ("mlp.experts.gate_up_proj" (n_expert, 2 n_ff, n_embd) gate rows first,
// "mlp.experts.down_proj"); GGUF has blk.<i>.ffn_{gate,up,down}_exps.weight
// (n_embd, n_ff, n_expert) and (n_ff, n_embd, n_expert). A fused down_proj is
// that layout already and stays in the mapping; the others are copied once
// into stacks (a folder's experts are resident copies: the log says so).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/gguf.h"
#include "model/safetensors.h"

namespace vt {

class HfExperts {
public:
    // Takes t when it is expert weight (true), else leaves it (false).
    bool take(const SafetensorsTensor &t);
    // Appends the stacked tensors to out. Throws VT_ERR_FORMAT when an
    // expert is missing or the experts of one tensor differ in shape or type.
    void finish(std::vector<GgufTensorInfo> &out, const std::string &where);
    // Keeps the copies alive (the assembled GgufFile holds it).
    std::shared_ptr<const void> storage() { return storage_; }
    // Bytes copied into stacks.
    size_t copied_bytes() const { return copied_; }

private:
    struct Part {
        SafetensorsTensor t;         // data: where this expert's matrix starts
        int64_t row0 = 0, rows = 0;  // its rows of t
    };
    // GGUF name -> expert -> its matrix.
    std::map<std::string, std::map<int64_t, Part>> parts_;
    std::shared_ptr<std::vector<std::vector<uint8_t>>> storage_ = std::make_shared<std::vector<std::vector<uint8_t>>>();
    size_t copied_ = 0;
};

} // namespace vt
