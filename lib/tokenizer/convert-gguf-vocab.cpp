// GGUF vocabularies that vt's llama.cpp-style tokenizers do not run, turned
// into tokenizer.json: "bert" (WordPiece, as transformers' BertConverter)
// and "t5" (SentencePiece Unigram, through the same builder as .model files).
#include <cctype>
#include <string>

#include "core/error.h"
#include "model/gguf.h"
#include "tokenizer/convert-internal.h"
#include "tokenizer/convert.h"
#include "tokenizer/utf8.h"

namespace vt::tok {

namespace {

using nlohmann::json;

const char *const kPhantomSpace = "\xe2\x96\x81";  // U+2581

struct GgufVocab {
    std::vector<std::string_view> tokens;
    const GgufValue *types = nullptr;  // int32 array, or null
    const GgufValue *scores = nullptr; // float32 array, or null

    int32_t type(size_t i) const { return types ? static_cast<int32_t>(types->int_at(i)) : SPM_NORMAL; }
    float score(size_t i) const { return scores ? static_cast<float>(scores->float_at(i)) : 0.0f; }
};

GgufVocab read_vocab(const GgufFile &g) {
    GgufVocab v;
    const GgufValue *tokens = g.get_array("tokenizer.ggml.tokens", GgufType::STRING);
    if (!tokens || tokens->strs.empty()) fail(VT_ERR_FORMAT, "GGUF has no tokenizer.ggml.tokens");
    if (tokens->strs.size() > INT32_MAX) fail(VT_ERR_FORMAT, "tokenizer.ggml.tokens is too long");
    v.tokens = tokens->strs;
    for (size_t i = 0; i < v.tokens.size(); ++i) {
        if (v.tokens[i].empty()) fail(VT_ERR_FORMAT, "tokenizer.ggml.tokens[%zu] is empty", i);
        if (utf8_find_invalid(v.tokens[i]) != std::string_view::npos) {
            fail(VT_ERR_FORMAT, "tokenizer.ggml.tokens[%zu] is not valid UTF-8", i);
        }
    }
    v.types = g.get_array("tokenizer.ggml.token_type", GgufType::INT32);
    if (v.types && v.types->arr_n < v.tokens.size()) fail(VT_ERR_FORMAT, "tokenizer.ggml.token_type is shorter than the tokens");
    v.scores = g.get_array("tokenizer.ggml.scores", GgufType::FLOAT32);
    if (v.scores && v.scores->arr_n < v.tokens.size()) fail(VT_ERR_FORMAT, "tokenizer.ggml.scores is shorter than the tokens");
    return v;
}

// A token id from metadata, or -1 when absent or out of range.
int64_t read_id(const GgufFile &g, const char *key, size_t n_tokens) {
    const std::optional<uint64_t> id = g.get_uint(key);
    return id && *id < n_tokens ? static_cast<int64_t>(*id) : -1;
}

int64_t find_token(const GgufVocab &v, std::string_view text) {
    for (size_t i = 0; i < v.tokens.size(); ++i) {
        if (v.tokens[i] == text) return static_cast<int64_t>(i);
    }
    return -1;
}

// TemplateProcessing with `before` and `after` around each sequence; the
// second sequence of a pair gets type id `pair_type` (1 for BERT).
json template_processing(const std::vector<int64_t> &before, const std::vector<int64_t> &after,
                         const std::vector<std::string> &names, int pair_type) {
    auto tok = [&](int64_t id, int type_id) {
        return json{{"SpecialToken", {{"id", names[static_cast<size_t>(id)]}, {"type_id", type_id}}}};
    };
    auto seq = [](const char *which, int type_id) {
        return json{{"Sequence", {{"id", which}, {"type_id", type_id}}}};
    };
    json single = json::array(), pair = json::array(), specials = json::object();
    for (int64_t id : before) single.push_back(tok(id, 0)), pair.push_back(tok(id, 0));
    single.push_back(seq("A", 0));
    pair.push_back(seq("A", 0));
    for (int64_t id : after) single.push_back(tok(id, 0)), pair.push_back(tok(id, 0));
    pair.push_back(seq("B", pair_type));
    for (int64_t id : after) pair.push_back(tok(id, pair_type));
    for (const std::vector<int64_t> *ids : {&before, &after}) {
        for (int64_t id : *ids) {
            const std::string &name = names[static_cast<size_t>(id)];
            specials[name] = {{"id", name}, {"ids", json::array({id})}, {"tokens", json::array({name})}};
        }
    }
    return {{"type", "TemplateProcessing"}, {"single", single}, {"pair", pair}, {"special_tokens", specials}};
}

// llama.cpp's converter respells WordPiece tokens with a "phantom space":
// word starts gain a leading U+2581, "##" continuations lose their prefix,
// and bracketed or control tokens ("[CLS]", "[unused0]") stay as they are.
// This undoes it.
std::string wordpiece_text(std::string_view t, int32_t type) {
    if (type == SPM_CONTROL) return std::string(t);
    if (t.substr(0, 3) == kPhantomSpace) return std::string(t.substr(3));
    if (t.size() >= 2 && t.front() == '[' && t.back() == ']') return std::string(t);
    return "##" + std::string(t);
}

json convert_bert(const GgufFile &g) {
    const GgufVocab v = read_vocab(g);
    const size_t n = v.tokens.size();
    std::vector<std::string> names(n);
    json vocab = json::object();
    // BERT vocabularies are either all lowercase (uncased models) or not:
    // the GGUF does not carry do_lower_case, so infer it from the tokens.
    bool any_upper = false;
    for (size_t i = 0; i < n; ++i) {
        names[i] = wordpiece_text(v.tokens[i], v.type(i));
        vocab[names[i]] = i;
        if (v.type(i) == SPM_NORMAL && !(names[i].front() == '[' && names[i].back() == ']')) {
            for (char c : names[i]) any_upper |= c >= 'A' && c <= 'Z';
        }
    }

    int64_t unk = read_id(g, "tokenizer.ggml.unknown_token_id", n);
    if (unk < 0) unk = find_token(v, "[UNK]");
    if (unk < 0) fail(VT_ERR_FORMAT, "bert GGUF vocabulary has no unknown token");
    int64_t cls = read_id(g, "tokenizer.ggml.cls_token_id", n);
    if (cls < 0) cls = read_id(g, "tokenizer.ggml.bos_token_id", n);
    int64_t sep = read_id(g, "tokenizer.ggml.seperator_token_id", n);  // llama.cpp's spelling
    if (sep < 0) sep = read_id(g, "tokenizer.ggml.eos_token_id", n);

    json j = tokenizer_json_skeleton();
    for (size_t i = 0; i < n; ++i) {
        const int32_t t = v.type(i);
        if (t == SPM_CONTROL || t == SPM_UNKNOWN || static_cast<int64_t>(i) == unk) {
            j["added_tokens"].push_back(added_token_json(static_cast<int64_t>(i), names[i], true, false));
        }
    }
    j["normalizer"] = {{"type", "BertNormalizer"}, {"clean_text", true}, {"handle_chinese_chars", true},
                       {"strip_accents", nullptr}, {"lowercase", !any_upper}};
    j["pre_tokenizer"] = {{"type", "BertPreTokenizer"}};
    if (cls >= 0 && sep >= 0) j["post_processor"] = template_processing({cls}, {sep}, names, 1);
    j["decoder"] = {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}};
    j["model"] = {{"type", "WordPiece"}, {"unk_token", names[static_cast<size_t>(unk)]},
                  {"continuing_subword_prefix", "##"}, {"max_input_chars_per_word", 100}, {"vocab", std::move(vocab)}};
    return j;
}

json convert_t5(const GgufFile &g) {
    const GgufVocab v = read_vocab(g);
    if (!v.scores) fail(VT_ERR_FORMAT, "t5 GGUF vocabulary has no tokenizer.ggml.scores");
    const size_t n = v.tokens.size();

    SpmDescription d;
    d.unigram = true;
    d.pieces.resize(n);
    int64_t first_unknown = -1;
    for (size_t i = 0; i < n; ++i) {
        d.pieces[i] = {std::string(v.tokens[i]), v.score(i), v.type(i)};
        d.byte_fallback |= d.pieces[i].type == SPM_BYTE;
        if (d.pieces[i].type == SPM_UNKNOWN && first_unknown < 0) first_unknown = static_cast<int64_t>(i);
    }
    int64_t unk = read_id(g, "tokenizer.ggml.unknown_token_id", n);
    if (unk < 0) unk = first_unknown;
    if (unk < 0) fail(VT_ERR_FORMAT, "t5 GGUF vocabulary has no unknown token");
    d.unk_id = static_cast<int32_t>(unk);
    d.unk_piece = std::string(v.tokens[static_cast<size_t>(unk)]);

    if (const GgufKV *kv = g.find("tokenizer.ggml.precompiled_charsmap")) {
        const GgufValue &a = kv->value;
        if (a.type != GgufType::ARRAY || (a.arr_type != GgufType::UINT8 && a.arr_type != GgufType::INT8)) {
            fail(VT_ERR_FORMAT, "tokenizer.ggml.precompiled_charsmap must be a uint8 array");
        }
        d.precompiled_charsmap.assign(reinterpret_cast<const char *>(a.raw), static_cast<size_t>(a.arr_n));
    }
    // Defaults as llama.cpp's UGM tokenizer.
    d.add_dummy_prefix = g.get_bool("tokenizer.ggml.add_space_prefix").value_or(true);
    d.remove_extra_whitespaces = g.get_bool("tokenizer.ggml.remove_extra_whitespaces").value_or(false);
    d.escape_whitespaces = g.get_bool("tokenizer.ggml.escape_whitespaces").value_or(true);

    json j = spm_to_tokenizer_json(d);

    // T5 appends </s> (llama.cpp: add_eos defaults to true for t5).
    int64_t eos = read_id(g, "tokenizer.ggml.eos_token_id", n);
    if (eos < 0) eos = find_token(v, "</s>");
    int64_t bos = read_id(g, "tokenizer.ggml.bos_token_id", n);
    std::vector<int64_t> before, after;
    if (g.get_bool("tokenizer.ggml.add_bos_token").value_or(false) && bos >= 0) before.push_back(bos);
    if (g.get_bool("tokenizer.ggml.add_eos_token").value_or(true) && eos >= 0) after.push_back(eos);
    if (!before.empty() || !after.empty()) {
        std::vector<std::string> names(v.tokens.begin(), v.tokens.end());
        j["post_processor"] = template_processing(before, after, names, 0);
    }
    return j;
}

} // namespace

json convert_gguf_vocab(const GgufFile &gguf) {
    const std::optional<std::string_view> model = gguf.get_string("tokenizer.ggml.model");
    if (!model) fail(VT_ERR_FORMAT, "GGUF has no tokenizer.ggml.model");
    if (*model == "bert") return convert_bert(gguf);
    if (*model == "t5") return convert_t5(gguf);
    fail(VT_ERR_UNSUPPORTED, "GGUF tokenizer model '%.*s' cannot be converted (bert, t5)",
         static_cast<int>(model->size()), model->data());
}

} // namespace vt::tok
