// What the tiny-model gates share (test-tiny-models, test-lora-tiny,
// test-quantize-at-load): the tolerances against transformers, every
// position's logits of a prompt through a vt_seq, and the rule for greedy
// tokens against a golden.
#pragma once

#include <catch2/catch.hpp>

#include <vector>

#include "common/vt-handles.h"
#include "common/vt-status.h"
#include "vt/vt.h"

namespace vt::test {

// Against transformers' float32 logits. vt keeps K and V in f16 and rounds
// attention probabilities (and queries) to f16, as llama.cpp does;
// transformers computes all of it in float32. On these models (logits of
// magnitude 1-10) that moves logits by up to ~2e-3 (measured: see the WARN
// lines); 1e-2 leaves room for other SIMD widths and still fails a wrong
// rope angle, norm, bias or LoRA scale by orders of magnitude.
constexpr float TOL_LOGIT = 1e-2f;
// A greedy step whose margin is below twice the logit tolerance may flip.
constexpr float TIE_MARGIN = 2 * TOL_LOGIT;

// The logits of every position of ids, evaluated in one step of a fresh
// sequence of ctx computing with lora (null: none) at scale.
inline std::vector<std::vector<float>> seq_all_logits(vt_context *ctx, const std::vector<vt_token> &ids,
                                                      const vt_lora *lora = nullptr, float scale = 1.0f) {
    vt_seq_params sp;
    vt_seq_params_init(&sp);
    sp.n_ctx = (uint32_t)ids.size() + 8;
    sp.logits_all = true;
    vt_seq *s = nullptr;
    VT_REQUIRE_OK(vt_seq_create(ctx, &sp, &s));
    SeqPtr seq(s);
    if (lora) VT_REQUIRE_OK(vt_seq_set_lora(s, lora, scale));
    VT_REQUIRE_OK(vt_seq_feed(s, ids.data(), ids.size()));
    VT_REQUIRE_OK(vt_seq_step(s));
    std::vector<std::vector<float>> out;
    for (size_t t = 0; t < ids.size(); ++t) {
        const float *l = nullptr;
        size_t n = 0;
        VT_REQUIRE_OK(vt_seq_logits(s, (int32_t)t, &l, &n));
        out.emplace_back(l, l + n);
    }
    return out;
}

// got must equal the golden greedy ids (want, with the oracle's top1 - top2
// margins) up to the first difference, and that one may only follow a step
// whose margin is below tie_margin. Returns whether all were identical.
inline bool check_greedy(const std::vector<vt_token> &got, const std::vector<vt_token> &want,
                         const std::vector<float> &margins, float tie_margin, const char *what) {
    REQUIRE(got.size() == want.size());
    REQUIRE(margins.size() == want.size());
    size_t first = 0;
    while (first < want.size() && got[first] == want[first]) ++first;
    if (first == want.size()) return true;
    INFO(what << ": first difference at step " << first << ": vt " << got[first] << ", golden " << want[first]
              << " (margin " << margins[first] << ")");
    CHECK(margins[first] < tie_margin);
    return false;
}

} // namespace vt::test
