// The opaque public handles and the C++ objects behind them.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>

#include "engine/engine.h"
#include "grammar/token-matcher.h"
#include "model/lora.h"
#include "model/model.h"
#include "runner/sequence.h"
#include "sample/sampler.h"
#include "vt/vt.h"

// A tokenizer handle: the model's (borrowed) or one of its own.
struct vt_tokenizer {
    const vt::Tokenizer *impl = nullptr;
    std::unique_ptr<vt::Tokenizer> owned;  // set by vt_tokenizer_load only
};

struct vt_model {
    std::unique_ptr<vt::Model> impl;
    vt_tokenizer tokenizer;  // borrows impl->tokenizer()
};

struct vt_context {
    const vt_model *model;
    std::unique_ptr<vt::Context> impl;
    vt_context_params params;              // as created (struct_size normalized)
    // The serving engine, made by the first vt_context_submit or
    // vt_context_step (under engine_mu); read without the lock once set.
    std::mutex engine_mu;
    std::unique_ptr<vt::Engine> engine_owner;
    std::atomic<vt::Engine *> engine{nullptr};
};

// The serving engine's configuration from a context's parameters.
inline vt::EngineConfig engine_config(const vt_context_params &p) {
    vt::EngineConfig cfg;
    cfg.kv_cache_bytes = p.kv_cache_bytes;
    cfg.block_size = p.kv_block_size;
    cfg.max_num_seqs = p.max_num_seqs;
    cfg.max_model_len = p.max_model_len;
    cfg.max_batched_tokens = p.n_batch;
    cfg.prefix_caching = !p.no_prefix_caching;
    if (p.spec_method == VT_SPEC_NGRAM) {
        // vLLM's defaults: 5 and 5, or one size given for both.
        const uint32_t lo = p.prompt_lookup_min, hi = p.prompt_lookup_max;
        cfg.ngram.min_n = lo ? lo : hi ? hi : 5;
        cfg.ngram.max_n = hi ? hi : lo ? lo : 5;
        cfg.ngram.k = p.num_speculative_tokens;
    }
    if (p.spec_method == VT_SPEC_SUFFIX) {
        cfg.suffix.k = p.num_speculative_tokens;
        cfg.suffix.max_depth = p.suffix_max_tree_depth ? p.suffix_max_tree_depth : 24;
        cfg.suffix.max_cached = p.suffix_max_cached_requests;
        cfg.suffix.max_spec_factor = p.suffix_max_spec_factor;
        cfg.suffix.min_token_prob = p.suffix_min_token_prob;
    }
    if (p.spec_method == VT_SPEC_MTP) cfg.mtp_k = p.num_speculative_tokens;
    if (p.spec_method == VT_SPEC_DRAFT_MODEL && p.draft_model) {
        cfg.draft_model = p.draft_model->impl.get();
        cfg.draft_k = p.num_speculative_tokens;
    }
    return cfg;
}

struct vt_seq {
    vt_context *ctx;
    std::unique_ptr<vt::Sequence> impl;
};

// A LoRA adapter; requests and sequences hold their own references.
struct vt_lora {
    const vt_model *model;
    std::shared_ptr<const vt::LoraAdapter> impl;
};

struct vt_sampler {
    vt::Sampler impl;
};

// A compiled constraint; matchers and sampler stages hold their own references.
struct vt_grammar {
    std::shared_ptr<const vt::grammar::CompiledGrammar> impl;
};

struct vt_grammar_matcher {
    vt::grammar::TokenMatcher impl;
};

inline const vt::Tokenizer *from_handle(const vt_tokenizer *t) { return t->impl; }
