// SentencePiece ModelProto (.model) -> tokenizer.json. The stages follow
// transformers' SpmConverter.build_tokenizer_from_spm_proto (legacy=True),
// whose aim is to encode like SentencePieceProcessor.encode: normalizer spec
// in SentencePiece's order, BPE merges ranked by piece score, user-defined
// pieces isolated and never merged.
#include <algorithm>
#include <cmath>
#include <tuple>
#include <unordered_map>

#include "core/error.h"
#include "tokenizer/convert-internal.h"
#include "tokenizer/convert.h"
#include "tokenizer/protobuf-reader.h"
#include "tokenizer/utf8.h"

namespace vt::tok {

namespace {

using nlohmann::json;

// sentencepiece_model.proto field numbers (the only ones read).
enum : uint32_t {
    MODEL_PIECES = 1, MODEL_TRAINER_SPEC = 2, MODEL_NORMALIZER_SPEC = 3,
    PIECE_TEXT = 1, PIECE_SCORE = 2, PIECE_TYPE = 3,
    TRAINER_MODEL_TYPE = 3, TRAINER_BYTE_FALLBACK = 35, TRAINER_UNK_ID = 40, TRAINER_UNK_PIECE = 45,
    NORM_CHARSMAP = 2, NORM_ADD_DUMMY_PREFIX = 3, NORM_REMOVE_EXTRA_WS = 4, NORM_ESCAPE_WS = 5,
};
enum : int32_t { MODEL_TYPE_UNIGRAM = 1, MODEL_TYPE_BPE = 2, MODEL_TYPE_WORD = 3, MODEL_TYPE_CHAR = 4 };

size_t offset_in(std::string_view whole, std::string_view part) {
    return static_cast<size_t>(part.data() - whole.data());
}

SpmDescription::Piece read_piece(std::string_view file, std::string_view msg) {
    SpmDescription::Piece p;
    ProtoReader r(msg, "SentencePiece", offset_in(file, msg));
    ProtoField f;
    while (r.next(f)) {
        if (f.number == PIECE_TEXT) p.text = f.as_bytes();
        else if (f.number == PIECE_SCORE) p.score = f.as_float();
        else if (f.number == PIECE_TYPE) p.type = f.as_int32();
    }
    return p;
}

void read_trainer_spec(std::string_view file, std::string_view msg, SpmDescription &d, int32_t &model_type) {
    ProtoReader r(msg, "TrainerSpec", offset_in(file, msg));
    ProtoField f;
    while (r.next(f)) {
        if (f.number == TRAINER_MODEL_TYPE) model_type = f.as_int32();
        else if (f.number == TRAINER_BYTE_FALLBACK) d.byte_fallback = f.as_bool();
        else if (f.number == TRAINER_UNK_ID) d.unk_id = f.as_int32();
        else if (f.number == TRAINER_UNK_PIECE) d.unk_piece = f.as_bytes();
    }
}

void read_normalizer_spec(std::string_view file, std::string_view msg, SpmDescription &d) {
    ProtoReader r(msg, "NormalizerSpec", offset_in(file, msg));
    ProtoField f;
    while (r.next(f)) {
        if (f.number == NORM_CHARSMAP) d.precompiled_charsmap = f.as_bytes();
        else if (f.number == NORM_ADD_DUMMY_PREFIX) d.add_dummy_prefix = f.as_bool();
        else if (f.number == NORM_REMOVE_EXTRA_WS) d.remove_extra_whitespaces = f.as_bool();
        else if (f.number == NORM_ESCAPE_WS) d.escape_whitespaces = f.as_bool();
    }
}

// Merges for a BPE vocabulary: every split of a normal piece into two
// normal pieces, ranked by the piece's score (highest first), then id, then
// split position. SentencePiece merges by piece score, so this order makes
// HF's rank-based BPE pick the same pairs.
json bpe_merges(const SpmDescription &spm) {
    std::unordered_map<std::string_view, int32_t> normal;  // last id wins, as a Python dict
    for (size_t i = 0; i < spm.pieces.size(); ++i) {
        if (spm.pieces[i].type == SPM_NORMAL) normal[spm.pieces[i].text] = static_cast<int32_t>(i);
    }
    struct Merge {
        float neg_score;
        int32_t id;
        uint32_t split;  // byte length of the left part
    };
    std::vector<Merge> ranked;
    for (const auto &[text, id] : normal) {
        for (size_t at = utf8_len(static_cast<uint8_t>(text[0])); at < text.size();
             at += utf8_len(static_cast<uint8_t>(text[at]))) {
            if (normal.count(text.substr(0, at)) && normal.count(text.substr(at))) {
                ranked.push_back({-spm.pieces[id].score, id, static_cast<uint32_t>(at)});
            }
        }
    }
    std::sort(ranked.begin(), ranked.end(), [](const Merge &a, const Merge &b) {
        return std::tie(a.neg_score, a.id, a.split) < std::tie(b.neg_score, b.id, b.split);
    });
    json merges = json::array();
    for (const Merge &m : ranked) {
        const std::string &t = spm.pieces[m.id].text;
        merges.push_back(json::array({t.substr(0, m.split), t.substr(m.split)}));
    }
    return merges;
}

json spm_model(const SpmDescription &spm, bool has_user_defined) {
    if (spm.unigram) {
        json vocab = json::array();
        for (const auto &p : spm.pieces) vocab.push_back(json::array({p.text, p.score}));
        // vt_float_scores (ours, not HF's): SentencePiece sums scores in
        // float, and it is the oracle for these files.
        return {{"type", "Unigram"}, {"unk_id", spm.unk_id}, {"vocab", std::move(vocab)},
                {"byte_fallback", spm.byte_fallback}, {"vt_float_scores", true}};
    }
    json vocab = json::object();
    for (size_t i = 0; i < spm.pieces.size(); ++i) vocab[spm.pieces[i].text] = i;
    return {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", spm.unk_piece},
            {"continuing_subword_prefix", nullptr},
            {"end_of_word_suffix", nullptr},
            {"fuse_unk", true},
            {"byte_fallback", spm.byte_fallback},
            // User-defined pieces are whole words to SentencePiece: look a
            // word up before merging so they come out as one token.
            {"ignore_merges", has_user_defined},
            {"vocab", std::move(vocab)},
            {"merges", bpe_merges(spm)}};
}

json spm_normalizer(const SpmDescription &spm) {
    json seq = json::array();
    if (!spm.precompiled_charsmap.empty()) {
        seq.push_back({{"type", "Precompiled"}, {"precompiled_charsmap", base64_encode(spm.precompiled_charsmap)}});
    }
    if (spm.remove_extra_whitespaces) {
        // Only spaces: SentencePiece leaves newlines and tabs alone.
        seq.push_back({{"type", "Replace"}, {"pattern", regex_pattern("\\A +| +\\z")}, {"content", ""}});
        seq.push_back({{"type", "Replace"}, {"pattern", regex_pattern(" {2,}")}, {"content", " "}});
    }
    if (spm.escape_whitespaces) {
        seq.push_back({{"type", "Replace"}, {"pattern", string_pattern(" ")}, {"content", "\xe2\x96\x81"}});
    }
    if (spm.add_dummy_prefix) {
        // Metaspace adds no prefix to text that already starts with "▁";
        // SentencePiece always does.
        seq.push_back({{"type", "Replace"}, {"pattern", regex_pattern("\\A\xe2\x96\x81")},
                       {"content", "\xe2\x96\x81\xe2\x96\x81"}});
    }
    return {{"type", "Sequence"}, {"normalizers", std::move(seq)}};
}

json spm_pre_tokenizer(const SpmDescription &spm) {
    json seq = json::array();
    if (spm.add_dummy_prefix) {
        seq.push_back({{"type", "Metaspace"}, {"replacement", "\xe2\x96\x81"}, {"prepend_scheme", "always"},
                       {"split", false}});
    }
    std::vector<std::string_view> user;
    for (const auto &p : spm.pieces) {
        if (p.type == SPM_USER_DEFINED) user.push_back(p.text);
    }
    if (!user.empty()) {
        // Longest first, so that a piece wins over its own prefix.
        std::stable_sort(user.begin(), user.end(),
                         [](std::string_view a, std::string_view b) { return a.size() > b.size(); });
        std::string pattern;
        for (std::string_view u : user) {
            if (!pattern.empty()) pattern += '|';
            pattern += regex_escape(u);
        }
        seq.push_back({{"type", "Split"}, {"pattern", regex_pattern(pattern)}, {"behavior", "Isolated"},
                       {"invert", false}});
    }
    if (seq.empty()) return nullptr;
    return {{"type", "Sequence"}, {"pretokenizers", std::move(seq)}};
}

json spm_decoder(const SpmDescription &spm) {
    json seq = json::array();
    seq.push_back({{"type", "Replace"}, {"pattern", string_pattern("\xe2\x96\x81")}, {"content", " "}});
    if (spm.byte_fallback) seq.push_back({{"type", "ByteFallback"}});
    if (spm.add_dummy_prefix) {
        // Strip works per token: fuse first so only the text's start loses its space.
        seq.push_back({{"type", "Fuse"}});
        seq.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    } else if (spm.byte_fallback) {
        seq.push_back({{"type", "Fuse"}});
    }
    return {{"type", "Sequence"}, {"decoders", std::move(seq)}};
}

} // namespace

json spm_to_tokenizer_json(const SpmDescription &spm) {
    if (spm.pieces.empty()) fail(VT_ERR_FORMAT, "SentencePiece model has no pieces");
    if (spm.pieces.size() > INT32_MAX) fail(VT_ERR_FORMAT, "SentencePiece model has too many pieces");
    bool has_user_defined = false;
    for (size_t i = 0; i < spm.pieces.size(); ++i) {
        const auto &p = spm.pieces[i];
        if (p.text.empty()) fail(VT_ERR_FORMAT, "SentencePiece piece %zu is empty", i);
        // A NaN would also break the ordering of the merges.
        if (std::isnan(p.score)) fail(VT_ERR_FORMAT, "SentencePiece piece %zu has a NaN score", i);
        if (utf8_find_invalid(p.text) != std::string_view::npos) {
            fail(VT_ERR_FORMAT, "SentencePiece piece %zu is not valid UTF-8", i);
        }
        has_user_defined |= p.type == SPM_USER_DEFINED;
    }
    if (spm.unigram && (spm.unk_id < 0 || static_cast<size_t>(spm.unk_id) >= spm.pieces.size())) {
        fail(VT_ERR_FORMAT, "SentencePiece unk_id %d is outside the %zu pieces", spm.unk_id, spm.pieces.size());
    }
    if (utf8_find_invalid(spm.unk_piece) != std::string_view::npos) {
        fail(VT_ERR_FORMAT, "SentencePiece unk_piece is not valid UTF-8");
    }

    json j = tokenizer_json_skeleton();
    // Control and unknown pieces are special added tokens, matched on the
    // raw text; user-defined ones stay with the model (see the Split above).
    for (size_t i = 0; i < spm.pieces.size(); ++i) {
        const auto &p = spm.pieces[i];
        if (p.type == SPM_CONTROL || p.type == SPM_UNKNOWN) {
            j["added_tokens"].push_back(added_token_json(static_cast<int64_t>(i), p.text, true, false));
        }
    }
    j["normalizer"] = spm_normalizer(spm);
    j["pre_tokenizer"] = spm_pre_tokenizer(spm);
    j["decoder"] = spm_decoder(spm);
    j["model"] = spm_model(spm, has_user_defined);
    return j;
}

json convert_spm_model(std::string_view bytes) {
    SpmDescription d;
    int32_t model_type = MODEL_TYPE_UNIGRAM;  // the proto's default
    ProtoReader r(bytes, "SentencePiece model");
    ProtoField f;
    while (r.next(f)) {
        if (f.number == MODEL_PIECES) d.pieces.push_back(read_piece(bytes, f.as_bytes()));
        else if (f.number == MODEL_TRAINER_SPEC) read_trainer_spec(bytes, f.as_bytes(), d, model_type);
        else if (f.number == MODEL_NORMALIZER_SPEC) read_normalizer_spec(bytes, f.as_bytes(), d);
    }
    if (d.pieces.empty()) fail(VT_ERR_FORMAT, "SentencePiece model: no pieces (not a .model file?)");
    if (model_type == MODEL_TYPE_WORD || model_type == MODEL_TYPE_CHAR) {
        fail(VT_ERR_UNSUPPORTED, "SentencePiece model type %s is not supported (only UNIGRAM and BPE)",
             model_type == MODEL_TYPE_WORD ? "WORD" : "CHAR");
    }
    if (model_type != MODEL_TYPE_UNIGRAM && model_type != MODEL_TYPE_BPE) {
        fail(VT_ERR_FORMAT, "SentencePiece model: unknown model_type %d", model_type);
    }
    d.unigram = model_type == MODEL_TYPE_UNIGRAM;
    return spm_to_tokenizer_json(d);
}

} // namespace vt::tok
