// Hugging Face post-processors (tokenizers/src/processors) reduced to what
// one sequence with add_special needs: the ids put before and after it.
#include "tokenizer/pipeline.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/hf-json.h"

namespace vt::tok {
namespace {

using hf::json;

// Bert/Roberta's ["[CLS]", 101] pairs: HF adds the id as written.
int32_t pair_id(const json &j, const char *key, const char *where) {
    const json &p = hf::member(j, key, where);
    if (!p.is_array() || p.size() != 2 || !p[0].is_string() || !p[1].is_number_integer())
        fail(VT_ERR_FORMAT, "%s: field \"%s\" is not a [token, id] pair", where, key);
    return p[1].get<int32_t>();
}

// TemplateProcessing's "single": the special tokens before the $A piece go
// in front, those after it behind; each names an entry of
// "special_tokens", whose "ids" are added (an entry may hold several).
PostProcessor template_single(const json &j, const Vocab &vocab, const char *where) {
    const json &single = hf::member(j, "single", where);
    if (!single.is_array()) fail(VT_ERR_FORMAT, "%s: field \"single\" is not an array", where);
    const json *specials = hf::optional_member(j, "special_tokens");
    PostProcessor pp;
    bool seen_sequence = false;
    for (const json &piece : single) {
        if (!piece.is_object()) fail(VT_ERR_FORMAT, "%s: a \"single\" entry is not an object", where);
        if (piece.contains("Sequence")) {
            seen_sequence = true;
            continue;
        }
        const json &st = hf::member(piece, "SpecialToken", where);
        const std::string name = hf::str_member(st, "id", where);
        std::vector<int32_t> ids;
        const json *entry = nullptr;
        if (specials && specials->is_object()) {
            auto it = specials->find(name);
            if (it != specials->end()) entry = &*it;
        }
        if (entry) {
            const json &list = hf::member(*entry, "ids", where);
            if (!list.is_array()) fail(VT_ERR_FORMAT, "%s: special token \"%s\": \"ids\" is not an array", where, name.c_str());
            for (const json &id : list) {
                if (!id.is_number_integer())
                    fail(VT_ERR_FORMAT, "%s: special token \"%s\": an id is not an integer", where, name.c_str());
                ids.push_back(id.get<int32_t>());
            }
        } else {
            // HF refuses a template naming a token missing from the map;
            // a vocabulary entry of that text is the only sensible reading.
            const int32_t id = vocab.find(name);
            if (id < 0) fail(VT_ERR_FORMAT, "%s: special token \"%s\" is not in special_tokens", where, name.c_str());
            ids.push_back(id);
        }
        auto &dst = seen_sequence ? pp.suffix : pp.prefix;
        dst.insert(dst.end(), ids.begin(), ids.end());
    }
    return pp;
}

PostProcessor make(const json &j, const Vocab &vocab) {
    if (!j.is_object()) fail(VT_ERR_FORMAT, "post_processor: node is not an object");
    const std::string type = hf::type_of(j, "post_processor");
    const std::string where_s = "post_processor " + type;
    const char *where = where_s.c_str();

    if (type == "TemplateProcessing") return template_single(j, vocab, where);
    if (type == "BertProcessing" || type == "RobertaProcessing") {
        PostProcessor pp;
        pp.prefix.push_back(pair_id(j, "cls", where));
        pp.suffix.push_back(pair_id(j, "sep", where));
        return pp;
    }
    if (type == "ByteLevel") return {};
    if (type == "Sequence") {
        // Each processor wraps what the previous ones produced.
        const json &list = hf::member(j, "processors", where);
        if (!list.is_array()) fail(VT_ERR_FORMAT, "%s: field \"processors\" is not an array", where);
        PostProcessor all;
        for (const json &p : list) {
            PostProcessor one = make(p, vocab);
            all.prefix.insert(all.prefix.begin(), one.prefix.begin(), one.prefix.end());
            all.suffix.insert(all.suffix.end(), one.suffix.begin(), one.suffix.end());
        }
        return all;
    }
    fail(VT_ERR_UNSUPPORTED, "post_processor type \"%s\" is not supported", type.c_str());
}

} // namespace

PostProcessor make_post_processor(const nlohmann::json &j, const Vocab &vocab) {
    if (j.is_null()) return {};
    try {
        return make(j, vocab);
    } catch (const nlohmann::json::exception &e) {
        fail(VT_ERR_FORMAT, "post_processor: malformed node: %s", e.what());
    }
}

} // namespace vt::tok
