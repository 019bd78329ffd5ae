// Damaged model files through vt_model_load: a tiny GGUF (tests/common/
// gguf-writer.h, ~17 KB) cut short at every byte offset, and 10,000 copies
// with 1 to 8 bytes changed (seeded, mostly in the header and tensor infos
// where the structure is). Each load must either fail with a file status
// (VT_ERR_FORMAT, VT_ERR_UNSUPPORTED, VT_ERR_OUT_OF_MEMORY) and a message, or
// succeed; a model that loads is run for one forward pass now and then and
// destroyed. A crash, a sanitizer report or VT_ERR_INTERNAL (an exception
// that was not a vt::Error) is a bug. Then the structural cases named
// explicitly: tensor offsets out of range or unaligned, shapes whose element
// count overflows, counts larger than the file, bad alignments.
// The same for a tiny Hugging Face folder (tests/models/tiny/llama):
// model.safetensors and config.json cut short at every offset.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "common/gguf-writer.h"
#include "common/temp-file.h"
#include "common/vt-handles.h"
#include "vt/vt.h"

namespace fs = std::filesystem;
using vt::test::ContextPtr;
using vt::test::GT;
using vt::test::ModelPtr;
using vt::test::SeqPtr;
using vt::test::TinyLlama;
using vt::test::Writer;

namespace {

// The smallest tiny Llama the writer makes (~17 KB): one layer, n_embd 32
// (one quantized block per row), Q4_0 embedding (261 rows).
TinyLlama smallest() {
    TinyLlama o;
    o.n_embd = 32;
    o.n_layer = 1;
    o.n_head = 2;
    o.n_head_kv = 1;
    o.n_ff = 32;
    o.n_ctx = 64;
    // Q4_0 where it saves most; Q8_0, F16 and F32 stay for the other readers.
    for (const char *t : {"token_embd.weight", "blk.0.attn_v.weight", "blk.0.ffn_gate.weight", "blk.0.ffn_up.weight"})
        o.type_of[t] = vt::test::kQ4_0;
    o.type_of["blk.0.attn_k.weight"] = vt::test::kF32;
    return o;
}

struct Tally {
    size_t ok = 0, forward = 0;
    std::map<int, size_t> by_status;
    std::vector<std::string> bad;  // loads that gave a status no file should give
};

// One forward pass over three tokens, through the public ABI.
void forward(const vt_model *m, Tally &t) {
    vt_context_params cp;
    vt_context_params_init(&cp);
    cp.n_threads = 1;
    vt_context *c = nullptr;
    if (vt_context_create(m, &cp, &c) != VT_OK) return;
    ContextPtr ctx(c);
    vt_seq_params sp;
    vt_seq_params_init(&sp);
    sp.n_ctx = 8;
    vt_seq *s = nullptr;
    if (vt_seq_create(c, &sp, &s) != VT_OK) return;
    SeqPtr seq(s);
    const vt_token toks[3] = {1, 2, 3};
    if (vt_seq_feed(s, toks, 3) != VT_OK || vt_seq_step(s) != VT_OK) return;
    const float *logits = nullptr;
    size_t n_vocab = 0;
    if (vt_seq_logits(s, -1, &logits, &n_vocab) == VT_OK && logits && n_vocab) ++t.forward;
}

// Loads path; records the outcome. run_forward: also one forward pass.
vt_status load_once(const std::string &path, const std::string &what, Tally &t, bool run_forward) {
    vt_model *m = nullptr;
    const vt_status st = vt_model_load(path.c_str(), nullptr, &m);
    ModelPtr model(m);
    ++t.by_status[st];
    if (st == VT_OK) {
        ++t.ok;
        if (!m) t.bad.push_back(what + ": VT_OK without a model");
        vt_model_info info;
        std::memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        if (m && vt_model_get_info(m, &info) != VT_OK) t.bad.push_back(what + ": vt_model_get_info failed");
        if (m && run_forward) forward(m, t);
        return st;
    }
    if (m) t.bad.push_back(what + ": an error with a model");
    const char *msg = vt_last_error();
    if (st != VT_ERR_FORMAT && st != VT_ERR_UNSUPPORTED && st != VT_ERR_OUT_OF_MEMORY)
        t.bad.push_back(what + ": " + vt_status_str(st) + ": " + (msg ? msg : ""));
    else if (!msg || !*msg)
        t.bad.push_back(what + ": " + vt_status_str(st) + " without a message");
    return st;
}

void write_bytes(const fs::path &p, const std::vector<uint8_t> &b, size_t n) {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char *>(b.data()), (std::streamsize)n);
    REQUIRE(f.good());
}

