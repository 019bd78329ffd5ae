#include "tokenizer/pipeline-tokenizer.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/utf8.h"

namespace vt::tok {

using nlohmann::json;

namespace {

// How far past the model's vocabulary an added token's own id may lie
// (tiktoken's gaps are a few ids); a file cannot make us allocate 2^31 slots.
constexpr size_t kMaxIdGap = 1 << 16;

// A token name in tokenizer_config.json: a string, or an object with
// "content" (AddedToken's serialisation).
std::optional<std::string> config_token(const json &config, const char *key) {
    auto it = config.find(key);
    if (it == config.end()) return std::nullopt;
    if (it->is_string()) return it->get<std::string>();
    if (it->is_object()) {
        auto c = it->find("content");
        if (c != it->end() && c->is_string()) return c->get<std::string>();
    }
    return std::nullopt;
}

// Per-thread scratch so encode() allocates nothing once warm.
struct Scratch {
    std::vector<AddedTokenMatcher::Match> raw, normalized;
    std::string norm_text;
    Pieces a, b;
};

} // namespace

// ---------------------------------------------------------------------------
// Construction
// ---------------------------------------------------------------------------

PipelineTokenizer::PipelineTokenizer(const json &doc, const json *config) {
    if (!doc.is_object()) fail(VT_ERR_FORMAT, "tokenizer.json is not a JSON object");
    read_vocab(doc, config);

    auto stage = [&](const char *key) -> const json & {
        static const json null_node;
        auto it = doc.find(key);
        return it == doc.end() ? null_node : *it;
    };
    normalizer_ = make_normalizer(stage("normalizer"));
    // Normalized added tokens are looked for in normalized text, so their
    // own text is normalized first (HF builds that trie the same way).
    for (AddedToken &t : added_) {
        t.pattern = t.content;
        if (t.normalized && normalizer_) normalizer_->normalize(t.content, t.pattern);
        // HF's id_to_token (and so decode) gives the normalized text too.
        if (t.pattern != t.content) normalized_text_[t.id] = t.pattern;
    }
    raw_matcher_ = AddedTokenMatcher(added_, false);
    normalized_matcher_ = AddedTokenMatcher(added_, true);
    pre_tokenizer_ = make_pre_tokenizer(stage("pre_tokenizer"));
    model_ = make_model(doc.at("model"), vocab_);
    decoder_ = make_decoder(stage("decoder"));
    post_ = make_post_processor(stage("post_processor"), vocab_);

    if (vocab_.bos < 0 && !post_.prefix.empty()) vocab_.bos = post_.prefix.front();
    if (config) read_config(*config);
    vocab_.derive_specials();
}

PipelineTokenizer::~PipelineTokenizer() = default;

void PipelineTokenizer::read_vocab(const json &doc, const json *config) {
    auto model = doc.find("model");
    if (model == doc.end() || !model->is_object()) fail(VT_ERR_FORMAT, "tokenizer.json has no 'model' object");
    auto mv = model->find("vocab");
    if (mv == model->end()) fail(VT_ERR_FORMAT, "tokenizer.json: model has no 'vocab'");

    struct Entry {
        std::string text;
        float score = 0.0f;
        uint32_t attr = ATTR_UNUSED;
        bool set = false;
    };
    std::vector<Entry> by_id;
    auto put = [&](uint64_t id, std::string text, float score, uint32_t attr) {
        if (id >= static_cast<uint64_t>(INT32_MAX)) fail(VT_ERR_FORMAT, "tokenizer.json: token id %llu out of range",
                                                         static_cast<unsigned long long>(id));
        if (id >= by_id.size()) by_id.resize(id + 1);
        by_id[id] = {std::move(text), score, attr, true};
    };

    if (mv->is_object()) {  // BPE, WordPiece, WordLevel: text -> id
        by_id.reserve(mv->size());
        for (auto it = mv->begin(); it != mv->end(); ++it) {
            if (!is_token_id(it.value()))
                fail(VT_ERR_FORMAT, "tokenizer.json: vocab id of '%s' is not a non-negative integer", it.key().c_str());
            put(it.value().get<uint64_t>(), it.key(), 0.0f, ATTR_NORMAL);
        }
    } else if (mv->is_array()) {  // Unigram: [piece, score] by id
        by_id.reserve(mv->size());
        for (size_t i = 0; i < mv->size(); ++i) {
            const json &e = (*mv)[i];
            if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number())
                fail(VT_ERR_FORMAT, "tokenizer.json: vocab entry %zu is not [piece, score]", i);
            put(i, e[0].get<std::string>(), e[1].get<float>(), ATTR_NORMAL);
        }
    } else {
        fail(VT_ERR_FORMAT, "tokenizer.json: model 'vocab' is neither an object nor an array");
    }

