// Hugging Face normalizers (tokenizers/src/normalizers). Offsets are not
// tracked: vt only needs the normalized text. Unicode tables come from
// utf8proc; the semantics (which characters, which order) follow the Rust
// code, checked against the `tokenizers` Python package.
#include "tokenizer/pipeline.h"

#include <cstdlib>

#include <nlohmann/json.hpp>
#include <utf8proc.h>

#include "core/error.h"
#include "tokenizer/byte-level.h"
#include "tokenizer/base64.h"
#include "tokenizer/hf-json.h"
#include "tokenizer/hf-regex.h"
#include "tokenizer/hf-unicode.h"
#include "tokenizer/utf8.h"

namespace vt::tok {
namespace {

using hf::json;

bool is_ascii(std::string_view s) {
    for (unsigned char c : s)
        if (c >= 0x80) return false;
    return true;
}

class UnicodeNormalizer : public Normalizer {
public:
    explicit UnicodeNormalizer(int options) : options_(options) {}
    void normalize(std::string_view in, std::string &out) const override {
        out.clear();
        if (is_ascii(in)) {  // every normal form of ASCII is itself
            out.assign(in);
            return;
        }
        utf8proc_uint8_t *res = nullptr;
        const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t *>(in.data()),
                                                static_cast<utf8proc_ssize_t>(in.size()), &res,
                                                static_cast<utf8proc_option_t>(options_));
        if (n < 0) fail(VT_ERR_INVALID_UTF8, "normalizer: %s", utf8proc_errmsg(n));
        out.assign(reinterpret_cast<const char *>(res), static_cast<size_t>(n));
        std::free(res);
    }

private:
    int options_;
};

// Rust's char::to_lowercase, one character at a time (HF does not apply
// the final-sigma rule). utf8proc gives the simple mapping; U+0130 is the
// one unconditional multi-character lowercase in SpecialCasing.txt.
void append_lowercase(std::string &out, uint32_t c) {
    if (c < 0x80) {
        out.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c));
    } else if (c == 0x130) {
        out += "i\xCC\x87";
    } else {
        utf8_append(out, static_cast<uint32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
    }
}

class Lowercase : public Normalizer {
public:
    void normalize(std::string_view in, std::string &out) const override {
        out.clear();
        out.reserve(in.size());
        hf::for_each_cpt(in, [&](uint32_t c, size_t, size_t) { append_lowercase(out, c); });
    }
};

class Strip : public Normalizer {
public:
    Strip(bool left, bool right) : left_(left), right_(right) {}
    void normalize(std::string_view in, std::string &out) const override {
        size_t b = 0, e = in.size();
        if (left_) {
            while (b < e) {
                size_t i = b;
                if (!hf::is_white_space(utf8_decode(in, i))) break;
                b = i;
            }
        }
        if (right_) {
            while (e > b) {
                size_t s = e - 1;
                while (s > b && (static_cast<uint8_t>(in[s]) & 0xC0) == 0x80) --s;
                size_t i = s;
                if (!hf::is_white_space(utf8_decode(in, i))) break;
                e = s;
            }
        }
        out.assign(in.substr(b, e - b));
    }

private:
    bool left_, right_;
};

class StripAccents : public Normalizer {
public:
    void normalize(std::string_view in, std::string &out) const override {
        out.clear();
        hf::for_each_cpt(in, [&](uint32_t c, size_t at, size_t len) {
            if (!hf::is_mark(c)) out.append(in.substr(at, len));
        });
    }
};

class Replace : public Normalizer {
public:
    Replace(std::unique_ptr<hf::Pattern> pat, std::string content)
        : pat_(std::move(pat)), content_(std::move(content)) {}
    void normalize(std::string_view in, std::string &out) const override {
        out.clear();
        if (in.empty()) return;  // HF's find_matches sees no match in ""
        thread_local std::vector<Span> matches;
        matches.clear();
        pat_->find_all(in, matches);
        size_t prev = 0;
        for (const Span &m : matches) {
            out.append(in.substr(prev, m.begin - prev));
            out += content_;
            prev = m.begin + m.len;
        }
        out.append(in.substr(prev));
    }

private:
    std::unique_ptr<hf::Pattern> pat_;
    std::string content_;
};

class Prepend : public Normalizer {
public:
    explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
    void normalize(std::string_view in, std::string &out) const override {
        out.clear();
        if (in.empty()) return;  // HF leaves an empty string alone
        out.reserve(prefix_.size() + in.size());
        out += prefix_;
        out.append(in);
    }

private:
    std::string prefix_;
};

class ByteLevelNormalizer : public Normalizer {
public:
    void normalize(std::string_view in, std::string &out) const override {
        out.clear();
        for (unsigned char c : in) out += byte_to_unicode(c);
    }
};

