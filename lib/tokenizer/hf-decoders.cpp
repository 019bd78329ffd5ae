// Hugging Face decoders (tokenizers/src/decoders): each rewrites the list
// of token strings as its decode_chain does; the caller joins the result.
#include "tokenizer/pipeline.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/byte-level.h"
#include "tokenizer/hf-json.h"
#include "tokenizer/hf-regex.h"
#include "tokenizer/utf8.h"

namespace vt::tok {
namespace {

using hf::json;
using Tokens = std::vector<std::string>;

constexpr const char *kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// String::from_utf8_lossy: each maximal ill-formed subsequence (the longest
// prefix of a valid sequence, or one byte) becomes one U+FFFD.
void append_utf8_lossy(std::string_view s, std::string &out) {
    size_t i = 0;
    while (i < s.size()) {
        const size_t bad = utf8_find_invalid(s.substr(i));
        if (bad == std::string::npos) {
            out.append(s.substr(i));
            return;
        }
        out.append(s.substr(i, bad));
        i += bad;
        // Length of the ill-formed part, by the Unicode "maximal subpart"
        // rule Rust follows: the lead byte and the continuation bytes that
        // are still allowed after it.
        const auto b0 = static_cast<uint8_t>(s[i]);
        size_t need = 0;
        uint8_t lo = 0x80, hi = 0xBF;
        if (b0 >= 0xC2 && b0 <= 0xDF) need = 1;
        else if (b0 >= 0xE0 && b0 <= 0xEF) {
            need = 2;
            if (b0 == 0xE0) lo = 0xA0;
            if (b0 == 0xED) hi = 0x9F;
        } else if (b0 >= 0xF0 && b0 <= 0xF4) {
            need = 3;
            if (b0 == 0xF0) lo = 0x90;
            if (b0 == 0xF4) hi = 0x8F;
        }
        size_t len = 1;
        for (size_t k = 1; k <= need && i + k < s.size(); ++k) {
            const auto b = static_cast<uint8_t>(s[i + k]);
            if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) break;
            ++len;
        }
        out += kReplacementChar;
        i += len;
    }
}

class ByteLevelDecoder : public Decoder {
public:
    void decode_chain(Tokens &tokens, size_t first) const override {
        decode_chain_bytes(tokens, first);
        std::string text;
        append_utf8_lossy(tokens[0], text);
        tokens[0] = std::move(text);
    }
    void decode_chain_bytes(Tokens &tokens, size_t) const override {
        // A token made only of alphabet characters gives its bytes; any
        // other token gives its own UTF-8 bytes unchanged.
        std::string bytes;
        for (const std::string &t : tokens) {
            const size_t mark = bytes.size();
            if (!byte_level_decode(t, bytes)) {
                bytes.resize(mark);
                bytes += t;
            }
        }
        tokens.assign(1, std::move(bytes));
    }
};

class MetaspaceDecoder : public Decoder {
public:
    MetaspaceDecoder(uint32_t replacement, bool drop_first) : drop_first_(drop_first) {
        utf8_append(rep_, replacement);
    }
    void decode_chain(Tokens &tokens, size_t first_index) const override {
        // Every replacement becomes a space, except in the sequence's first
        // token where HF drops them all (not only the leading one).
        for (size_t i = 0; i < tokens.size(); ++i) {
            const bool drop = drop_first_ && first_index + i == 0;
            std::string &t = tokens[i];
            std::string r;
            r.reserve(t.size());
            size_t p = 0;
            while (p < t.size()) {
                if (t.compare(p, rep_.size(), rep_) == 0) {
                    if (!drop) r.push_back(' ');
                    p += rep_.size();
                } else {
                    r.push_back(t[p++]);
                }
            }
            t.swap(r);
        }
    }

private:
    std::string rep_;
    bool drop_first_;
};

// "<0xAB>" -> 0xAB, as u8::from_str_radix(&token[3..5], 16) reads it (which
// also accepts a '+' sign before a single digit).
int byte_token(const std::string &t) {
    if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
    auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    if (t[3] == '+') return hex(t[4]);
    const int h = hex(t[3]), l = hex(t[4]);
    return h < 0 || l < 0 ? -1 : h * 16 + l;
}

class ByteFallbackDecoder : public Decoder {
public:
    void decode_chain(Tokens &tokens, size_t) const override { run(tokens, false); }
    void decode_chain_bytes(Tokens &tokens, size_t) const override { run(tokens, true); }

private:
    static void run(Tokens &tokens, bool raw) {
        Tokens result;
        result.reserve(tokens.size());
        std::string run;
        auto flush = [&] {
            if (run.empty()) return;
            if (raw || utf8_find_invalid(run) == std::string::npos) {
                result.push_back(run);
            } else {
                for (size_t k = 0; k < run.size(); ++k) result.emplace_back(kReplacementChar);
            }
            run.clear();
        };
        for (std::string &t : tokens) {
            const int b = byte_token(t);
            if (b >= 0) {
                run.push_back(static_cast<char>(b));
                continue;
            }
            flush();
            result.push_back(std::move(t));
        }
        flush();
        tokens.swap(result);
    }
};

class FuseDecoder : public Decoder {
public:
    void decode_chain(Tokens &tokens, size_t) const override {
        std::string all;
        for (const std::string &t : tokens) all += t;
        tokens.assign(1, std::move(all));
    }
};

class StripDecoder : public Decoder {
public:
    StripDecoder(uint32_t content, size_t start, size_t stop) : start_(start), stop_(stop) {
        utf8_append(content_, content);
    }
    void decode_chain(Tokens &tokens, size_t) const override { strip(tokens, start_); }
    // After a Fuse the one token is the sequence from first_index on: its
    // left end is the sequence's start only where first_index is 0 (a piece
    // of a token inside a sequence keeps SentencePiece's leading space).
    void strip_fused(Tokens &tokens, size_t first_index) const { strip(tokens, first_index == 0 ? start_ : 0); }

private:
    void strip(Tokens &tokens, size_t start) const {
        const size_t w = content_.size();
        for (std::string &t : tokens) {
            size_t b = 0, n_start = 0;
            while (n_start < start && t.compare(b, w, content_) == 0) {
                b += w;
                ++n_start;
            }
            // Stripping from the right stops at what the left strip kept.
            size_t e = t.size(), n_stop = 0;
            while (n_stop < stop_ && e >= b + w && t.compare(e - w, w, content_) == 0) {
                e -= w;
                ++n_stop;
            }
            t = t.substr(b, e - b);
        }
    }

