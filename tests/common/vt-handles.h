// unique_ptr aliases for the public handles, for C++ tests of the C ABI:
// each destroys its handle with the matching vt_*_destroy.
#pragma once

#include <memory>

#include "vt/vt.h"

namespace vt::test {

template <class T, void (*Destroy)(T *)> struct HandleDeleter {
    void operator()(T *p) const { Destroy(p); }
};

using ModelPtr = std::unique_ptr<vt_model, HandleDeleter<vt_model, vt_model_destroy>>;
using ContextPtr = std::unique_ptr<vt_context, HandleDeleter<vt_context, vt_context_destroy>>;
using SeqPtr = std::unique_ptr<vt_seq, HandleDeleter<vt_seq, vt_seq_destroy>>;
using LoraPtr = std::unique_ptr<vt_lora, HandleDeleter<vt_lora, vt_lora_destroy>>;
using TemplatePtr = std::unique_ptr<vt_chat_template, HandleDeleter<vt_chat_template, vt_chat_template_destroy>>;

} // namespace vt::test