// BERT's "chinese character": the CJK ideograph blocks only.
bool is_chinese_char(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) ||
           (c >= 0x2B920 && c <= 0x2CEAF) || (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// BERT's control test: categories Cc, Cf, Co, Cs except \t \n \r. (HF's
// unicode_categories also lists Cn but its table holds no unassigned code
// point: the live oracle keeps U+0378.)
bool is_bert_control(uint32_t c) {
    if (c == '\t' || c == '\n' || c == '\r') return false;
    const auto k = hf::category(c);
    return k == UTF8PROC_CATEGORY_CC || k == UTF8PROC_CATEGORY_CF || k == UTF8PROC_CATEGORY_CO ||
           k == UTF8PROC_CATEGORY_CS;
}

class BertNormalizer : public Normalizer {
public:
    BertNormalizer(bool clean_text, bool chinese, bool strip_accents, bool lowercase)
        : clean_text_(clean_text), chinese_(chinese), strip_accents_(strip_accents), lowercase_(lowercase) {}

    void normalize(std::string_view in, std::string &out) const override {
        // clean_text and handle_chinese_chars map characters one to one (or
        // one to three), so they share one pass.
        std::string a;
        a.reserve(in.size());
        hf::for_each_cpt(in, [&](uint32_t c, size_t at, size_t len) {
            if (clean_text_) {
                if (c == 0 || c == 0xFFFD || is_bert_control(c)) return;
                if (hf::is_white_space(c)) {
                    a.push_back(' ');
                    return;
                }
            }
            if (chinese_ && is_chinese_char(c)) {
                a.push_back(' ');
                a.append(in.substr(at, len));
                a.push_back(' ');
                return;
            }
            a.append(in.substr(at, len));
        });
        if (strip_accents_) {
            // NFD, then drop nonspacing marks (Mn only, unlike StripAccents).
            std::string nfd;
            nfd_.normalize(a, nfd);
            a.clear();
            hf::for_each_cpt(nfd, [&](uint32_t c, size_t at, size_t len) {
                if (c < 0x300 || hf::category(c) != UTF8PROC_CATEGORY_MN) a.append(nfd, at, len);
            });
        }
        if (lowercase_) {
            out.clear();
            out.reserve(a.size());
            hf::for_each_cpt(a, [&](uint32_t c, size_t, size_t) { append_lowercase(out, c); });
        } else {
            out.swap(a);
        }
    }

private:
    bool clean_text_, chinese_, strip_accents_, lowercase_;
    UnicodeNormalizer nfd_{UTF8PROC_STABLE | UTF8PROC_DECOMPOSE};
};

class SequenceNormalizer : public Normalizer {
public:
    explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
    void normalize(std::string_view in, std::string &out) const override {
        if (steps_.empty()) {
            out.assign(in);
            return;
        }
        std::string tmp;
        std::string_view cur = in;
        for (size_t k = 0; k < steps_.size(); ++k) {
            // Alternate between out and tmp; the last step writes into out.
            const bool to_out = (steps_.size() - 1 - k) % 2 == 0;
            std::string &dst = to_out ? out : tmp;
            steps_[k]->normalize(cur, dst);
            cur = dst;
        }
    }

private:
    std::vector<std::unique_ptr<Normalizer>> steps_;
};

// ---------------------------------------------------------------------------
// Precompiled: SentencePiece's precompiled_charsmap, as the spm_precompiled
// crate reads it: [u32 trie size in bytes][darts-clone double-array units]
// [replacement strings, each ending in '\0']. A trie key is the UTF-8 of a
// character or a grapheme cluster; its value is the offset of the
// replacement.
// ---------------------------------------------------------------------------

class Precompiled : public Normalizer {
public:
    Precompiled(std::string_view charsmap, const char *where) {
        if (charsmap.empty()) return;  // no rules: the identity
        if (charsmap.size() < 4) fail(VT_ERR_FORMAT, "%s: precompiled_charsmap is truncated", where);
        const uint32_t trie_bytes = read_u32(charsmap.data());
        if (trie_bytes % 4 != 0 || trie_bytes > charsmap.size() - 4)
            fail(VT_ERR_FORMAT, "%s: precompiled_charsmap trie size %u does not fit", where, trie_bytes);
        units_.resize(trie_bytes / 4);
        for (size_t i = 0; i < units_.size(); ++i) units_[i] = read_u32(charsmap.data() + 4 + 4 * i);
        normalized_.assign(charsmap.substr(4 + trie_bytes));
        if (utf8_find_invalid(normalized_) != std::string::npos)
            fail(VT_ERR_FORMAT, "%s: precompiled_charsmap strings are not UTF-8", where);
    }

    void normalize(std::string_view in, std::string &out) const override {
        out.clear();
        if (units_.empty()) {
            out.assign(in);
            return;
        }
        out.reserve(in.size());
        // HF walks extended grapheme clusters: one shorter than 6 bytes is
        // looked up whole first, otherwise (or when that fails) character
        // by character.
        utf8proc_int32_t state = 0;
        size_t g_begin = 0, i = 0;
        uint32_t prev = 0;
        while (i < in.size()) {
            const size_t at = i;
            const uint32_t c = utf8_decode(in, i);
            if (at > 0 && utf8proc_grapheme_break_stateful(static_cast<utf8proc_int32_t>(prev),
                                                           static_cast<utf8proc_int32_t>(c), &state)) {
                apply_grapheme(in.substr(g_begin, at - g_begin), out);
                g_begin = at;
            }
            prev = c;
        }
        if (g_begin < in.size()) apply_grapheme(in.substr(g_begin), out);
    }

private:
    static uint32_t read_u32(const char *p) {
        const auto *u = reinterpret_cast<const uint8_t *>(p);
        return uint32_t(u[0]) | uint32_t(u[1]) << 8 | uint32_t(u[2]) << 16 | uint32_t(u[3]) << 24;
    }

    void apply_grapheme(std::string_view g, std::string &out) const {
        std::string_view rep;
        if (g.size() < 6 && transform(g, rep)) {
            out += rep;
            return;
        }
        size_t i = 0;
        while (i < g.size()) {
            const size_t len = utf8_len(static_cast<uint8_t>(g[i]));
            const std::string_view ch = g.substr(i, len);
            if (transform(ch, rep)) out += rep;
            else out += ch;
            i += len;
        }
    }

    // spm_precompiled's transform: the value of the *shortest* key that is
    // a prefix of `chunk` replaces all of `chunk`.
    bool transform(std::string_view chunk, std::string_view &rep) const {
        size_t pos = 0;
        uint32_t unit = units_[0];
        pos ^= offset(unit);
        for (unsigned char c : chunk) {
            if (c == 0) break;
            pos ^= c;
            if (pos >= units_.size()) return false;
            unit = units_[pos];
            if ((unit & ((1u << 31) | 0xFF)) != c) return false;
            pos ^= offset(unit);
            if ((unit >> 8) & 1) {
                if (pos >= units_.size()) return false;
                const size_t v = units_[pos] & ((1u << 31) - 1);
                if (v > normalized_.size()) return false;
                const size_t end = normalized_.find('\0', v);
                rep = std::string_view(normalized_).substr(v, (end == std::string::npos ? normalized_.size() : end) - v);
                return true;
            }
        }
        return false;
    }

    static size_t offset(uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }

    std::vector<uint32_t> units_;
    std::string normalized_;
};

std::unique_ptr<Normalizer> make_precompiled_node(const json &j, const char *where) {
    std::string bytes;
    if (const json *v = hf::optional_member(j, "precompiled_charsmap")) {
        if (!v->is_string()) fail(VT_ERR_FORMAT, "%s: field \"precompiled_charsmap\" is not a string", where);
        if (!base64_decode(v->get_ref<const std::string &>(), bytes))
            fail(VT_ERR_FORMAT, "%s: field \"precompiled_charsmap\" is not base64", where);
    }
    return std::make_unique<Precompiled>(bytes, where);
}

std::unique_ptr<Normalizer> make(const json &j) {
    if (!j.is_object()) fail(VT_ERR_FORMAT, "normalizer: node is not an object");
    const std::string type = hf::type_of(j, "normalizer");
    const std::string where_s = "normalizer " + type;
    const char *where = where_s.c_str();

    if (type == "NFC") return std::make_unique<UnicodeNormalizer>(UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    if (type == "NFD") return std::make_unique<UnicodeNormalizer>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE);
    if (type == "NFKC")
        return std::make_unique<UnicodeNormalizer>(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
    if (type == "NFKD")
        return std::make_unique<UnicodeNormalizer>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT);
    if (type == "Lowercase") return std::make_unique<Lowercase>();
    if (type == "Strip")
        return std::make_unique<Strip>(hf::bool_member(j, "strip_left", where, true),
                                       hf::bool_member(j, "strip_right", where, true));
    if (type == "StripAccents") return std::make_unique<StripAccents>();
    if (type == "Replace")
        return std::make_unique<Replace>(hf::Pattern::from_json(hf::member(j, "pattern", where), where),
                                         hf::str_member(j, "content", where));
    if (type == "Prepend") return std::make_unique<Prepend>(hf::str_member(j, "prepend", where));
    if (type == "ByteLevel") return std::make_unique<ByteLevelNormalizer>();
    if (type == "BertNormalizer") {
        const bool lowercase = hf::bool_member(j, "lowercase", where, true);
        return std::make_unique<BertNormalizer>(hf::bool_member(j, "clean_text", where, true),
                                                hf::bool_member(j, "handle_chinese_chars", where, true),
                                                hf::bool_member(j, "strip_accents", where, lowercase),
                                                lowercase);
    }
    if (type == "Precompiled") return make_precompiled_node(j, where);
    if (type == "Sequence") {
        const json &list = hf::member(j, "normalizers", where);
        if (!list.is_array()) fail(VT_ERR_FORMAT, "%s: field \"normalizers\" is not an array", where);
        std::vector<std::unique_ptr<Normalizer>> steps;
        for (const json &s : list) steps.push_back(make(s));
        return std::make_unique<SequenceNormalizer>(std::move(steps));
    }
    fail(VT_ERR_UNSUPPORTED, "normalizer type \"%s\" is not supported", type.c_str());
}

} // namespace

std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json &j) {
    if (j.is_null()) return nullptr;
    try {
        return make(j);
    } catch (const nlohmann::json::exception &e) {
        fail(VT_ERR_FORMAT, "normalizer: malformed node: %s", e.what());
    }
}

} // namespace vt::tok
