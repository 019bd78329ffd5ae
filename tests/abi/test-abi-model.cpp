// Model-level behaviour through the public C ABI only (libvt.so, include/vt),
// on the tiny random-weight Llama of tests/common/gguf-writer.h: loading and
// vt_model_get_info, bad files, a cancelling progress callback, sequence
// misuse and tokenizer errors. Each failure must return its documented
// vt_status and leave a vt_last_error() message that says what is wrong.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

#include "common/gguf-writer.h"
#include "common/temp-file.h"
#include "common/vt-handles.h"
#include "vt/vt.h"

namespace fs = std::filesystem;
using vt::test::TinyLlama;

namespace {

using vt::test::TempFile;

using vt::test::ContextPtr;
using vt::test::ModelPtr;
using vt::test::SeqPtr;

std::string last_error() {
    const char *e = vt_last_error();
    return e ? e : "";
}
bool contains(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

vt_status load(const TinyLlama &o, ModelPtr &out, const vt_model_params *params = nullptr) {
    TempFile f(vt::test::tiny_llama_gguf(o));
    vt_model *m = nullptr;
    const vt_status st = vt_model_load(f.path.string().c_str(), params, &m);
    out.reset(m);
    return st;
}

ModelPtr load_ok(const TinyLlama &o = {}) {
    ModelPtr m;
    const vt_status st = load(o, m);
    INFO(last_error());
    REQUIRE(st == VT_OK);
    REQUIRE(m);
    return m;
}

struct Run {
    ModelPtr model;
    ContextPtr ctx;
    SeqPtr seq;
};

Run make_run(uint32_t n_ctx, bool logits_all, uint32_t n_threads = 2) {
    Run r;
    r.model = load_ok();
    vt_context_params cp;
    vt_context_params_init(&cp);
    cp.n_threads = n_threads;
    vt_context *c = nullptr;
    REQUIRE(vt_context_create(r.model.get(), &cp, &c) == VT_OK);
    r.ctx.reset(c);
    vt_seq_params sp;
    vt_seq_params_init(&sp);
    sp.n_ctx = n_ctx;
    sp.logits_all = logits_all;
    vt_seq *s = nullptr;
    REQUIRE(vt_seq_create(c, &sp, &s) == VT_OK);
    r.seq.reset(s);
    return r;
}

// The call returns `want` with a non-empty message; returns the message.
#define CHECK_STATUS(call, want)                                      \
    do {                                                              \
        const vt_status got_ = (call);                                \
        INFO(#call << " -> " << vt_status_str(got_) << ": " << last_error()); \
        CHECK(got_ == (want));                                        \
        if ((want) != VT_OK) CHECK(!last_error().empty());            \
    } while (0)

const vt_token kTokens[] = {260, 72, 101, 108, 108, 111, 256, 258, 32, 119};

} // namespace

TEST_CASE("abi-model: the tiny model loads; info and metadata are right", "[abi][model]") {
    ModelPtr m = load_ok();
    vt_model_info info;
    std::memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    REQUIRE(vt_model_get_info(m.get(), &info) == VT_OK);
    CHECK(info.n_vocab == 261);
    CHECK(info.n_ctx_train == 256);
    CHECK(info.n_embd == 64);
    CHECK(info.n_layer == 2);
    CHECK(info.n_head == 4);
    CHECK(info.n_head_kv == 2);
    uint64_t n_params = 0;
    for (const auto &t : vt::test::tiny_llama_tensors({})) {
        uint64_t n = 1;
        for (uint64_t d : t.ne) n *= d;
        n_params += n;
    }
    CHECK(info.n_params == n_params);
    CHECK(info.size_bytes > 0);

    // An older caller's smaller struct: fields past its size stay untouched.
    vt_model_info small;
    std::memset(&small, 0xAB, sizeof small);
    small.struct_size = offsetof(vt_model_info, n_ctx_train);
    REQUIRE(vt_model_get_info(m.get(), &small) == VT_OK);
    CHECK(small.n_params == n_params);
    CHECK(small.n_vocab == 0xABABABABu);

    char buf[64];
    size_t needed = 0;
    REQUIRE(vt_model_arch(m.get(), buf, sizeof buf, &needed) == VT_OK);
    CHECK(std::string(buf) == "llama");
    CHECK(needed == 5);
    REQUIRE(vt_model_meta_get(m.get(), "llama.block_count", buf, sizeof buf, &needed) == VT_OK);
    CHECK(std::string(buf) == "2");
    CHECK_STATUS(vt_model_chat_template(m.get(), buf, sizeof buf, &needed), VT_ERR_NOT_FOUND);

    const vt_tokenizer *tok = nullptr;
    REQUIRE(vt_model_tokenizer(m.get(), &tok) == VT_OK);
    CHECK(vt_tokenizer_n_vocab(tok) == 261);
    CHECK(vt_token_eos(tok) == 260);
    CHECK(vt_token_is_eog(tok, 260));
}

TEST_CASE("abi-model: a forward pass gives finite logits of n_vocab", "[abi][model]") {
    Run r = make_run(32, false);
    REQUIRE(vt_seq_feed(r.seq.get(), kTokens, 6) == VT_OK);
    REQUIRE(vt_seq_step(r.seq.get()) == VT_OK);
    const float *logits = nullptr;
    size_t n_vocab = 0;
    REQUIRE(vt_seq_logits(r.seq.get(), -1, &logits, &n_vocab) == VT_OK);
    REQUIRE(n_vocab == 261);
    for (size_t i = 0; i < n_vocab; ++i) REQUIRE(std::isfinite(logits[i]));
    size_t n_past = 0;
    REQUIRE(vt_seq_n_past(r.seq.get(), &n_past) == VT_OK);
    CHECK(n_past == 6);
}

TEST_CASE("abi-model: logits are bit-identical across threads and batching", "[abi][model][determinism]") {
    std::vector<float> ref;
    for (uint32_t nt : {1u, 2u, 3u}) {
        for (bool one_by_one : {false, true}) {
            INFO("threads " << nt << (one_by_one ? ", one token per step" : ", one step"));
            Run r = make_run(32, !one_by_one, nt);
            std::vector<float> got;
            const size_t n = sizeof kTokens / sizeof kTokens[0];
            const float *l = nullptr;
            size_t nv = 0;
            if (one_by_one) {
                for (size_t i = 0; i < n; ++i) {
                    REQUIRE(vt_seq_feed(r.seq.get(), &kTokens[i], 1) == VT_OK);
                    REQUIRE(vt_seq_step(r.seq.get()) == VT_OK);
                    REQUIRE(vt_seq_logits(r.seq.get(), -1, &l, &nv) == VT_OK);
                    got.insert(got.end(), l, l + nv);
                }
            } else {
                REQUIRE(vt_seq_feed(r.seq.get(), kTokens, n) == VT_OK);
                REQUIRE(vt_seq_step(r.seq.get()) == VT_OK);
                for (size_t i = 0; i < n; ++i) {
                    REQUIRE(vt_seq_logits(r.seq.get(), (int32_t)i, &l, &nv) == VT_OK);
                    got.insert(got.end(), l, l + nv);
                }
            }
            if (ref.empty()) ref = got;
            REQUIRE(got.size() == ref.size());
            CHECK(std::memcmp(got.data(), ref.data(), ref.size() * sizeof(float)) == 0);
        }
    }
}

TEST_CASE("abi-model: bad files give the documented status through vt_model_load", "[abi][model][errors]") {
    ModelPtr m;
    TinyLlama o;
    SECTION("unknown architecture") {
        o.arch = "mamba9";
        CHECK_STATUS(load(o, m), VT_ERR_UNSUPPORTED);
        CHECK(contains(last_error(), "mamba9"));
    }
    SECTION("I8 tensor (ggml id 24, a type vt does not run)") {
        o.type_of["blk.0.ffn_up.weight"] = vt::test::kI8;
        CHECK_STATUS(load(o, m), VT_ERR_UNSUPPORTED);
    }
    SECTION("a missing tensor") {
        o.drop.insert("blk.0.attn_v.weight");
        CHECK_STATUS(load(o, m), VT_ERR_FORMAT);
        CHECK(contains(last_error(), "blk.0.attn_v.weight"));
    }
    SECTION("a wrong shape") {
        o.shape_of["blk.1.ffn_gate.weight"] = {64, 96};
        CHECK_STATUS(load(o, m), VT_ERR_FORMAT);
        CHECK(contains(last_error(), "blk.1.ffn_gate.weight"));
    }
    SECTION("vocabulary / output mismatch") {
        o.n_extra_tokens = 1;
        CHECK_STATUS(load(o, m), VT_ERR_FORMAT);
        CHECK(contains(last_error(), "vocabulary"));
    }
    SECTION("a truncated file") {
        std::vector<uint8_t> b = vt::test::tiny_llama_gguf();
        b.resize(b.size() / 2);
        TempFile f(b);
        vt_model *raw = nullptr;
        CHECK_STATUS(vt_model_load(f.path.string().c_str(), nullptr, &raw), VT_ERR_FORMAT);
        CHECK(raw == nullptr);
        CHECK(contains(last_error(), "offset"));
    }
    CHECK(m == nullptr);  // *out is NULL on failure
}

namespace {
struct CancelState {
    int calls = 0;
    int allow = 0;
};
bool cancel_after(float, void *ud) {
    auto *s = static_cast<CancelState *>(ud);
    return ++s->calls <= s->allow;
}
} // namespace

TEST_CASE("abi-model: a progress callback returning false cancels the load", "[abi][model][errors]") {
    for (int allow : {0, 1, 2, 3}) {
        INFO("callback returns true " << allow << " times");
        CancelState st{0, allow};
        vt_model_params p;
        vt_model_params_init(&p);
        p.progress = cancel_after;
        p.progress_user_data = &st;
        ModelPtr m;
        const vt_status s = load({}, m, &p);
        if (st.calls > allow) {  // it said no at some point
            CHECK_STATUS(s, VT_ERR_CANCELLED);
            CHECK(contains(last_error(), "cancel"));
            CHECK(m == nullptr);
            CHECK(st.calls == allow + 1);  // not called again after saying no
        } else {
            CHECK(s == VT_OK);
        }
    }
}

TEST_CASE("abi-model: sequence misuse", "[abi][model][errors]") {
    Run r = make_run(8, false);
    vt_seq *s = r.seq.get();
    const float *l = nullptr;
    size_t nv = 0;
    size_t n_past = 0;

    SECTION("more tokens than n_ctx, then a smaller feed works") {
        CHECK_STATUS(vt_seq_feed(s, kTokens, 9), VT_ERR_CONTEXT_FULL);
        CHECK(contains(last_error(), "8"));
        CHECK_STATUS(vt_seq_step(s), VT_ERR_INVALID_STATE);  // nothing was queued
        CHECK_STATUS(vt_seq_feed(s, kTokens, 8), VT_OK);
        CHECK_STATUS(vt_seq_step(s), VT_OK);
        CHECK(vt_seq_n_past(s, &n_past) == VT_OK);
        CHECK(n_past == 8);
        CHECK_STATUS(vt_seq_feed(s, kTokens, 1), VT_ERR_CONTEXT_FULL);
    }
    SECTION("a token id outside the vocabulary") {
        const vt_token bad[2] = {5, 261};
        CHECK_STATUS(vt_seq_feed(s, bad, 2), VT_ERR_INVALID_ARGUMENT);
        CHECK(contains(last_error(), "261"));
        const vt_token neg[1] = {-7};
        CHECK_STATUS(vt_seq_feed(s, neg, 1), VT_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(vt_seq_step(s), VT_ERR_INVALID_STATE);
    }
    SECTION("step with nothing queued") {
        CHECK_STATUS(vt_seq_step(s), VT_ERR_INVALID_STATE);
        CHECK_STATUS(vt_seq_feed(s, kTokens, 0), VT_OK);  // an empty feed queues nothing
        CHECK_STATUS(vt_seq_step(s), VT_ERR_INVALID_STATE);
    }
    SECTION("logits before a step and logits(i) without logits_all") {
        CHECK_STATUS(vt_seq_logits(s, -1, &l, &nv), VT_ERR_INVALID_STATE);
        REQUIRE(vt_seq_feed(s, kTokens, 3) == VT_OK);
        REQUIRE(vt_seq_step(s) == VT_OK);
        for (int32_t i : {0, 1, 2, 3, 100}) {
            INFO("i = " << i);
            CHECK_STATUS(vt_seq_logits(s, i, &l, &nv), VT_ERR_INVALID_ARGUMENT);
        }
        CHECK_STATUS(vt_seq_logits(s, -5, &l, &nv), VT_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(vt_seq_logits(s, -1, &l, &nv), VT_OK);
    }
    SECTION("reset then reuse") {
        REQUIRE(vt_seq_feed(s, kTokens, 5) == VT_OK);
        REQUIRE(vt_seq_step(s) == VT_OK);
        REQUIRE(vt_seq_logits(s, -1, &l, &nv) == VT_OK);
        const std::vector<float> first(l, l + nv);
        REQUIRE(vt_seq_feed(s, kTokens, 2) == VT_OK);
        CHECK_STATUS(vt_seq_reset(s), VT_OK);
        CHECK(vt_seq_n_past(s, &n_past) == VT_OK);
        CHECK(n_past == 0);
        CHECK_STATUS(vt_seq_step(s), VT_ERR_INVALID_STATE);  // the queue went too
        CHECK_STATUS(vt_seq_feed(s, kTokens, 8), VT_OK);     // the whole context is free again
        REQUIRE(vt_seq_step(s) == VT_OK);
        CHECK_STATUS(vt_seq_reset(s), VT_OK);
        REQUIRE(vt_seq_feed(s, kTokens, 5) == VT_OK);
        REQUIRE(vt_seq_step(s) == VT_OK);
        REQUIRE(vt_seq_logits(s, -1, &l, &nv) == VT_OK);
        CHECK(std::memcmp(first.data(), l, nv * sizeof(float)) == 0);
    }
}

TEST_CASE("abi-model: tokenizer errors", "[abi][model][errors]") {
    ModelPtr m = load_ok();
    const vt_tokenizer *tok = nullptr;
    REQUIRE(vt_model_tokenizer(m.get(), &tok) == VT_OK);
    vt_token toks[64];
    size_t n = 0;

    SECTION("invalid UTF-8 names the offset") {
        const char bad[] = "hello \xff\xfe";
        CHECK_STATUS(vt_tokenize(tok, bad, sizeof bad - 1, VT_TOKENIZE_NONE, toks, 64, &n), VT_ERR_INVALID_UTF8);
        CHECK(contains(last_error(), "offset 6"));
        const char cut[] = "ab\xe2\x82";  // a 3-byte sequence cut short
        CHECK_STATUS(vt_tokenize(tok, cut, sizeof cut - 1, VT_TOKENIZE_NONE, toks, 64, &n), VT_ERR_INVALID_UTF8);
        CHECK(contains(last_error(), "offset 2"));
        const char overlong[] = "\xc0\xaf";
        CHECK_STATUS(vt_tokenize(tok, overlong, 2, VT_TOKENIZE_NONE, toks, 64, &n), VT_ERR_INVALID_UTF8);
        const char surrogate[] = "x\xed\xa0\x80";
        CHECK_STATUS(vt_tokenize(tok, surrogate, 4, VT_TOKENIZE_NONE, toks, 64, &n), VT_ERR_INVALID_UTF8);
        CHECK(contains(last_error(), "offset 1"));
    }
    SECTION("buffer too small reports the needed count") {
        const char text[] = "abc xyz";  // no merges apply: one token per byte
        CHECK_STATUS(vt_tokenize(tok, text, 7, VT_TOKENIZE_NONE, toks, 3, &n), VT_ERR_BUFFER_TOO_SMALL);
        CHECK(n == 7);
        CHECK_STATUS(vt_tokenize(tok, text, 7, VT_TOKENIZE_NONE, nullptr, 0, &n), VT_ERR_BUFFER_TOO_SMALL);
        CHECK(n == 7);
        CHECK_STATUS(vt_tokenize(tok, text, 7, VT_TOKENIZE_NONE, toks, 7, &n), VT_OK);
        CHECK(n == 7);
        CHECK(toks[0] == 'a');
        CHECK(toks[3] == ' ');  // "Ġ" (id = byte value): no merge "Ġ x"
        CHECK(toks[4] == 'x');
    }
    SECTION("piece and detokenize buffers") {
        char buf[4];
        size_t needed = 0;
        const vt_token the[1] = {258};
        CHECK_STATUS(vt_token_to_piece(tok, 258, false, buf, sizeof buf, &needed), VT_ERR_BUFFER_TOO_SMALL);
        CHECK(needed == 4);  // " the"
        CHECK(std::string(buf) == " th");  // NUL-terminated prefix
        CHECK_STATUS(vt_detokenize(tok, the, 1, false, buf, 2, &needed), VT_ERR_BUFFER_TOO_SMALL);
        CHECK(needed == 4);
        CHECK_STATUS(vt_token_to_piece(tok, 261, false, buf, sizeof buf, &needed), VT_ERR_INVALID_ARGUMENT);
    }
}

TEST_CASE("abi-model: a tokenizer loads alone and matches the model's", "[abi][tokenizer]") {
    const std::vector<uint8_t> bytes = vt::test::tiny_llama_gguf({});
    TempFile f(bytes);
    vt_model *m = nullptr;
    REQUIRE(vt_model_load(f.path.string().c_str(), nullptr, &m) == VT_OK);
    ModelPtr model(m);
    const vt_tokenizer *from_model = nullptr;
    REQUIRE(vt_model_tokenizer(model.get(), &from_model) == VT_OK);
    vt_tokenizer *alone = nullptr;
    REQUIRE(vt_tokenizer_load(f.path.string().c_str(), &alone) == VT_OK);
    REQUIRE(alone != nullptr);

    const std::string text = "the thing in the hen";
    vt_token a[64], b[64];
    size_t na = 0, nb = 0;
    REQUIRE(vt_tokenize(from_model, text.data(), text.size(), VT_TOKENIZE_NONE, a, 64, &na) == VT_OK);
    REQUIRE(vt_tokenize(alone, text.data(), text.size(), VT_TOKENIZE_NONE, b, 64, &nb) == VT_OK);
    REQUIRE(na == nb);
    CHECK(std::equal(a, a + na, b));
    CHECK(vt_tokenizer_n_vocab(alone) == vt_tokenizer_n_vocab(from_model));
    char buf[256];
    size_t need = 0;
    REQUIRE(vt_detokenize(alone, b, nb, false, buf, sizeof buf, &need) == VT_OK);
    CHECK(std::string(buf, need) == text);

    vt_tokenizer_destroy(const_cast<vt_tokenizer *>(from_model));  // not owned: a no-op
    CHECK(vt_tokenize(from_model, "he", 2, VT_TOKENIZE_NONE, a, 64, &na) == VT_OK);
    vt_tokenizer_destroy(alone);
    vt_tokenizer_destroy(nullptr);

    vt_tokenizer *bad = nullptr;
    CHECK(vt_tokenizer_load("/nonexistent/vocab.gguf", &bad) == VT_ERR_IO);
    CHECK(bad == nullptr);
    CHECK(vt_tokenizer_load(nullptr, &bad) == VT_ERR_INVALID_ARGUMENT);
}
