// Pieces shared by the format converters (convert.h): the
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

#include "tokenizer/base64.h"

namespace vt::tok {

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

// A ByteLevel node (pre-tokenizer, post-processor and decoder share the shape).
inline nlohmann::json byte_level(bool add_prefix_space, bool trim_offsets, bool use_regex) {
    return {{"type", "ByteLevel"}, {"add_prefix_space", add_prefix_space}, {"trim_offsets", trim_offsets},
            {"use_regex", use_regex}};
}

// The pre-tokenizer of tiktoken-style vocabularies (Llama 3, cl100k...): the
// split regex first, then the byte alphabet without GPT-2's own regex.
inline nlohmann::json split_then_byte_level(std::string_view pattern) {
    return {{"type", "Sequence"},
            {"pretokenizers", nlohmann::json::array({{{"type", "Split"},
                                                      {"pattern", regex_pattern(pattern)},
                                                      {"behavior", "Isolated"},
                                                      {"invert", false}},
                                                     byte_level(false, true, false)})}};
}

// A byte-level BPE model node (no unk, prefix or suffix).
inline nlohmann::json byte_level_bpe_model(nlohmann::json vocab, nlohmann::json merges, bool ignore_merges) {
    return {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", nullptr},
            {"continuing_subword_prefix", nullptr},
            {"end_of_word_suffix", nullptr},
            {"fuse_unk", false},
            {"byte_fallback", false},
            {"ignore_merges", ignore_merges},
            {"vocab", std::move(vocab)},
            {"merges", std::move(merges)}};
}
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