    std::string content_;
    size_t start_, stop_;
};

class ReplaceDecoder : public Decoder {
public:
    ReplaceDecoder(std::unique_ptr<hf::Pattern> pat, std::string content)
        : pat_(std::move(pat)), content_(std::move(content)) {}
    void decode_chain(Tokens &tokens, size_t) const override {
        std::vector<Span> m;
        for (std::string &t : tokens) {
            if (t.empty()) continue;  // HF's find_matches sees no match in ""
            m.clear();
            pat_->find_all(t, m);
            if (m.empty()) continue;
            std::string r;
            size_t prev = 0;
            for (const Span &s : m) {
                r.append(t, prev, s.begin - prev);
                r += content_;
                prev = s.begin + s.len;
            }
            r.append(t, prev, std::string::npos);
            t.swap(r);
        }
    }

private:
    std::unique_ptr<hf::Pattern> pat_;
    std::string content_;
};

void replace_all(std::string &s, std::string_view from, std::string_view to) {
    size_t p = 0;
    while ((p = s.find(from, p)) != std::string::npos) {
        s.replace(p, from.size(), to);
        p += to.size();
    }
}

// WordPiece's cleanup: English tokenization artefacts, in HF's order.
void wordpiece_cleanup(std::string &s) {
    replace_all(s, " .", ".");
    replace_all(s, " ?", "?");
    replace_all(s, " !", "!");
    replace_all(s, " ,", ",");
    replace_all(s, " ' ", "'");
    replace_all(s, " n't", "n't");
    replace_all(s, " 'm", "'m");
    replace_all(s, " do not", " don't");
    replace_all(s, " 's", "'s");
    replace_all(s, " 've", "'ve");
    replace_all(s, " 're", "'re");
}

class WordPieceDecoder : public Decoder {
public:
    WordPieceDecoder(std::string prefix, bool cleanup) : prefix_(std::move(prefix)), cleanup_(cleanup) {}
    void decode_chain(Tokens &tokens, size_t first_index) const override {
        for (size_t i = 0; i < tokens.size(); ++i) {
            std::string &t = tokens[i];
            if (first_index + i != 0) {
                if (t.compare(0, prefix_.size(), prefix_) == 0) t.erase(0, prefix_.size());
                else t.insert(0, 1, ' ');
            }
            if (cleanup_) wordpiece_cleanup(t);
        }
    }

private:
    std::string prefix_;
    bool cleanup_;
};

class BpeDecoder : public Decoder {
public:
    explicit BpeDecoder(std::string suffix) : suffix_(std::move(suffix)) {}
    void decode_chain(Tokens &tokens, size_t) const override {
        // The suffix marks a word end: a space, except after the last token.
        for (size_t i = 0; i < tokens.size(); ++i)
            if (!suffix_.empty()) replace_all(tokens[i], suffix_, i + 1 == tokens.size() ? "" : " ");
    }

private:
    std::string suffix_;
};

class CtcDecoder : public Decoder {
public:
    CtcDecoder(std::string pad, std::string delimiter, bool cleanup)
        : pad_(std::move(pad)), delimiter_(std::move(delimiter)), cleanup_(cleanup) {}
    void decode_chain(Tokens &tokens, size_t) const override {
        Tokens result;
        for (size_t i = 0; i < tokens.size(); ++i) {
            if (i > 0 && tokens[i] == tokens[i - 1]) continue;  // repeats collapse
            std::string t = tokens[i];
            if (!pad_.empty()) replace_all(t, pad_, "");
            if (cleanup_) {
                wordpiece_cleanup(t);
                if (!delimiter_.empty()) replace_all(t, delimiter_, " ");
            }
            if (!t.empty()) result.push_back(std::move(t));
        }
        tokens.swap(result);
    }

private:
    std::string pad_, delimiter_;
    bool cleanup_;
};

class SequenceDecoder : public Decoder {
public:
    explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
    void decode_chain(Tokens &tokens, size_t first_index) const override { run(tokens, first_index, false); }
    void decode_chain_bytes(Tokens &tokens, size_t first_index) const override { run(tokens, first_index, true); }

private:
    void run(Tokens &tokens, size_t first_index, bool bytes) const {
        bool fused = false;
        for (const auto &s : steps_) {
            if (auto *strip = dynamic_cast<const StripDecoder *>(s.get()); strip && fused) {
                strip->strip_fused(tokens, first_index);
            } else if (bytes) {
                s->decode_chain_bytes(tokens, first_index);
            } else {
                s->decode_chain(tokens, first_index);
            }
            fused = fused || dynamic_cast<const FuseDecoder *>(s.get()) != nullptr;
        }
    }

