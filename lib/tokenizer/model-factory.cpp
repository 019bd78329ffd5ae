// make_model: tokenizer.json "model" nodes -> the model classes. Field names
// and defaults are those of tokenizers' serde code for each model.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/model-bpe.h"
#include "tokenizer/model-unigram.h"
#include "tokenizer/model-wordlevel.h"
#include "tokenizer/model-wordpiece.h"
#include "tokenizer/pipeline.h"

namespace vt::tok {

namespace {

using nlohmann::json;

const json *field(const json &j, const char *name) {
    auto it = j.find(name);
    return it == j.end() || it->is_null() ? nullptr : &*it;
}

std::optional<std::string> opt_string(const json &j, const char *model, const char *name) {
    const json *f = field(j, name);
    if (!f) return std::nullopt;
    if (!f->is_string()) fail(VT_ERR_FORMAT, "%s model: \"%s\" must be a string", model, name);
    return f->get<std::string>();
}

bool opt_bool(const json &j, const char *model, const char *name, bool def) {
    const json *f = field(j, name);
    if (!f) return def;
    if (!f->is_boolean()) fail(VT_ERR_FORMAT, "%s model: \"%s\" must be a boolean", model, name);
    return f->get<bool>();
}

// One past the largest id of a {"text": id} vocabulary: ids from there on
// belong to added tokens.
uint32_t object_vocab_size(const json &j, const char *model) {
    const json *v = field(j, "vocab");
    if (!v) return 0;  // no model tokens at all
    if (!v->is_object()) fail(VT_ERR_FORMAT, "%s model: \"vocab\" must be an object of token -> id", model);
    int64_t end = 0;
    for (const auto &[text, id] : v->items()) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= INT32_MAX) {
            fail(VT_ERR_FORMAT, "%s model: vocab[\"%s\"] is not a valid id", model, text.c_str());
        }
        end = std::max(end, id.get<int64_t>() + 1);
    }
    return static_cast<uint32_t>(end);
}

std::unique_ptr<Model> make_bpe(const json &j, const Vocab &vocab) {
    BpeOptions o;
    if (const json *d = field(j, "dropout")) {
        if (!d->is_number()) fail(VT_ERR_FORMAT, "BPE model: \"dropout\" must be a number");
        const double p = d->get<double>();
        if (p < 0 || p > 1) fail(VT_ERR_FORMAT, "BPE model: \"dropout\" %g is not in [0, 1]", p);
        if (p > 0) fail(VT_ERR_UNSUPPORTED, "BPE model: dropout %g is random; only 0 or null is supported", p);
    }
    o.unk_token = opt_string(j, "BPE", "unk_token");
    o.continuing_subword_prefix = opt_string(j, "BPE", "continuing_subword_prefix").value_or("");
    o.end_of_word_suffix = opt_string(j, "BPE", "end_of_word_suffix").value_or("");
    o.fuse_unk = opt_bool(j, "BPE", "fuse_unk", false);
    o.byte_fallback = opt_bool(j, "BPE", "byte_fallback", false);
    o.ignore_merges = opt_bool(j, "BPE", "ignore_merges", false);
    o.model_vocab_size = object_vocab_size(j, "BPE");

    if (const json *m = field(j, "merges")) {
        if (!m->is_array()) fail(VT_ERR_FORMAT, "BPE model: \"merges\" must be an array");
        o.merges.reserve(m->size());
        for (size_t i = 0; i < m->size(); ++i) {
            const json &e = (*m)[i];
            if (e.is_string()) {
                // "left right": exactly one space, as tokenizers requires.
                const std::string &s = e.get_ref<const std::string &>();
                const size_t sp = s.find(' ');
                if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos) {
                    fail(VT_ERR_FORMAT, "BPE model: merges[%zu] \"%s\" is not \"left right\"", i, s.c_str());
                }
                o.merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
            } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
                o.merges.emplace_back(e[0].get<std::string>(), e[1].get<std::string>());
            } else {
                fail(VT_ERR_FORMAT, "BPE model: merges[%zu] is neither \"left right\" nor [left, right]", i);
            }
        }
    }
    return std::make_unique<BpeModel>(vocab, o);
}

