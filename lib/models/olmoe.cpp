//! OLMoE: the pre-norm decoder with RMSNorm over the whole q and k
//! projections (not per head), NeoX rope, and a mixture-of-experts FFN in
//! every layer: softmax router, top-k, the chosen weights used as they are
//! (norm_topk_prob false). Reference: transformers/models/olmoe/modeling_olmoe.py.
#include "core/error.h"
#include "models/decoder.h"

namespace vt {

namespace {
class Olmoe final : public Architecture {
public:
    Olmoe() : decoder_(traits()) {}
    void load(Model &m) override {
        // clip_qkv would clamp q, k and v; no released OLMoE sets it.
        if (m.arch_f32("attention.clamp_kqv", 0.0f) != 0.0f)
            fail(VT_ERR_UNSUPPORTED, "olmoe: clip_qkv (attention.clamp_kqv) is not supported");
        decoder_.load(m);
    }
    Tensor *build(const Model &m, const ForwardArgs &a) const override { return decoder_.build(m, a); }

private:
    static DecoderTraits traits() {
        DecoderTraits t{"olmoe", kRopeNeox};
        t.qk_norm = true;
        t.qk_norm_full = true;
        t.moe = {kMoeSoftmax, false};
        return t;
    }
    PreNormDecoder decoder_;
};
} // namespace

std::unique_ptr<Architecture> make_olmoe_architecture() { return std::make_unique<Olmoe>(); }

} // namespace vt
