// Pieces shared by the format converters (convert.h): base64, the
// tokenizer.json skeleton and its common nodes, and the SentencePiece
// description that both .model files and GGUF "t5" vocabularies become.
// Internal to lib/tokenizer. The small helpers are inline so that this
// header needs no source file of its own.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace vt::tok {

// Standard base64 (RFC 4648 alphabet, '=' padding).
inline std::string base64_encode(std::string_view bytes) {
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    size_t i = 0;
    for (; i + 3 <= bytes.size(); i += 3) {
        const uint32_t v = (uint32_t)(uint8_t)bytes[i] << 16 | (uint32_t)(uint8_t)bytes[i + 1] << 8 |
                           (uint8_t)bytes[i + 2];
        for (int shift = 18; shift >= 0; shift -= 6) out += alphabet[(v >> shift) & 63];
    }
    if (const size_t rest = bytes.size() - i; rest > 0) {
        uint32_t v = (uint32_t)(uint8_t)bytes[i] << 16;
        if (rest == 2) v |= (uint32_t)(uint8_t)bytes[i + 1] << 8;
        out += alphabet[(v >> 18) & 63];
        out += alphabet[(v >> 12) & 63];
        out += rest == 2 ? alphabet[(v >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

// Strict decoding: false for a character outside the alphabet, a length that
// is not a multiple of 4, or misplaced padding.
inline bool base64_decode(std::string_view text, std::string &out) {
    auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        if (c == '+') return 62;
        if (c == '/') return 63;
        return -1;
    };
    out.clear();
    if (text.size() % 4 != 0) return false;
    for (size_t i = 0; i < text.size(); i += 4) {
        const bool last = i + 4 == text.size();
        const int pad = (text[i + 3] == '=') + (text[i + 2] == '=' && text[i + 3] == '=');
        if (pad > 0 && !last) return false;
        uint32_t v = 0;
        for (int k = 0; k < 4; ++k) {
            const int d = k >= 4 - pad ? 0 : value(text[i + k]);
            if (d < 0) return false;
            v = v << 6 | (uint32_t)d;
        }
        out += (char)(v >> 16);
        if (pad < 2) out += (char)(v >> 8 & 0xff);
        if (pad < 1) out += (char)(v & 0xff);
    }
    return true;
}

// A tokenizer.json document with every stage null and no added tokens, as
// Hugging Face tokenizers serializes an empty Tokenizer.
inline nlohmann::json tokenizer_json_skeleton() {
    nlohmann::json j = nlohmann::json::object();
    j["version"] = "1.0";
    j["truncation"] = nullptr;
    j["padding"] = nullptr;
    j["added_tokens"] = nlohmann::json::array();
    j["normalizer"] = nullptr;
    j["pre_tokenizer"] = nullptr;
    j["post_processor"] = nullptr;
    j["decoder"] = nullptr;
    j["model"] = nullptr;
    return j;
}

// One entry of "added_tokens".
inline nlohmann::json added_token_json(int64_t id, std::string_view content, bool special, bool normalized) {
    return {{"id", id},           {"content", std::string(content)}, {"single_word", false}, {"lstrip", false},
            {"rstrip", false},    {"normalized", normalized},        {"special", special}};
}

// {"Regex": pattern} / {"String": s}: the two ways HF spells a pattern.
inline nlohmann::json regex_pattern(std::string_view pattern) { return {{"Regex", std::string(pattern)}}; }
inline nlohmann::json string_pattern(std::string_view s) { return {{"String", std::string(s)}}; }

// Escapes regex metacharacters so that `text` matches itself, in both
// Oniguruma (HF) and PCRE2 (vt); other bytes, UTF-8 included, stay as they are.
inline std::string regex_escape(std::string_view text) {
    std::string out;
    for (char c : text) {
        if (std::string_view("\\^$.|?*+()[]{}-#&~ ").find(c) != std::string_view::npos) out += '\\';
        out += c;
    }
    return out;
}

// SentencePiece piece types (sentencepiece_model.proto, SentencePiece.Type;
// GGUF's tokenizer.ggml.token_type uses the same numbers).
enum SpmPieceType : int32_t {
    SPM_NORMAL = 1, SPM_UNKNOWN = 2, SPM_CONTROL = 3, SPM_USER_DEFINED = 4, SPM_UNUSED = 5, SPM_BYTE = 6,
};

// What the converter needs from a SentencePiece model, wherever it came from.
struct SpmDescription {
    struct Piece {
        std::string text;
        float score = 0.0f;
        int32_t type = SPM_NORMAL;
    };
    std::vector<Piece> pieces;
    bool unigram = true;            // else BPE
    bool byte_fallback = false;
    int32_t unk_id = 0;
    std::string unk_piece = "<unk>";
    std::string precompiled_charsmap;  // raw bytes; empty = none
    bool add_dummy_prefix = true;
    bool remove_extra_whitespaces = true;
    bool escape_whitespaces = true;
};

// The tokenizer.json of a SentencePiece model, built so that HF tokenizers
// encodes like SentencePieceProcessor.encode (transformers'
// SpmConverter.build_tokenizer_from_spm_proto with legacy=True). Throws
// vt::Error(VT_ERR_FORMAT) for an out-of-range unk id or invalid UTF-8.
nlohmann::json spm_to_tokenizer_json(const SpmDescription &spm);

} // namespace vt::tok