    std::vector<std::unique_ptr<Decoder>> steps_;
};

std::unique_ptr<Decoder> make(const json &j) {
    if (!j.is_object()) fail(VT_ERR_FORMAT, "decoder: node is not an object");
    const std::string type = hf::type_of(j, "decoder");
    const std::string where_s = "decoder " + type;
    const char *where = where_s.c_str();

    if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
    if (type == "Metaspace") {
        bool drop_first = hf::bool_member(j, "add_prefix_space", where, true);  // the legacy field
        if (const json *ps = hf::optional_member(j, "prepend_scheme")) {
            if (!ps->is_string()) fail(VT_ERR_FORMAT, "%s: field \"prepend_scheme\" is not a string", where);
            const std::string &s = ps->get_ref<const std::string &>();
            if (s != "always" && s != "first" && s != "never")
                fail(VT_ERR_FORMAT, "%s: unknown prepend_scheme \"%s\"", where, s.c_str());
            drop_first = s != "never";
        }
        return std::make_unique<MetaspaceDecoder>(hf::char_member(j, "replacement", where, 0x2581), drop_first);
    }
    if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
    if (type == "Fuse") return std::make_unique<FuseDecoder>();
    if (type == "Strip") {
        if (!hf::optional_member(j, "content")) fail(VT_ERR_FORMAT, "%s: missing field \"content\"", where);
        return std::make_unique<StripDecoder>(hf::char_member(j, "content", where, ' '),
                                              hf::uint_member(j, "start", where, 0),
                                              hf::uint_member(j, "stop", where, 0));
    }
    if (type == "Replace")
        return std::make_unique<ReplaceDecoder>(hf::Pattern::from_json(hf::member(j, "pattern", where), where),
                                                hf::str_member(j, "content", where));
    if (type == "WordPiece")
        return std::make_unique<WordPieceDecoder>(hf::str_member(j, "prefix", where, "##"),
                                                  hf::bool_member(j, "cleanup", where, true));
    if (type == "BPEDecoder") return std::make_unique<BpeDecoder>(hf::str_member(j, "suffix", where, "</w>"));
    if (type == "CTC")
        return std::make_unique<CtcDecoder>(hf::str_member(j, "pad_token", where, "<pad>"),
                                            hf::str_member(j, "word_delimiter_token", where, "|"),
                                            hf::bool_member(j, "cleanup", where, true));
    if (type == "Sequence") {
        const json &list = hf::member(j, "decoders", where);
        if (!list.is_array()) fail(VT_ERR_FORMAT, "%s: field \"decoders\" is not an array", where);
        std::vector<std::unique_ptr<Decoder>> steps;
        for (const json &s : list) steps.push_back(make(s));
        return std::make_unique<SequenceDecoder>(std::move(steps));
    }
    fail(VT_ERR_UNSUPPORTED, "decoder type \"%s\" is not supported", type.c_str());
}

} // namespace

std::unique_ptr<Decoder> make_decoder(const nlohmann::json &j) {
    if (j.is_null()) return nullptr;
    try {
        return make(j);
    } catch (const nlohmann::json::exception &e) {
        fail(VT_ERR_FORMAT, "decoder: malformed node: %s", e.what());
    }
}

} // namespace vt::tok
