// Test helper, header-only: a little-endian GGUF byte writer, and a builder of
// a complete tiny Llama model (random weights from a fixed seed, a byte-level
// GPT-2 tokenizer) with knobs that produce bad variants for error tests.
// Needs nothing from lib/, so helper executables can use it standalone.
//
// The tiny model (defaults of TinyLlama):
//   general.architecture "llama", general.alignment 32;
//   llama.*: n_embd 64, 2 layers, 4 heads, 2 KV heads, n_ff 128, context 256,
//            rope base 10000, rms eps 1e-5;
//   tokenizer "gpt2" / pre "gpt-2": ids 0..255 are the GPT-2 byte-level pieces
//            of bytes 0..255 (id == byte value), then the merged tokens
//            "Ġt", "he", "Ġthe", "in" (256..259), then <|endoftext|> (260,
//            CONTROL, BOS = EOS); n_vocab 261;
//   weights: norms F32 (near 1), matrices cycling Q8_0 / F16 / F32, the
//            output tied to token_embd (no output.weight).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vt::test {

// GGUF metadata value types (same ids as vt::GgufType).
enum class GT : uint32_t {
    UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6,
    BOOL = 7, STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};

// Little-endian byte writer that builds GGUF files field by field.
struct Writer {
    std::vector<uint8_t> b;
    template <class T> Writer &put(T v) {
        uint8_t tmp[sizeof(T)];
        std::memcpy(tmp, &v, sizeof(T));
        b.insert(b.end(), tmp, tmp + sizeof(T));
        return *this;
    }
    Writer &magic() {
        for (char c : std::string_view("GGUF")) b.push_back((uint8_t)c);
        return *this;
    }
    Writer &u8(uint8_t v) { return put(v); }
    Writer &u32(uint32_t v) { return put(v); }
    Writer &u64(uint64_t v) { return put(v); }
    Writer &str(std::string_view s) {
        u64(s.size());
        b.insert(b.end(), s.begin(), s.end());
        return *this;
    }
    // Key and value type; any enum with GGUF's ids (vt::GgufType, GT).
    template <class E> Writer &key(std::string_view k, E t) { return str(k).u32((uint32_t)t); }
    void pad_to(size_t a) {
        while (b.size() % a) b.push_back(0);
    }
    size_t size() const { return b.size(); }
};

// f32 -> IEEE half, round to nearest even (finite inputs of moderate range).
inline uint16_t f32_to_f16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    uint32_t mant = x & 0x7fffffu;
    if (exp >= 31) return (uint16_t)(sign | 0x7c00u);  // overflow -> inf (never used here)
    if (exp <= 0) {                                     // subnormal half or zero
        if (exp < -10) return (uint16_t)sign;
        mant |= 0x800000u;
        const uint32_t shift = (uint32_t)(14 - exp);
        uint32_t h = mant >> shift;
        const uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1))) ++h;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)exp << 10) | (mant >> 13);
    const uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;  // may carry into the exponent: correct
    return (uint16_t)(sign | h);
}

inline float f16_to_f32(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ffu;
    float v;
    if (exp == 0) v = std::ldexp((float)mant, -24);
    else if (exp == 31) v = mant ? NAN : INFINITY;
    else v = std::ldexp((float)(mant | 0x400u), (int)exp - 25);
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    bits |= sign;
    std::memcpy(&v, &bits, 4);
    return v;
}

