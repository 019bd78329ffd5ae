// A LoRA adapter of one model (include/vt/vt_lora.h): per target weight W
// (by GGUF name), A (in, r) as llama.cpp's lora_a and B (r, out), its
// lora_b, kept transposed, so that the update of a token x is
// scale * B (A x).
// Loaded from a PEFT folder or a GGUF LoRA, checked against the model, then
// immutable: shared by the requests and sequences that use it
// (std::shared_ptr), on any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/tensor.h"

namespace vt {

class Model;

struct LoraPair {
    Tensor a{};  // (in, r): r rows of the input width, as stored (F32 or F16)
    Tensor b{};  // B transposed, (out, r) f32: r rows of the output width (Op::LORA's src3)
};

class LoraAdapter {
public:
    // Loads path (a PEFT folder or a GGUF LoRA file) for m. Throws
    // vt::Error with the statuses vt_lora_load documents.
    static std::shared_ptr<const LoraAdapter> load(const Model &m, const std::string &path);

    // The pair of a model weight, by the weight's GGUF name, or null.
    const LoraPair *find(const char *weight_name) const;

    const Model &model() const { return model_; }
    // Unique per load in this process: part of the prefix cache's key.
    uint64_t id() const { return id_; }
    uint32_t rank() const { return rank_; }
    float alpha() const { return alpha_; }
    float scale() const { return scale_; }  // what B A is multiplied by at a request scale of 1
    size_t n_weights() const { return pairs_.size(); }
    uint64_t n_params() const { return n_params_; }
    const std::string &targets() const { return targets_; }  // "attn_q,attn_v"
    const char *format() const { return format_; }

private:
    explicit LoraAdapter(const Model &m);
    struct Source;  // one A or B as read from the file
    void load_peft(const std::string &dir);
    void load_gguf(const std::string &path);
    // Checks a pair against the model's weight `name` and stores copies of
    // it; factor (!= 1 when this pair's alpha / rank differs from the
    // adapter's) is folded into B; permute_qk reorders the rows of q and k
    // between Hugging Face's rotate-half layout and llama.cpp's.
    void add(const std::string &name, const Source &a, const Source &b, float factor, bool permute_qk);
    void finish();

    const Model &model_;
    uint64_t id_;
    uint32_t rank_ = 0;
    float alpha_ = 0, scale_ = 1;
    uint64_t n_params_ = 0;
    std::string targets_;
    const char *format_ = "";
    // Looked up by a weight's name without making a string (heterogeneous lookup).
    struct NameHash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    std::unordered_map<std::string, LoraPair, NameHash, std::equal_to<>> pairs_;
    std::vector<std::vector<uint8_t>> storage_;  // the pairs' data
};

} // namespace vt
