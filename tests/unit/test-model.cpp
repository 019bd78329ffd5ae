// Model-level behaviour on a tiny random-weight Llama written by
// tests/common/gguf-writer.h (no downloaded model needed), through the
// internal C++ API (vt::Model, vt::Context, vt::Sequence; statuses are the
// vt::Error of each failure). The same cases through the public C ABI
// (vt_model_load, vt_seq_*, vt_tokenize, vt_last_error) are in
// tests/abi/test-abi-model.cpp.
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <new>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <unistd.h>
#include <algorithm>
#include <vector>

#include "common/gguf-writer.h"
#include "common/temp-file.h"
#include "core/error.h"
#include "model/model.h"
#include "runner/sequence.h"

namespace fs = std::filesystem;

// Counts C++ heap allocations of the whole test program (see the decode-loop
// case). The kernels' scratch and arena come from aligned_alloc and grow
// geometrically; what this catches is per-step vectors, strings and maps.
static std::atomic<size_t> g_news{0};
void *operator new(size_t n) {
    g_news.fetch_add(1, std::memory_order_relaxed);
    if (void *p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, size_t) noexcept { std::free(p); }
using vt::test::TinyLlama;

namespace {

using vt::test::TempFile;

std::unique_ptr<vt::Model> load(const TinyLlama &o = {}, const vt::Model::Progress &progress = nullptr) {
    TempFile f(vt::test::tiny_llama_gguf(o));
    return vt::Model::load(f.path.string(), true, progress);  // the mapping outlives the unlinked file
}

// Status and message of a throwing call (VT_OK and "" if it does not throw).
vt_status status_of(const std::function<void()> &f, std::string *msg = nullptr) {
    try {
        f();
    } catch (const vt::Error &e) {
        if (msg) *msg = e.what();
        return e.status();
    }
    if (msg) msg->clear();
    return VT_OK;
}

vt_status load_status(const TinyLlama &o, std::string *msg) {
    return status_of([&] { load(o); }, msg);
}

bool contains(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

// Logits of every token of `tokens`, evaluated in one step (logits_all).
std::vector<float> logits_batched(const vt::Model &m, const std::vector<int32_t> &tokens, uint32_t n_threads,
                                  uint32_t n_batch = 512) {
    vt::Context ctx(m, "cpu", n_threads, n_batch);
    vt::Sequence seq(ctx, 64, true);
    seq.feed(tokens.data(), tokens.size());
    seq.step();
    std::vector<float> out;
    for (size_t i = 0; i < tokens.size(); ++i) {
        const float *l = seq.logits((int32_t)i);
        out.insert(out.end(), l, l + m.hparams.n_vocab);
    }
    return out;
}

// The same, feeding and stepping one token at a time.
std::vector<float> logits_one_by_one(const vt::Model &m, const std::vector<int32_t> &tokens, uint32_t n_threads) {
    vt::Context ctx(m, "cpu", n_threads, 512);
    vt::Sequence seq(ctx, 64, false);
    std::vector<float> out;
    for (int32_t t : tokens) {
        seq.feed(&t, 1);
        seq.step();
        const float *l = seq.logits(-1);
        out.insert(out.end(), l, l + m.hparams.n_vocab);
    }
    return out;
}

// Index of the first differing float (bitwise), or -1.
long first_difference(const std::vector<float> &a, const std::vector<float> &b) {
    if (a.size() != b.size()) return 0;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return (long)i;
    return -1;
}

const std::vector<int32_t> kTokens = {260, 72, 101, 108, 108, 111, 256, 258, 32, 119, 111, 114, 108, 100, 259, 33};

} // namespace

TEST_CASE("model: the tiny Llama loads with the right hyper-parameters", "[model]") {
    auto m = load();
    CHECK(m->arch_name() == "llama");
    const vt::Hparams &hp = m->hparams;
    CHECK(hp.n_vocab == 261);
    CHECK(hp.n_ctx_train == 256);
    CHECK(hp.n_embd == 64);
    CHECK(hp.n_layer == 2);
    CHECK(hp.n_head == 4);
    CHECK(hp.n_head_kv == 2);
    CHECK(hp.head_dim == 16);
    CHECK(hp.n_ff == 128);
    CHECK(hp.n_rot == 16);
    CHECK(hp.rope_freq_base == 10000.0f);
    CHECK(hp.norm_eps == 1e-5f);
    CHECK(m->tokenizer().n_vocab() == 261);
    CHECK(m->tokenizer().bos() == 260);
    CHECK(m->tokenizer().eos() == 260);
    CHECK(m->tokenizer().is_eog(260));

    uint64_t n_params = 0;
    size_t n_bytes = 0;
    for (const auto &t : vt::test::tiny_llama_tensors({})) {
        uint64_t n = 1;
        for (uint64_t d : t.ne) n *= d;
        n_params += n;
        n_bytes += vt::test::tensor_nbytes(t.type, t.ne[0], n / t.ne[0]);
    }
    CHECK(m->n_params == n_params);
    CHECK(m->size_bytes == n_bytes);
    CHECK(m->gguf().find_tensor("output.weight") == nullptr);  // tied

    // The tokenizer is the byte-level one: " the" merges to one token.
    CHECK(m->tokenizer().encode(" the", false, false) == std::vector<int32_t>{258});
    CHECK(m->tokenizer().encode("<|endoftext|>", false, true) == std::vector<int32_t>{260});
}

TEST_CASE("model: a forward pass gives finite logits of n_vocab", "[model]") {
    auto m = load();
    vt::Context ctx(*m, "cpu", 2, 512);
    vt::Sequence seq(ctx, 32, false);
    seq.feed(kTokens.data(), 4);
    seq.step();
    CHECK(seq.n_past() == 4);
    const float *l = seq.logits(-1);
    REQUIRE(l != nullptr);
    size_t n_finite = 0;
    float lo = l[0], hi = l[0];
    for (uint32_t i = 0; i < m->hparams.n_vocab; ++i) {
        n_finite += std::isfinite(l[i]) ? 1 : 0;
        lo = std::fmin(lo, l[i]);
        hi = std::fmax(hi, l[i]);
    }
    CHECK(n_finite == m->hparams.n_vocab);
    CHECK(hi > lo);  // not a constant vector
}

TEST_CASE("model: multi-token-prediction blocks after the layers are not run; a file of those alone is refused",
          "[model]") {
    // As llama.cpp's converter writes a Qwen3.5 by default: block_count
    // counts the MTP block, nextn_predict_layers says it is one.
    TinyLlama o;
    o.nextn_layers = 1;
    auto m = load(o);
    CHECK(m->hparams.n_layer == 2);
    CHECK(m->block_count() == 2);
    CHECK(m->nextn_layers() == 1);
    CHECK(first_difference(logits_batched(*m, kTokens, 1), logits_batched(*load(), kTokens, 1)) == -1);
    // llama.cpp's --mtp export: the draft head alone.
    o.n_layer = 0;
    o.nextn_layers = 2;
    std::string msg;
    CHECK(load_status(o, &msg) == VT_ERR_FORMAT);
    CHECK(contains(msg, "multi-token-prediction"));
}

TEST_CASE("model: an untied output and F16 embeddings load and run", "[model]") {
    TinyLlama o;
    o.tied = false;
    o.type_of["token_embd.weight"] = vt::test::kF16;
    auto m = load(o);
    REQUIRE(m->gguf().find_tensor("output.weight") != nullptr);
    vt::Context ctx(*m, "cpu", 1, 512);
    vt::Sequence seq(ctx, 32, false);
    seq.feed(kTokens.data(), 3);
    seq.step();
    const float *l = seq.logits(-1);
    for (uint32_t i = 0; i < m->hparams.n_vocab; ++i) REQUIRE(std::isfinite(l[i]));
}

TEST_CASE("model: logits are bit-identical across threads and batching", "[model][determinism]") {
    auto m = load();
    const std::vector<float> ref = logits_batched(*m, kTokens, 1);
    for (uint32_t nt : {2u, 3u}) {
        INFO("threads " << nt << ", one step");
        CHECK(first_difference(ref, logits_batched(*m, kTokens, nt)) == -1);
    }
    for (uint32_t nt : {1u, 2u, 3u}) {
        INFO("threads " << nt << ", one token per step; first differing float index (n_vocab 261)");
        CHECK(first_difference(ref, logits_one_by_one(*m, kTokens, nt)) == -1);
    }
    INFO("n_batch 5: one step evaluated in chunks of 5");
    CHECK(first_difference(ref, logits_batched(*m, kTokens, 2, 5)) == -1);
}

TEST_CASE("model: bad files fail with the right status and message", "[model][errors]") {
    std::string msg;
    SECTION("unknown architecture") {
        TinyLlama o;
        o.arch = "mamba9";
        CHECK(load_status(o, &msg) == VT_ERR_UNSUPPORTED);
        CHECK(contains(msg, "mamba9"));
        CHECK(contains(msg, "llama"));  // lists the supported ones
    }
    SECTION("no general.architecture") {
        TinyLlama o;
        o.write_arch_key = false;
        CHECK(load_status(o, &msg) == VT_ERR_FORMAT);
        CHECK(contains(msg, "general.architecture"));
    }
    SECTION("a ggml-only tensor type (I8, id 24)") {
        TinyLlama o;
        o.type_of["blk.0.ffn_up.weight"] = vt::test::kI8;
        CHECK(load_status(o, &msg) == VT_ERR_UNSUPPORTED);
        CHECK(!msg.empty());
        CHECK((contains(msg, "24") || contains(msg, "I8")));
    }
    SECTION("an unsupported norm type") {
        TinyLlama o;
        o.type_of["blk.1.attn_norm.weight"] = vt::test::kF16;
        CHECK(load_status(o, &msg) == VT_ERR_UNSUPPORTED);
        CHECK(contains(msg, "norm"));
    }
    SECTION("a missing tensor") {
        TinyLlama o;
        o.drop.insert("blk.1.ffn_down.weight");
        CHECK(load_status(o, &msg) == VT_ERR_FORMAT);
        CHECK(contains(msg, "blk.1.ffn_down.weight"));
    }
    SECTION("no token embedding") {
        TinyLlama o;
        o.drop.insert("token_embd.weight");
        CHECK(load_status(o, &msg) == VT_ERR_FORMAT);
        CHECK(contains(msg, "token_embd.weight"));
    }
    SECTION("a wrong shape") {
        TinyLlama o;
        o.shape_of["blk.0.attn_k.weight"] = {64, 64};  // 2 KV heads of 16 want 32 rows
        CHECK(load_status(o, &msg) == VT_ERR_FORMAT);
        CHECK(contains(msg, "blk.0.attn_k.weight"));
        CHECK(contains(msg, "64"));
        CHECK(contains(msg, "32"));
    }
    SECTION("an extra dimension") {
        TinyLlama o;
        o.shape_of["output_norm.weight"] = {64, 1, 2};
        CHECK(load_status(o, &msg) == VT_ERR_FORMAT);
        CHECK(contains(msg, "output_norm.weight"));
    }
    SECTION("vocabulary larger than the embedding") {
        TinyLlama o;
        o.n_extra_tokens = 3;
        CHECK(load_status(o, &msg) == VT_ERR_FORMAT);
        CHECK(contains(msg, "261"));
        CHECK(contains(msg, "264"));
    }
    SECTION("untied output with fewer rows than the vocabulary") {
        TinyLlama o;
        o.tied = false;
        o.shape_of["output.weight"] = {64, 200};
        CHECK(load_status(o, &msg) == VT_ERR_FORMAT);
        CHECK(contains(msg, "output.weight"));
    }
    SECTION("heads that do not divide") {
        TinyLlama o;
        o.n_head_kv = 3;
        CHECK(load_status(o, &msg) == VT_ERR_FORMAT);
        CHECK(contains(msg, "head"));
    }
    SECTION("progress returning false cancels") {
        int calls = 0;
        const vt_status st = status_of([&] { load({}, [&](float) { return ++calls < 2; }); }, &msg);
        CHECK(st == VT_ERR_CANCELLED);
        CHECK(contains(msg, "cancel"));
        CHECK(calls == 2);
    }
    INFO(msg);
    CHECK(!msg.empty());
}

TEST_CASE("model: progress reports 0 to 1 in order", "[model]") {
    std::vector<float> seen;
    auto m = load({}, [&](float p) {
        seen.push_back(p);
        return true;
    });
    REQUIRE(seen.size() >= 2);
    CHECK(seen.front() == 0.0f);
    CHECK(seen.back() == 1.0f);
    for (size_t i = 1; i < seen.size(); ++i) CHECK(seen[i] >= seen[i - 1]);
}

TEST_CASE("model: sequence misuse fails cleanly and leaves it usable", "[model][errors]") {
    auto m = load();
    vt::Context ctx(*m, "cpu", 2, 512);
    vt::Sequence seq(ctx, 8, false);
    std::string msg;

    SECTION("more tokens than n_ctx: CONTEXT_FULL, nothing queued") {
        CHECK(status_of([&] { seq.feed(kTokens.data(), 9); }, &msg) == VT_ERR_CONTEXT_FULL);
        CHECK(contains(msg, "8"));
        CHECK(status_of([&] { seq.step(); }) == VT_ERR_INVALID_STATE);  // the queue stayed empty
        CHECK(status_of([&] { seq.feed(kTokens.data(), 8); }) == VT_OK);
        CHECK(status_of([&] { seq.step(); }) == VT_OK);
        CHECK(seq.n_past() == 8);
        CHECK(status_of([&] { seq.feed(kTokens.data(), 1); }, &msg) == VT_ERR_CONTEXT_FULL);
    }
    SECTION("queued plus held past n_ctx") {
        CHECK(status_of([&] { seq.feed(kTokens.data(), 5); }) == VT_OK);
        CHECK(status_of([&] { seq.feed(kTokens.data(), 4); }, &msg) == VT_ERR_CONTEXT_FULL);
        CHECK(status_of([&] { seq.feed(kTokens.data(), 3); }) == VT_OK);
        CHECK(status_of([&] { seq.step(); }) == VT_OK);
        CHECK(seq.n_past() == 8);
    }
    SECTION("token ids outside the vocabulary") {
        for (int32_t bad : {261, -1, 1 << 30}) {
            const int32_t toks[3] = {1, bad, 2};
            CHECK(status_of([&] { seq.feed(toks, 3); }, &msg) == VT_ERR_INVALID_ARGUMENT);
            CHECK(contains(msg, std::to_string(bad)));
        }
        CHECK(status_of([&] { seq.step(); }) == VT_ERR_INVALID_STATE);  // nothing was queued
    }
    SECTION("step with nothing queued") {
        CHECK(status_of([&] { seq.step(); }, &msg) == VT_ERR_INVALID_STATE);
        CHECK(contains(msg, "queued"));
    }
    SECTION("logits before any step") {
        CHECK(status_of([&] { seq.logits(-1); }, &msg) == VT_ERR_INVALID_STATE);
    }
    SECTION("logits(i >= 0) without logits_all") {
        seq.feed(kTokens.data(), 3);
        seq.step();
        for (int32_t i : {0, 2, 3}) {
            CHECK(status_of([&] { seq.logits(i); }, &msg) == VT_ERR_INVALID_ARGUMENT);
            CHECK(contains(msg, "logits_all"));
        }
        CHECK(status_of([&] { seq.logits(-2); }) != VT_OK);
        CHECK(status_of([&] { seq.logits(-1); }) == VT_OK);
    }
    SECTION("reset then reuse gives the same logits") {
        seq.feed(kTokens.data(), 5);
        seq.step();
        const std::vector<float> first(seq.logits(-1), seq.logits(-1) + m->hparams.n_vocab);
        seq.feed(kTokens.data(), 3);  // queued, then forgotten by reset
        seq.reset();
        CHECK(seq.n_past() == 0);
        CHECK(status_of([&] { seq.logits(-1); }) == VT_ERR_INVALID_STATE);
        CHECK(status_of([&] { seq.step(); }) == VT_ERR_INVALID_STATE);
        seq.feed(kTokens.data(), 5);
        seq.step();
        const std::vector<float> second(seq.logits(-1), seq.logits(-1) + m->hparams.n_vocab);
        CHECK(first_difference(first, second) == -1);
        CHECK(seq.n_past() == 5);
    }
}

TEST_CASE("model: logits_all index range", "[model][errors]") {
    auto m = load();
    vt::Context ctx(*m, "cpu", 1, 512);
    vt::Sequence seq(ctx, 16, true);
    seq.feed(kTokens.data(), 4);
    seq.step();
    std::string msg;
    CHECK(status_of([&] { seq.logits(3); }) == VT_OK);
    CHECK(status_of([&] { seq.logits(4); }, &msg) == VT_ERR_INVALID_ARGUMENT);
    CHECK(contains(msg, "4"));
    CHECK(status_of([&] { seq.logits(-2); }) == VT_ERR_INVALID_ARGUMENT);
    CHECK(seq.logits(-1) == seq.logits(3));
}

TEST_CASE("model: tokenizer rejects invalid UTF-8 with the offset", "[model][errors]") {
    auto m = load();
    std::string msg;
    const std::string bad = std::string("ab") + "\xff\xfe";
    CHECK(status_of([&] { m->tokenizer().encode(bad, false, false); }, &msg) == VT_ERR_INVALID_UTF8);
    CHECK(contains(msg, "offset 2"));
}

TEST_CASE("model: every cut of the tiny model fails with VT_ERR_FORMAT", "[model][errors]") {
    const std::vector<uint8_t> full = vt::test::tiny_llama_gguf();
    size_t failures = 0, n = 0;
    // Densely through the header and metadata, sparsely through the weights.
    for (size_t len = 0; len < full.size(); len += len < 4096 ? 7 : 509) {
        std::vector<uint8_t> cut(full.begin(), full.begin() + (ptrdiff_t)len);
        TempFile f(cut);
        std::string msg;
        const vt_status st = status_of([&] { vt::Model::load(f.path.string(), true, nullptr); }, &msg);
        ++n;
        if (st != VT_ERR_FORMAT || msg.empty()) {
            ++failures;
            INFO("cut at " << len << " of " << full.size() << ": status " << (int)st << ": " << msg);
            CHECK(st == VT_ERR_FORMAT);
        }
    }
    CHECK(n > 600);
    CHECK(failures == 0);
}

TEST_CASE("model: the decode loop makes no C++ heap allocation", "[model][perf]") {
    auto m = load();
    vt::Context ctx(*m, "cpu", 2, 512);
    vt::Sequence seq(ctx, 64, false);
    seq.feed(kTokens.data(), 4);
    seq.step();
    int32_t t = 72;
    for (int i = 0; i < 2; ++i) {  // warm-up: graph vectors reach their size
        seq.feed(&t, 1);
        seq.step();
    }
    const size_t before = g_news.load();
    for (int i = 0; i < 20; ++i) {
        seq.feed(&t, 1);
        seq.step();
        t = (int32_t)(std::max_element(seq.logits(-1), seq.logits(-1) + m->hparams.n_vocab) - seq.logits(-1));
    }
    CHECK(g_news.load() - before == 0);
}