// Deterministic generator (splitmix64), the same on every platform.
struct Rng {
    uint64_t s;
    explicit Rng(uint64_t seed) : s(seed) {}
    uint64_t next() {
        uint64_t z = (s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    float uniform(float lo, float hi) { return lo + (hi - lo) * (float)((next() >> 40) * 0x1.0p-24); }
};

// ggml type ids used here.
// I8 (24): a ggml type vt has no kernels for (loads fail VT_ERR_UNSUPPORTED).
enum : uint32_t { kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ8_0 = 8, kI8 = 24 };

// Bytes of a tensor of `n` elements per row and `rows` rows for the types the
// writer knows (F32, F16, Q4_0, Q8_0, I8); 0 for any other type.
inline size_t tensor_nbytes(uint32_t type, uint64_t n, uint64_t rows) {
    switch (type) {
    case kF32: return n * rows * 4;
    case kF16: return n * rows * 2;
    case kQ4_0: return n / 32 * 18 * rows;
    case kQ8_0: return n / 32 * 34 * rows;
    case kI8: return n * rows;
    default: return 0;
    }
}

// Encodes float values as tensor data of `type`. F32, F16 and Q8_0 (blocks
// of a valid fp16 scale amax/127 and 32 int8) are exact encodings; other
// types get zero bytes of tensor_nbytes() (finite if ever read).
inline std::vector<uint8_t> encode(uint32_t type, const std::vector<float> &v, uint64_t n, uint64_t rows) {
    std::vector<uint8_t> out;
    if (type == kF32) {
        out.resize(v.size() * 4);
        std::memcpy(out.data(), v.data(), out.size());
    } else if (type == kF16) {
        for (float x : v) {
            const uint16_t h = f32_to_f16(x);
            out.push_back((uint8_t)(h & 0xff));
            out.push_back((uint8_t)(h >> 8));
        }
    } else if (type == kQ8_0 && n % 32 == 0) {
        for (size_t blk = 0; blk < v.size(); blk += 32) {
            float amax = 0;
            for (size_t j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(v[blk + j]));
            const uint16_t dh = f32_to_f16(amax / 127.0f);
            const float d = f16_to_f32(dh);
            out.push_back((uint8_t)(dh & 0xff));
            out.push_back((uint8_t)(dh >> 8));
            for (size_t j = 0; j < 32; ++j) {
                long q = d > 0 ? std::lround(v[blk + j] / d) : 0;
                q = q > 127 ? 127 : q < -127 ? -127 : q;
                out.push_back((uint8_t)(int8_t)q);
            }
        }
    } else {
        size_t nb = tensor_nbytes(type, n, rows);
        out.assign(nb ? nb : n * rows, 0);  // unknown type: some bytes, the reader rejects it first
    }
    return out;
}

// The 256 GPT-2 byte-level pieces (UTF-8), indexed by byte value.
inline std::vector<std::string> gpt2_byte_pieces() {
    std::vector<int> cp(256, -1);
    for (int b = '!'; b <= '~'; ++b) cp[b] = b;
    for (int b = 0xA1; b <= 0xAC; ++b) cp[b] = b;
    for (int b = 0xAE; b <= 0xFF; ++b) cp[b] = b;
    int n = 0;
    for (int b = 0; b < 256; ++b)
        if (cp[b] < 0) cp[b] = 256 + n++;
    std::vector<std::string> out;
    for (int c : cp) {
        std::string s;
        if (c < 0x80) {
            s += (char)c;
        } else {  // all below 0x800
            s += (char)(0xC0 | (c >> 6));
            s += (char)(0x80 | (c & 0x3F));
        }
        out.push_back(s);
    }
    return out;
}

// Knobs of the tiny model; the defaults give a valid file.
struct TinyLlama {
    std::string arch = "llama";       // general.architecture and the hparam key prefix
    bool write_arch_key = true;       // false: no general.architecture at all
    uint32_t n_embd = 64, n_layer = 2, n_head = 4, n_head_kv = 2, n_ff = 128, n_ctx = 256;
    float rope_base = 10000.0f, rms_eps = 1e-5f;
    uint64_t seed = 1234;
    bool tied = true;                 // false: also write output.weight
    uint32_t n_extra_tokens = 0;      // tokenizer tokens beyond the embedding rows (vocab mismatch)
    // <arch>.nextn_predict_layers: block_count counts that many
    // multi-token-prediction blocks after the n_layer (their tensors are not
    // written: nothing reads them)
    uint32_t nextn_layers = 0;
    std::map<std::string, uint32_t> type_of;               // tensor name -> ggml type id
    std::set<std::string> drop;                             // tensors left out
    std::map<std::string, std::vector<uint64_t>> shape_of;  // tensor name -> dims written

    static constexpr uint32_t kByteTokens = 256;
    static constexpr uint32_t kEot = 260;  // <|endoftext|>
    uint32_t n_vocab() const { return kEot + 1; }  // rows of token_embd / logits
};

struct TensorPlan {
    std::string name;
    std::vector<uint64_t> ne;
    uint32_t type;
    float lo, hi;  // value range of the random data
};

// Tensors of the tiny model in file order, with the options applied.
inline std::vector<TensorPlan> tiny_llama_tensors(const TinyLlama &o) {
    const uint64_t E = o.n_embd, V = o.n_vocab(), F = o.n_ff, hd = o.n_embd / o.n_head;
    const uint64_t Q = o.n_head * hd, KV = o.n_head_kv * hd;
    std::vector<TensorPlan> t;
    const uint32_t mat_types[3] = {kQ8_0, kF16, kF32};
    int k = 0;
    auto mat = [&](const std::string &name, uint64_t n_in, uint64_t n_out) {
        const float s = 1.0f / std::sqrt((float)n_in);
        t.push_back({name, {n_in, n_out}, mat_types[k++ % 3], -1.7f * s, 1.7f * s});
    };
    auto norm = [&](const std::string &name) { t.push_back({name, {E}, kF32, 0.8f, 1.2f}); };
    t.push_back({"token_embd.weight", {E, V}, kQ8_0, -1.0f, 1.0f});
    norm("output_norm.weight");
    if (!o.tied) mat("output.weight", E, V);
    for (uint32_t i = 0; i < o.n_layer; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        norm(p + "attn_norm.weight");
        mat(p + "attn_q.weight", E, Q);
        mat(p + "attn_k.weight", E, KV);
        mat(p + "attn_v.weight", E, KV);
        mat(p + "attn_output.weight", Q, E);
        norm(p + "ffn_norm.weight");
        mat(p + "ffn_gate.weight", E, F);
        mat(p + "ffn_up.weight", E, F);
        mat(p + "ffn_down.weight", F, E);
    }
    std::vector<TensorPlan> out;
    for (TensorPlan &p : t) {
        if (o.drop.count(p.name)) continue;
        if (auto it = o.type_of.find(p.name); it != o.type_of.end()) p.type = it->second;
        if (auto it = o.shape_of.find(p.name); it != o.shape_of.end()) p.ne = it->second;
        out.push_back(p);
    }
    return out;
}

// The complete GGUF file of the tiny model.
inline std::vector<uint8_t> tiny_llama_gguf(const TinyLlama &o = {}) {
    constexpr uint32_t kAlign = 32;
    const std::vector<TensorPlan> tensors = tiny_llama_tensors(o);

    // Tokenizer: bytes, merged tokens, <|endoftext|>, extra tokens if asked.
    std::vector<std::string> tokens = gpt2_byte_pieces();
    for (const char *m : {"\xC4\xA0t", "he", "\xC4\xA0the", "in"}) tokens.push_back(m);
    tokens.push_back("<|endoftext|>");
    for (uint32_t i = 0; i < o.n_extra_tokens; ++i) tokens.push_back("<extra_" + std::to_string(i) + ">");
    const std::vector<std::string> merges = {"\xC4\xA0 t", "h e", "\xC4\xA0t he", "i n"};

    Writer w;
    w.magic().u32(3).u64(tensors.size());
    const size_t n_kv_at = w.size();
    w.u64(0);  // patched below
    uint64_t n_kv = 0;
    auto kv_str = [&](const std::string &k, const std::string &v) { w.key(k, GT::STRING).str(v), ++n_kv; };
    auto kv_u32 = [&](const std::string &k, uint32_t v) { w.key(k, GT::UINT32).u32(v), ++n_kv; };
    auto kv_f32 = [&](const std::string &k, float v) { w.key(k, GT::FLOAT32).put<float>(v), ++n_kv; };
    if (o.write_arch_key) kv_str("general.architecture", o.arch);
    kv_str("general.name", "vt tiny llama (random weights)");
    kv_u32("general.alignment", kAlign);
    const std::string a = o.arch + ".";
    kv_u32(a + "context_length", o.n_ctx);
    kv_u32(a + "embedding_length", o.n_embd);
    kv_u32(a + "block_count", o.n_layer + o.nextn_layers);
    if (o.nextn_layers) kv_u32(a + "nextn_predict_layers", o.nextn_layers);
    kv_u32(a + "feed_forward_length", o.n_ff);
    kv_u32(a + "attention.head_count", o.n_head);
    kv_u32(a + "attention.head_count_kv", o.n_head_kv);
    kv_u32(a + "rope.dimension_count", o.n_embd / o.n_head);
    kv_f32(a + "rope.freq_base", o.rope_base);
    kv_f32(a + "attention.layer_norm_rms_epsilon", o.rms_eps);
    kv_str("tokenizer.ggml.model", "gpt2");
    kv_str("tokenizer.ggml.pre", "gpt-2");
    w.key("tokenizer.ggml.tokens", GT::ARRAY).u32((uint32_t)GT::STRING).u64(tokens.size());
    for (const std::string &s : tokens) w.str(s);
    ++n_kv;
    w.key("tokenizer.ggml.token_type", GT::ARRAY).u32((uint32_t)GT::INT32).u64(tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i) w.put<int32_t>(i == TinyLlama::kEot ? 3 : 1);
    ++n_kv;
    w.key("tokenizer.ggml.merges", GT::ARRAY).u32((uint32_t)GT::STRING).u64(merges.size());
    for (const std::string &s : merges) w.str(s);
    ++n_kv;
    kv_u32("tokenizer.ggml.bos_token_id", TinyLlama::kEot);
    kv_u32("tokenizer.ggml.eos_token_id", TinyLlama::kEot);
    w.key("tokenizer.ggml.add_bos_token", GT::BOOL).u8(0);
    ++n_kv;
    std::memcpy(w.b.data() + n_kv_at, &n_kv, sizeof n_kv);

    // Tensor infos, then the data section; offsets are relative to it.
    Rng rng(o.seed);
    std::vector<std::vector<uint8_t>> data;
    uint64_t offset = 0;
    for (const TensorPlan &p : tensors) {
        uint64_t n = p.ne.empty() ? 1 : p.ne[0], rows = 1;
        for (size_t d = 1; d < p.ne.size(); ++d) rows *= p.ne[d];
        std::vector<float> v((size_t)(n * rows));
        for (float &x : v) x = rng.uniform(p.lo, p.hi);
        data.push_back(encode(p.type, v, n, rows));
        w.str(p.name).u32((uint32_t)p.ne.size());
        for (uint64_t d : p.ne) w.u64(d);
        w.u32(p.type).u64(offset);
        offset += (data.back().size() + kAlign - 1) / kAlign * kAlign;
    }
    w.pad_to(kAlign);
    for (const std::vector<uint8_t> &d : data) {
        w.b.insert(w.b.end(), d.begin(), d.end());
        w.pad_to(kAlign);
    }
    return std::move(w.b);
}

// Writes bytes to path; false on an I/O error.
inline bool write_file(const std::string &path, const std::vector<uint8_t> &bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write((const char *)bytes.data(), (std::streamsize)bytes.size());
    return (bool)f;
}

} // namespace vt::test