std::vector<uint8_t> read_bytes(const fs::path &p) {
    std::ifstream f(p, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

// Prints the outcomes (always: the numbers say what the sweep reached), and
// the first bad ones with the failure.
void report(const char *what, const Tally &t) {
    std::string counts;
    for (const auto &[st, n] : t.by_status) counts += std::string(" ") + vt_status_str((vt_status)st) + "=" + std::to_string(n);
    WARN(what << ":" << counts << ", forward passes " << t.forward);
    for (size_t i = 0; i < t.bad.size() && i < 20; ++i) UNSCOPED_INFO(t.bad[i]);
}

// Where the structure of a GGUF ends: the first tensor data byte (the data
// section's start), found from the writer's layout (the file's own
// general.alignment of 32 after the last tensor info).
size_t header_end(const std::vector<uint8_t> &b, const std::string &last_tensor) {
    const std::string needle = last_tensor;
    auto it = std::search(b.begin(), b.end(), needle.begin(), needle.end());
    REQUIRE(it != b.end());
    size_t at = size_t(it - b.begin()) + needle.size();
    uint32_t n_dims;
    std::memcpy(&n_dims, &b[at], 4);
    at += 4 + 8 * n_dims + 4 + 8;
    return (at + 31) / 32 * 32;
}

// Offset of tensor `name`'s info fields after its name (n_dims first).
size_t tensor_info_at(const std::vector<uint8_t> &b, const std::string &name) {
    std::vector<uint8_t> needle(8);
    const uint64_t len = name.size();
    std::memcpy(needle.data(), &len, 8);
    needle.insert(needle.end(), name.begin(), name.end());
    auto it = std::search(b.begin(), b.end(), needle.begin(), needle.end());
    REQUIRE(it != b.end());
    return size_t(it - b.begin()) + needle.size();
}

template <class T> void poke(std::vector<uint8_t> &b, size_t at, T v) { std::memcpy(&b[at], &v, sizeof v); }

} // namespace

TEST_CASE("model-sweep: a tiny GGUF cut short at every byte offset", "[sweep][gguf]") {
    vt_log_set(nullptr, nullptr, VT_LOG_LEVEL_NONE);
    const TinyLlama o = smallest();
    const std::vector<uint8_t> full = vt::test::tiny_llama_gguf(o);
    const size_t data_at = header_end(full, "blk.0.ffn_down.weight");
    INFO("file " << full.size() << " bytes, data section at " << data_at);
    vt::test::TempDir dir;
    const fs::path p = dir.path() / "cut.gguf";

    write_bytes(p, full, full.size());
    Tally whole;
    REQUIRE(load_once(p.string(), "whole file", whole, true) == VT_OK);
    REQUIRE(whole.forward == 1);

    // From the end down: each cut is one truncate() of the same file.
    Tally t;
    for (size_t n = full.size(); n-- > 0;) {
        fs::resize_file(p, n);
        const vt_status st = load_once(p.string(), "cut at " + std::to_string(n), t, false);
        // Every tensor's bytes are needed; only the last one's padding may go.
        if (st == VT_OK && n < data_at) t.bad.push_back("cut at " + std::to_string(n) + " (in the header) loaded");
    }
    report(("cut at each of " + std::to_string(full.size()) + " offsets").c_str(), t);
    CHECK(t.bad.empty());
    CHECK(t.by_status[VT_ERR_FORMAT] >= data_at);
}

TEST_CASE("model-sweep: 10,000 tiny GGUFs with 1 to 8 bytes changed", "[sweep][gguf]") {
    vt_log_set(nullptr, nullptr, VT_LOG_LEVEL_NONE);
    const std::vector<uint8_t> full = vt::test::tiny_llama_gguf(smallest());
    const size_t data_at = header_end(full, "blk.0.ffn_down.weight");
    vt::test::TempDir dir;
    const fs::path p = dir.path() / "flip.gguf";
    vt::test::Rng rng(20261203);
    Tally t;
    // Values that make counts, lengths, types and offsets interesting.
    const uint8_t special[] = {0x00, 0xff, 0x7f, 0x80, 0x01, 0x20, 0x1f, 0x40};
    for (int i = 0; i < 10000; ++i) {
        std::vector<uint8_t> b = full;
        const int n_flips = 1 + int(rng.next() % 8);
        std::string what = "mutant " + std::to_string(i) + ":";
        for (int k = 0; k < n_flips; ++k) {
            // 3 in 4 in the header and tensor infos, the rest anywhere.
            const size_t at = rng.next() % 4 ? rng.next() % data_at : rng.next() % b.size();
            const uint64_t r = rng.next();
            b[at] = r % 3 ? uint8_t(b[at] ^ (1u << ((r >> 8) % 8)))
                          : r % 2 ? special[(r >> 8) % sizeof special] : uint8_t(r >> 16);
            what += " @" + std::to_string(at) + "=" + std::to_string(b[at]);
        }
        write_bytes(p, b, b.size());
        load_once(p.string(), what, t, /*run_forward=*/t.ok % 16 == 0);
    }
    report("10,000 mutants", t);
    CHECK(t.bad.empty());
    CHECK(t.ok > 0);             // some changes (weights, names of optional keys) load
    CHECK(t.ok < 10000);         // and most do not
}

TEST_CASE("model-sweep: structural damage named explicitly", "[sweep][gguf]") {
    vt_log_set(nullptr, nullptr, VT_LOG_LEVEL_NONE);
    const std::vector<uint8_t> full = vt::test::tiny_llama_gguf(smallest());
    vt::test::TempDir dir;
    const fs::path p = dir.path() / "case.gguf";
    auto expect = [&](const std::vector<uint8_t> &b, vt_status want, const char *part) {
        write_bytes(p, b, b.size());
        vt_model *m = nullptr;
        const vt_status st = vt_model_load(p.string().c_str(), nullptr, &m);
        ModelPtr keep(m);
        INFO(vt_status_str(st) << ": " << vt_last_error());
        CHECK(st == want);
        CHECK(m == nullptr);
        CHECK(std::string(vt_last_error()).find(part) != std::string::npos);
    };
    // tensor info: n_dims u32, ne u64 x n_dims, type u32, offset u64
    const size_t emb = tensor_info_at(full, "token_embd.weight");  // 2 dims
    const size_t emb_off = emb + 4 + 16 + 4;
    SECTION("a tensor offset past the end of the file") {
        for (uint64_t off : {uint64_t(1) << 40, uint64_t(full.size()), UINT64_MAX - 31, UINT64_MAX & ~uint64_t(31)}) {
            std::vector<uint8_t> b = full;
            poke<uint64_t>(b, emb_off, off);
            expect(b, VT_ERR_FORMAT, "token_embd.weight");
        }
    }
    SECTION("a tensor offset not a multiple of the alignment") {
        std::vector<uint8_t> b = full;
        poke<uint64_t>(b, emb_off, 1);
        expect(b, VT_ERR_FORMAT, "alignment");
    }
    SECTION("overlapping tensors") {
        std::vector<uint8_t> b = full;
        const size_t norm = tensor_info_at(full, "output_norm.weight");  // 1 dim
        poke<uint64_t>(b, norm + 4 + 8 + 4, 0);                            // onto token_embd's bytes
        expect(b, VT_ERR_FORMAT, "overlaps");
    }
    SECTION("shapes whose element count overflows 64 bits") {
        for (auto dims : {std::pair<uint64_t, uint64_t>{uint64_t(1) << 32, uint64_t(1) << 32},
                          {uint64_t(1) << 62, 4}, {UINT64_MAX, 1}, {3, UINT64_MAX / 2}}) {
            std::vector<uint8_t> b = full;
            poke<uint64_t>(b, emb + 4, dims.first);
            poke<uint64_t>(b, emb + 12, dims.second);
            expect(b, VT_ERR_FORMAT, "token_embd.weight");
        }
    }
    SECTION("a byte size that overflows (the element count fits, times 4 bytes it does not)") {
        std::vector<uint8_t> b = full;
        poke<uint64_t>(b, emb + 4, uint64_t(1) << 31);
        poke<uint64_t>(b, emb + 12, uint64_t(1) << 31);
        poke<uint32_t>(b, emb + 4 + 16, vt::test::kF32);
        expect(b, VT_ERR_FORMAT, "byte size overflows");
    }
    SECTION("a dimension of 0 and too many dimensions") {
        std::vector<uint8_t> b = full;
        poke<uint64_t>(b, emb + 4, 0);
        expect(b, VT_ERR_FORMAT, "dimension");
        b = full;
        poke<uint32_t>(b, emb, 5);
        expect(b, VT_ERR_FORMAT, "dimensions");
    }
    SECTION("counts larger than the file") {
        for (size_t field : {size_t(8), size_t(16)}) {  // tensor count, kv count
            for (uint64_t n : {uint64_t(full.size()), uint64_t(1) << 40, UINT64_MAX}) {
                std::vector<uint8_t> b = full;
                poke<uint64_t>(b, field, n);
                expect(b, VT_ERR_FORMAT, "count");
            }
        }
        // The token array's length (u64 after its element type) and a key's length.
        const std::string key = "tokenizer.ggml.tokens";
        auto it = std::search(full.begin(), full.end(), key.begin(), key.end());
        REQUIRE(it != full.end());
        const size_t arr_n = size_t(it - full.begin()) + key.size() + 4 + 4;
        for (uint64_t n : {uint64_t(full.size()), uint64_t(1) << 40, UINT64_MAX}) {
            std::vector<uint8_t> b = full;
            poke<uint64_t>(b, arr_n, n);
            expect(b, VT_ERR_FORMAT, "array length");
            b = full;
            poke<uint64_t>(b, size_t(it - full.begin()) - 8, n);
            expect(b, VT_ERR_FORMAT, "length");
        }
    }
    SECTION("general.alignment 0, not a power of two, of the wrong type") {
        const std::string key = "general.alignment";
        auto it = std::search(full.begin(), full.end(), key.begin(), key.end());
        REQUIRE(it != full.end());
        const size_t type_at = size_t(it - full.begin()) + key.size();
        for (uint32_t a : {0u, 3u, 48u, 0x80000001u}) {
            std::vector<uint8_t> b = full;
            poke<uint32_t>(b, type_at + 4, a);
            expect(b, VT_ERR_FORMAT, "alignment");
        }
        std::vector<uint8_t> b = full;
        poke<uint32_t>(b, type_at, (uint32_t)GT::INT32);
        expect(b, VT_ERR_FORMAT, "alignment");
        // A valid larger alignment moves the data section: the offsets no longer fit.
        b = full;
        poke<uint32_t>(b, type_at + 4, 1u << 20);
        expect(b, VT_ERR_FORMAT, "past the end");
    }
    SECTION("a GGUF header and nothing else") {
        Writer w;
        w.magic().u32(3).u64(0).u64(0);
        expect(w.b, VT_ERR_FORMAT, "");
    }
}

TEST_CASE("model-sweep: a tiny Hugging Face folder with config.json or model.safetensors cut short",
          "[sweep][folder]") {
    vt_log_set(nullptr, nullptr, VT_LOG_LEVEL_NONE);
    const fs::path src = fs::path(VT_SOURCE_ROOT) / "tests" / "models" / "tiny" / "llama";
    if (!fs::exists(src / "model.safetensors")) {
        WARN("no " << src.string() << ": skipped");
        return;
    }
    vt::test::TempDir dir;
    const fs::path d = dir.path();
    for (const char *f : {"config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json"})
        if (fs::exists(src / f)) fs::copy_file(src / f, d / f);
    const std::vector<uint8_t> st = read_bytes(src / "model.safetensors");
    const std::vector<uint8_t> cfg = read_bytes(src / "config.json");
    uint64_t header_len = 0;
    std::memcpy(&header_len, st.data(), 8);
    REQUIRE(header_len < st.size());
    Tally t;
    write_bytes(d / "model.safetensors", st, st.size());
    REQUIRE(load_once(d.string(), "whole folder", t, true) == VT_OK);
    // Every offset of the header; then the tensor bytes, every 509th offset
    // (they are ~1 MB of float32 weights whose cuts all read the same way).
    for (size_t n = st.size(); n-- > 0;) {
        if (n >= 8 + header_len + 64 && n % 509 != 0) continue;
        fs::resize_file(d / "model.safetensors", n);
        if (load_once(d.string(), "safetensors cut at " + std::to_string(n), t, false) == VT_OK)
            t.bad.push_back("safetensors cut at " + std::to_string(n) + " loaded");
    }
    write_bytes(d / "model.safetensors", st, st.size());
    for (size_t n = cfg.size(); n-- > 0;) {
        fs::resize_file(d / "config.json", n);
        load_once(d.string(), "config.json cut at " + std::to_string(n), t, false);
    }
    report("folder cuts", t);
    CHECK(t.bad.empty());
}

// config.json values that load (they shape no tensor) but feed the graph:
// windows, epsilons, rope bases and scalings, softcaps at 0, negative, huge.
// Through vt_model_load and one forward pass: a working model (whatever its
// logits) or a clean status, never a crash.
TEST_CASE("model-sweep: config.json values that reach the forward pass", "[sweep][folder]") {
    vt_log_set(nullptr, nullptr, VT_LOG_LEVEL_NONE);
    const fs::path tiny = fs::path(VT_SOURCE_ROOT) / "tests" / "models" / "tiny";
    if (!fs::exists(tiny / "gemma3" / "model.safetensors")) {
        WARN("no " << tiny.string() << ": skipped");
        return;
    }
    const char *values[] = {"0", "1", "-1", "0.5", "1e-30", "1e30", "1e300", "-1e300", "2147483648", "null", "true"};
    const std::map<std::string, std::vector<std::string>> keys = {
        {"gemma3", {"sliding_window", "rms_norm_eps", "query_pre_attn_scalar", "final_logit_softcapping",
                    "attn_logit_softcapping", "max_position_embeddings"}},
        {"mistral", {"sliding_window", "rope_theta", "rms_norm_eps"}},
        {"llama", {"rms_norm_eps", "max_position_embeddings"}},
        {"qwen3_moe", {"num_experts_per_tok", "norm_topk_prob", "rms_norm_eps"}},
        {"deepseek_v3", {"routed_scaling_factor", "n_group", "topk_group", "num_experts_per_tok"}},
    };
    Tally t;
    for (const auto &[name, ks] : keys) {
        const fs::path src = tiny / name;
        std::ifstream in(src / "config.json");
        const std::string cfg((std::istreambuf_iterator<char>(in)), {});
        vt::test::TempDir dir;
        for (const char *f : {"tokenizer.json", "tokenizer_config.json", "generation_config.json", "model.safetensors"})
            if (fs::exists(src / f)) fs::create_symlink(src / f, dir.path() / f);
        for (const std::string &k : ks) {
            for (const char *v : values) {
                // The key first in the object: a later duplicate would win in nlohmann's
                // parse, so drop the original one by renaming it.
                std::string c = cfg;
                const std::string quoted = "\"" + k + "\"";
                if (size_t at = c.find(quoted); at != std::string::npos) c.replace(at, quoted.size(), "\"_was_" + k + "\"");
                c.insert(c.find('{') + 1, "\n  " + quoted + ": " + v + ",");
                std::vector<uint8_t> bytes(c.begin(), c.end());
                write_bytes(dir.path() / "config.json", bytes, bytes.size());
                load_once(dir.path().string(), name + " " + k + "=" + v, t, /*run_forward=*/true);
            }
        }
    }
    report("config values", t);
    CHECK(t.bad.empty());
    CHECK(t.ok > 0);
}