    // A content the model knows keeps the model's id (as HF). Otherwise the
    // token's "id" is used when that slot is free; HF instead renumbers new
    // tokens from the end of the model's vocabulary, which is the same for
    // every consistent file but would lose the gaps of tiktoken's special
    // ids (cl100k's <|endoftext|> is 100257 after 100256 ranks; p50k's is
    // 50256, a hole inside its ranks), so only a taken slot falls back to
    // HF's next-id rule.
    const size_t model_size = by_id.size();
    std::unordered_map<std::string, int32_t> model_ids;
    model_ids.reserve(model_size);
    for (size_t i = 0; i < model_size; ++i) {
        if (by_id[i].set) model_ids.emplace(by_id[i].text, static_cast<int32_t>(i));
    }
    int32_t max_added = -1;
    auto read_added = [&](const json &list) {
        for (const json &j : list) {
            AddedToken t = read_added_token(j);
            auto same = std::find_if(added_.begin(), added_.end(),
                                     [&](const AddedToken &a) { return a.content == t.content; });
            if (same != added_.end()) continue;  // tokenizer.json wins over the config
            if (auto m = model_ids.find(t.content); m != model_ids.end()) {
                t.id = m->second;
            } else if (static_cast<size_t>(t.id) < model_size + kMaxIdGap &&
                       (static_cast<size_t>(t.id) >= by_id.size() || !by_id[t.id].set)) {
                put(static_cast<uint64_t>(t.id), t.content, 0.0f, 0);
            } else {
                t.id = max_added >= static_cast<int32_t>(model_size) ? max_added + 1 : static_cast<int32_t>(model_size);
                put(static_cast<uint64_t>(t.id), t.content, 0.0f, 0);
            }
            max_added = std::max(max_added, t.id);
            by_id[t.id].attr = t.special ? ATTR_CONTROL : ATTR_USER_DEFINED;
            added_.push_back(std::move(t));
        }
    };
    if (auto at = doc.find("added_tokens"); at != doc.end() && !at->is_null()) {
        if (!at->is_array()) fail(VT_ERR_FORMAT, "tokenizer.json: 'added_tokens' is not an array");
        read_added(*at);
    }
    // transformers keeps added tokens in tokenizer_config.json too
    // ("added_tokens_decoder": {"id": {...}}), sometimes only there; it adds
    // those not already present, in id order.
    if (config) {
        if (auto atd = config->find("added_tokens_decoder"); atd != config->end() && atd->is_object()) {
            std::vector<std::pair<uint64_t, json>> list;
            for (auto it = atd->begin(); it != atd->end(); ++it) {
                json t = it.value();
                try {
                    t["id"] = std::stoull(it.key());
                } catch (const std::exception &) {
                    fail(VT_ERR_FORMAT, "tokenizer_config.json: added_tokens_decoder key '%s' is not an id", it.key().c_str());
                }
                list.emplace_back(t["id"].get<uint64_t>(), std::move(t));
            }
            std::sort(list.begin(), list.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
            json arr = json::array();
            for (auto &e : list) arr.push_back(std::move(e.second));
            read_added(arr);
        }
    }

    if (by_id.empty()) fail(VT_ERR_FORMAT, "tokenizer.json: empty vocabulary");
    special_.assign(by_id.size(), 0);
    for (const AddedToken &t : added_) special_[t.id] = t.special;
    for (size_t i = 0; i < by_id.size(); ++i) {
        Entry &e = by_id[i];
        // Ids no token claims stay dense and unmatchable, as in GGUF.
        if (!e.set) e.text = "[vt:unused " + std::to_string(i) + "]";
        vocab_.add_token(e.text, e.score, e.attr);
    }
    vocab_.finalize();
}

void PipelineTokenizer::read_config(const json &config) {
    if (!config.is_object()) fail(VT_ERR_FORMAT, "tokenizer_config.json is not a JSON object");
    auto id_of = [&](const char *key) -> int32_t {
        std::optional<std::string> name = config_token(config, key);
        return name ? vocab_.find(*name) : -1;
    };
    if (int32_t id = id_of("bos_token"); id >= 0) vocab_.bos = id;
    if (int32_t id = id_of("eos_token"); id >= 0) vocab_.eos = id;
    if (int32_t id = id_of("unk_token"); id >= 0) vocab_.unk = id;
    if (int32_t id = id_of("pad_token"); id >= 0) vocab_.pad = id;

    // transformers' Llama/Gemma tokenizers rebuild the post-processor from
    // add_bos_token / add_eos_token ("<bos> $A <eos>"); where the config
    // states them, they decide.
    auto flag_of = [&](const char *key) -> std::optional<bool> {
        auto it = config.find(key);
        if (it == config.end() || !it->is_boolean()) return std::nullopt;
        return it->get<bool>();
    };
    const std::optional<bool> add_bos = flag_of("add_bos_token"), add_eos = flag_of("add_eos_token");
    if (add_bos) {
        post_.prefix.clear();
        if (*add_bos && vocab_.bos >= 0) post_.prefix.push_back(vocab_.bos);
    }
    if (add_eos) {
        post_.suffix.clear();
        if (*add_eos && vocab_.eos >= 0) post_.suffix.push_back(vocab_.eos);
    }
}

// ---------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------

namespace {
Scratch &scratch(int depth) {
    // Two levels: the raw-text split, and the normalized one inside it.
    thread_local Scratch s[2];
    return s[depth];
}
} // namespace

std::vector<int32_t> PipelineTokenizer::encode(std::string_view text, bool add_special,
                                               const SpecialGate &specials) const {
    utf8_validate(text);
    if (text.size() > UINT32_MAX) fail(VT_ERR_INVALID_ARGUMENT, "tokenizer input over 4 GiB");

    std::vector<int32_t> out;
    out.reserve(text.size() / 3 + 8);
    if (add_special) out.insert(out.end(), post_.prefix.begin(), post_.prefix.end());

    if (raw_matcher_.empty()) {
        if (!text.empty()) encode_fragment(text, true, specials, out);
    } else {
        std::vector<AddedTokenMatcher::Match> &frags = scratch(0).raw;
        frags.clear();
        raw_matcher_.split(text, specials, frags);
        // encode_fragment uses the other scratch level, so `frags` stays valid.
        for (const auto &m : frags) {
            if (m.token >= 0) out.push_back(added_[m.token].id);
            else encode_fragment(text.substr(m.begin, m.end - m.begin), m.begin == 0, specials.at(m.begin), out);
        }
    }

    if (add_special) out.insert(out.end(), post_.suffix.begin(), post_.suffix.end());
    return out;
}

void PipelineTokenizer::encode_fragment(std::string_view text, bool at_origin, const SpecialGate &specials,
                                        std::vector<int32_t> &out) const {
    Scratch &s = scratch(1);
    std::string_view norm = text;
    if (normalizer_) {
        normalizer_->normalize(text, s.norm_text);
        norm = s.norm_text;
    }
    if (norm.empty()) return;
    if (normalized_matcher_.empty()) {
        encode_normalized(norm, at_origin, out);
        return;
    }
    std::vector<AddedTokenMatcher::Match> &frags = s.normalized;
    frags.clear();
    // Offsets in the normalized text match the raw ones only when the
    // normalizer changed nothing; otherwise a special token may match in it
    // only if the whole fragment is free of gated (content) bytes.
    const bool same = norm.data() == text.data() || norm == text;
    const SpecialGate whole(specials.allows(0, text.size()));
    normalized_matcher_.split(norm, same ? specials : whole, frags);
    for (const auto &m : frags) {
        if (m.token >= 0) out.push_back(added_[m.token].id);
        else encode_normalized(norm.substr(m.begin, m.end - m.begin), at_origin && m.begin == 0, out);
    }
}

void PipelineTokenizer::encode_normalized(std::string_view text, bool at_origin, std::vector<int32_t> &out) const {
    if (!pre_tokenizer_) {
        model_->tokenize(text, out);
        return;
    }
    Scratch &s = scratch(1);
    s.a.clear();
    s.b.clear();
    s.a.push(text);
    pre_tokenizer_->apply(s.a, at_origin, s.b);
    for (size_t i = 0; i < s.b.size(); ++i) {
        if (s.b.spans[i].len > 0) model_->tokenize(s.b[i], out);
    }
}

// ---------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------

std::string PipelineTokenizer::decode_tokens(std::vector<std::string> &tokens, size_t first_index,
                                             bool raw_bytes) const {
    std::string out;
    if (decoder_) {
        if (raw_bytes) {
            decoder_->decode_chain_bytes(tokens, first_index);
        } else {
            decoder_->decode_chain(tokens, first_index);
        }
        for (const std::string &t : tokens) out += t;
    } else {
        // HF joins undecoded tokens with spaces.
        for (size_t i = 0; i < tokens.size(); ++i) {
            if (i) out += ' ';
            out += tokens[i];
        }
    }
    return out;
}

std::string_view PipelineTokenizer::token_text(int32_t id) const {
    if (!normalized_text_.empty()) {
        if (auto it = normalized_text_.find(id); it != normalized_text_.end()) return it->second;
    }
    return vocab_.text(id);
}

std::string PipelineTokenizer::decode(const int32_t *ids, size_t n, bool render_special) const {
    std::vector<std::string> tokens;
    tokens.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        const int32_t id = ids[i];
        if (!vocab_.valid(id))
            fail(VT_ERR_INVALID_ARGUMENT, "token id %d at position %zu out of range [0, %u)", id, i, vocab_.size());
        if (!render_special && special_[id]) continue;
        tokens.emplace_back(token_text(id));
    }
    return decode_tokens(tokens, 0);
}

std::string PipelineTokenizer::token_to_piece(int32_t id, bool render_special) const {
    if (!vocab_.valid(id)) fail(VT_ERR_INVALID_ARGUMENT, "token id %d out of range [0, %u)", id, vocab_.size());
    if (!render_special && special_[id]) return {};
    std::vector<std::string> tokens{std::string(token_text(id))};
    // As a token inside a sequence: no first-token rules (Metaspace keeps
    // its leading space), so pieces concatenate to the decoded text. Raw
    // bytes, as a GGUF vocabulary gives them: a byte token that is part of a
    // UTF-8 character is that byte, not HF's U+FFFD of decode([id]).
    return decode_tokens(tokens, 1, true);
}

} // namespace vt::tok
