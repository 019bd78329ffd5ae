// Tokenizer::from_gguf: reads tokenizer.ggml.* metadata into a Vocab and
// picks the model. Defaults follow llama.cpp's llama_vocab::load so a GGUF
// tokenizes the same here as there.
#include <cstring>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/gguf.h"
#include "tokenizer/bpe.h"
#include "tokenizer/convert.h"
#include "tokenizer/pipeline-tokenizer.h"
#include "tokenizer/spm.h"
#include "tokenizer/tokenizer.h"

namespace vt {

namespace {

using tok::Vocab;

const GgufValue *find_array(const GgufFile &g, const char *key) {
    const GgufKV *kv = g.find(key);
    if (!kv) return nullptr;
    if (kv->value.type != GgufType::ARRAY) fail(VT_ERR_FORMAT, "GGUF key %s is not an array", key);
    return &kv->value;
}

// Element i of a fixed-size numeric array; the array may be unaligned in
// the mapping, hence memcpy.
template <typename T>
T array_elem(const GgufValue &v, uint64_t i) {
    T x;
    std::memcpy(&x, v.raw + i * sizeof(T), sizeof(T));
    return x;
}

// A special id from metadata; out-of-range ids keep the default (llama.cpp
// warns and does the same).
void read_id(const GgufFile &g, const char *key, const Vocab &v, int32_t &id) {
    const GgufKV *kv = g.find(key);
    if (!kv) return;
    const std::optional<uint64_t> u = g.get_uint(key);
    if (u && *u < v.size()) id = static_cast<int32_t>(*u);
}

Vocab read_vocab(const GgufFile &g) {
    const GgufValue *tokens = find_array(g, "tokenizer.ggml.tokens");
    if (!tokens || tokens->arr_type != GgufType::STRING) {
        fail(VT_ERR_FORMAT, "GGUF has no tokenizer.ggml.tokens string array");
    }
    const uint64_t n = tokens->strs.size();
    if (n == 0 || n > INT32_MAX) fail(VT_ERR_FORMAT, "tokenizer.ggml.tokens has %llu entries", (unsigned long long)n);

    const GgufValue *scores = find_array(g, "tokenizer.ggml.scores");
    if (scores) {
        if (scores->arr_type != GgufType::FLOAT32 && scores->arr_type != GgufType::INT32) {
            fail(VT_ERR_FORMAT, "tokenizer.ggml.scores must be a float32 or int32 array");
        }
        if (scores->arr_n < n) fail(VT_ERR_FORMAT, "tokenizer.ggml.scores has %llu entries for %llu tokens",
                                    (unsigned long long)scores->arr_n, (unsigned long long)n);
    }
    const GgufValue *types = find_array(g, "tokenizer.ggml.token_type");
    if (types) {
        if (types->arr_type != GgufType::INT32) fail(VT_ERR_FORMAT, "tokenizer.ggml.token_type must be an int32 array");
        if (types->arr_n < n) fail(VT_ERR_FORMAT, "tokenizer.ggml.token_type has %llu entries for %llu tokens",
                                   (unsigned long long)types->arr_n, (unsigned long long)n);
    }

    Vocab v;
    std::string placeholder;
    for (uint64_t i = 0; i < n; ++i) {
        std::string_view text = tokens->strs[i];
        if (text.empty()) {  // as llama.cpp: keep ids dense, never match
            placeholder = "[EMPTY_" + std::to_string(i) + "]";
            text = placeholder;
        }
        float score = 0.0f;
        if (scores) {
            score = scores->arr_type == GgufType::FLOAT32 ? array_elem<float>(*scores, i)
                                                          : static_cast<float>(array_elem<int32_t>(*scores, i));
        }
        const uint32_t attr = types ? tok::attr_from_gguf_type(array_elem<int32_t>(*types, i)) : tok::ATTR_NORMAL;
        v.add_token(text, score, attr);
    }
    v.finalize();
    return v;
}

// Phi-3's converter leaves out the rstrip flags of its added tokens;
// llama.cpp patches them by model name and so do we.
void apply_name_quirks(const GgufFile &g, Vocab &v) {
    std::string name(g.get_string("general.name").value_or(""));
    for (char &c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (name.find("phi-3") == std::string::npos && name.find("phi3") == std::string::npos) return;
    for (uint32_t i = 0; i < v.size(); ++i) {
        const auto id = static_cast<int32_t>(i);
        if (v.attr(id) & (tok::ATTR_CONTROL | tok::ATTR_USER_DEFINED | tok::ATTR_UNKNOWN)) {
            v.set_attr(id, v.attr(id) | tok::ATTR_RSTRIP);
        }
    }
    if (int32_t id = v.find("</s>"); id >= 0) v.set_attr(id, v.attr(id) | tok::ATTR_RSTRIP);
    for (const char *t : {"<unk>", "<s>", "<|endoftext|>"}) {
        if (int32_t id = v.find(t); id >= 0) v.set_attr(id, v.attr(id) & ~tok::ATTR_RSTRIP);
    }
}

} // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const GgufFile &g) {
    const std::optional<std::string_view> model = g.get_string("tokenizer.ggml.model");
    if (!model) fail(VT_ERR_FORMAT, "GGUF has no tokenizer.ggml.model");
    const std::string pre_name(g.get_string("tokenizer.ggml.pre").value_or(""));

