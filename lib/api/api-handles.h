// The opaque public handles and the C++ objects behind them.
#pragma once

#include <memory>

#include "model/model.h"
#include "runner/sequence.h"
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
};

struct vt_seq {
    vt_context *ctx;
    std::unique_ptr<vt::Sequence> impl;
};

inline const vt::Tokenizer *from_handle(const vt_tokenizer *t) { return t->impl; }