std::unique_ptr<Model> make_wordpiece(const json &j, const Vocab &vocab) {
    WordPieceOptions o;
    if (auto s = opt_string(j, "WordPiece", "unk_token")) o.unk_token = *s;
    if (auto s = opt_string(j, "WordPiece", "continuing_subword_prefix")) o.continuing_subword_prefix = *s;
    if (const json *m = field(j, "max_input_chars_per_word")) {
        if (!m->is_number_integer() || m->get<int64_t>() < 0) {
            fail(VT_ERR_FORMAT, "WordPiece model: \"max_input_chars_per_word\" must be a non-negative integer");
        }
        o.max_input_chars_per_word = m->get<size_t>();
    }
    o.model_vocab_size = object_vocab_size(j, "WordPiece");
    return std::make_unique<WordPieceModel>(vocab, o);
}

std::unique_ptr<Model> make_wordlevel(const json &j, const Vocab &vocab) {
    WordLevelOptions o;
    if (auto s = opt_string(j, "WordLevel", "unk_token")) o.unk_token = *s;
    o.model_vocab_size = object_vocab_size(j, "WordLevel");
    return std::make_unique<WordLevelModel>(vocab, o);
}

std::unique_ptr<Model> make_unigram(const json &j, const Vocab &vocab) {
    UnigramOptions o;
    if (const json *u = field(j, "unk_id")) {
        if (!u->is_number_integer() || u->get<int64_t>() < 0 || u->get<int64_t>() >= INT32_MAX) {
            fail(VT_ERR_FORMAT, "Unigram model: \"unk_id\" must be a non-negative integer");
        }
        o.unk_id = u->get<int32_t>();
    }
    o.byte_fallback = opt_bool(j, "Unigram", "byte_fallback", false);
    // Not an HF field: set by convert_spm_model (convert.h).
    o.float_scores = opt_bool(j, "Unigram", "vt_float_scores", false);
    const json *v = field(j, "vocab");
    if (v && !v->is_array()) fail(VT_ERR_FORMAT, "Unigram model: \"vocab\" must be an array of [piece, score]");
    const size_t n = v ? v->size() : 0;
    o.scores.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        const json &e = (*v)[i];
        if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number()) {
            fail(VT_ERR_FORMAT, "Unigram model: vocab[%zu] is not [piece, score]", i);
        }
        o.scores.push_back(e[1].get<double>());
    }
    if (n == 0 && o.unk_id >= 0) fail(VT_ERR_FORMAT, "Unigram model: the vocabulary is empty but unk_id is set");
    if (n > vocab.size()) fail(VT_ERR_FORMAT, "Unigram model: vocab has %zu pieces, the token table only %u", n, vocab.size());
    o.model_vocab_size = static_cast<uint32_t>(n);
    return std::make_unique<UnigramModel>(vocab, o);
}

} // namespace

std::unique_ptr<Model> make_model(const nlohmann::json &j, const Vocab &vocab) {
    if (j.is_null()) return nullptr;
    if (!j.is_object()) fail(VT_ERR_FORMAT, "model: must be an object");
    try {
        std::string type;
        if (const json *t = field(j, "type")) {
            if (!t->is_string()) fail(VT_ERR_FORMAT, "model: \"type\" must be a string");
            type = t->get<std::string>();
        } else if (field(j, "merges")) {
            type = "BPE";  // tokenizers accepts an untagged BPE node
        } else {
            fail(VT_ERR_FORMAT, "model: missing \"type\"");
        }
        if (type == "BPE") return make_bpe(j, vocab);
        if (type == "WordPiece") return make_wordpiece(j, vocab);
        if (type == "Unigram") return make_unigram(j, vocab);
        if (type == "WordLevel") return make_wordlevel(j, vocab);
        fail(VT_ERR_UNSUPPORTED, "model: unknown type \"%s\"", type.c_str());
    } catch (const nlohmann::json::exception &e) {
        fail(VT_ERR_FORMAT, "model: malformed node (%s)", e.what());
    }
}

} // namespace vt::tok