    // WordPiece and Unigram vocabularies run on the tokenizer.json pipeline,
    // converted the way Hugging Face's converters build them.
    if (*model == "bert" || *model == "t5") {
        return std::make_unique<tok::PipelineTokenizer>(tok::convert_gguf_vocab(g), nullptr);
    }
    const bool is_spm = *model == "llama";
    const bool is_bpe = *model == "gpt2";
    if (!is_spm && !is_bpe) {
        fail(VT_ERR_UNSUPPORTED, "tokenizer model '%.*s' is not supported (supported: gpt2, llama, bert, t5)",
             static_cast<int>(model->size()), model->data());
    }

    tok::PreTokenizerSpec pre;
    if (is_bpe && !tok::lookup_pre_tokenizer(pre_name, pre)) {
        fail(VT_ERR_UNSUPPORTED, "pre-tokenizer '%s' is not supported", pre_name.c_str());
    }

    Vocab v = read_vocab(g);

    // Defaults per model type (llama.cpp), then what the metadata says.
    if (is_spm) {
        v.bos = 1; v.eos = 2; v.unk = 0;
        v.add_bos = true;
        v.add_eos = false;
    } else {
        // llama.cpp defaults BPE BOS/EOS to 11 (a Falcon leftover); a
        // missing id is "none" here instead.
        v.add_bos = pre.add_bos_default == 1;
        v.add_eos = false;
    }
    for (int32_t *id : {&v.bos, &v.eos, &v.unk}) {
        if (*id >= 0 && static_cast<uint32_t>(*id) >= v.size()) *id = -1;
    }
    read_id(g, "tokenizer.ggml.bos_token_id", v, v.bos);
    read_id(g, "tokenizer.ggml.eos_token_id", v, v.eos);
    read_id(g, "tokenizer.ggml.eot_token_id", v, v.eot);
    read_id(g, "tokenizer.ggml.eom_token_id", v, v.eom);
    read_id(g, "tokenizer.ggml.unknown_token_id", v, v.unk);
    read_id(g, "tokenizer.ggml.padding_token_id", v, v.pad);
    read_id(g, "tokenizer.ggml.prefix_token_id", v, v.fim_pre);  // deprecated names first
    read_id(g, "tokenizer.ggml.suffix_token_id", v, v.fim_suf);
    read_id(g, "tokenizer.ggml.middle_token_id", v, v.fim_mid);
    read_id(g, "tokenizer.ggml.fim_pre_token_id", v, v.fim_pre);
    read_id(g, "tokenizer.ggml.fim_suf_token_id", v, v.fim_suf);
    read_id(g, "tokenizer.ggml.fim_mid_token_id", v, v.fim_mid);
    read_id(g, "tokenizer.ggml.fim_pad_token_id", v, v.fim_pad);
    read_id(g, "tokenizer.ggml.fim_rep_token_id", v, v.fim_rep);
    read_id(g, "tokenizer.ggml.fim_sep_token_id", v, v.fim_sep);
    if (auto b = g.get_bool("tokenizer.ggml.add_bos_token")) v.add_bos = *b;
    if (auto b = g.get_bool("tokenizer.ggml.add_eos_token")) v.add_eos = *b;

    apply_name_quirks(g, v);
    v.derive_specials();

    if (is_spm) {
        bool add_space_prefix = true;
        if (auto b = g.get_bool("tokenizer.ggml.add_space_prefix")) add_space_prefix = *b;
        return std::make_unique<tok::SpmTokenizer>(std::move(v), add_space_prefix);
    }

    const GgufValue *merges = find_array(g, "tokenizer.ggml.merges");
    if (!merges || merges->arr_type != GgufType::STRING) {
        fail(VT_ERR_FORMAT, "BPE tokenizer without a tokenizer.ggml.merges string array");
    }
    return std::make_unique<tok::ByteLevelBpeTokenizer>(std::move(v), merges->strs, pre);
}

} // namespace vt
