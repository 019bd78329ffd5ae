// The opaque public handles and the C++ objects behind them.
#pragma once

#include <memory>

#include "model/model.h"
#include "runner/sequence.h"
#include "vt/vt.h"

struct vt_model {
    std::unique_ptr<vt::Model> impl;
};

struct vt_context {
    const vt_model *model;
    std::unique_ptr<vt::Context> impl;
};

struct vt_seq {
    vt_context *ctx;
    std::unique_ptr<vt::Sequence> impl;
};

// vt_tokenizer is never allocated: the public pointer is the C++ object.
inline const vt_tokenizer *to_handle(const vt::Tokenizer *t) { return reinterpret_cast<const vt_tokenizer *>(t); }
inline const vt::Tokenizer *from_handle(const vt_tokenizer *t) { return reinterpret_cast<const vt::Tokenizer *>(t); }
