// Hugging Face's added-token split (AddedVocabulary::find_matches) and the
// added_tokens entries of tokenizer.json.
#include "tokenizer/added-tokens.h"

#include <nlohmann/json.hpp>
#include <utf8proc.h>

#include "core/error.h"
#include "tokenizer/utf8.h"

namespace vt::tok {

using nlohmann::json;

namespace {

// Rust's char::is_whitespace (the Unicode White_Space property), which HF's
// lstrip/rstrip use.
bool is_white_space(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
           c == 0x3000;
}

// HF's single_word boundary test: a letter, a digit or '_'.
bool is_word_char(uint32_t c) {
    if (c == '_') return true;
    switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
        case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
        case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_ND:
        case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO:
            return true;
        default:
            return false;
    }
}

// Code point ending just before byte `pos` of valid UTF-8, and its start.
uint32_t decode_before(std::string_view s, size_t pos, size_t &start) {
    start = pos - 1;
    while (start > 0 && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80) --start;
    size_t i = start;
    return utf8_decode(s, i);
}

// Field accessors that turn a missing or mistyped field into VT_ERR_FORMAT.
bool flag(const json &j, const char *key, bool fallback) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) fail(VT_ERR_FORMAT, "tokenizer.json: added token field '%s' is not a boolean", key);
    return it->get<bool>();
}

} // namespace

AddedToken read_added_token(const json &j) {
    if (!j.is_object()) fail(VT_ERR_FORMAT, "tokenizer.json: an added token is not an object");
    AddedToken t;
    auto id = j.find("id");
    auto content = j.find("content");
    if (id == j.end() || !is_token_id(*id))
        fail(VT_ERR_FORMAT, "tokenizer.json: added token without a valid 'id'");
    if (content == j.end() || !content->is_string())
        fail(VT_ERR_FORMAT, "tokenizer.json: added token %llu without a 'content' string",
             static_cast<unsigned long long>(id->get<uint64_t>()));
    t.id = static_cast<int32_t>(id->get<uint64_t>());
    t.content = content->get<std::string>();
    utf8_validate(t.content);
    t.single_word = flag(j, "single_word", false);
    t.lstrip = flag(j, "lstrip", false);
    t.rstrip = flag(j, "rstrip", false);
    t.special = flag(j, "special", false);
    // HF's default: special tokens are matched in the raw text.
    t.normalized = flag(j, "normalized", !t.special);
    return t;
}


// A token id: a non-negative integer (signed or unsigned in nlohmann's
// terms: parsed files give unsigned, converters may build signed ones).
bool is_token_id(const json &j) {
    if (j.is_number_unsigned()) return j.get<uint64_t>() <= INT32_MAX;
    return j.is_number_integer() && j.get<int64_t>() >= 0 && j.get<int64_t>() <= INT32_MAX;
}


AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken> &all, bool normalized) : tokens_(&all) {
    for (size_t i = 0; i < all.size(); ++i) {
        const AddedToken &t = all[i];
        if (t.normalized != normalized || t.pattern.empty()) continue;
        int32_t node = 0;
        for (unsigned char c : t.pattern) {
            const uint64_t key = static_cast<uint64_t>(node) << 8 | c;
            auto it = edges_.find(key);
            if (it == edges_.end()) {
                node_token_.push_back(-1);
                it = edges_.emplace(key, static_cast<int32_t>(node_token_.size() - 1)).first;
            }
            node = it->second;
        }
        node_token_[node] = static_cast<int32_t>(i);  // a repeated content: the last entry wins
        first_byte_[static_cast<unsigned char>(t.pattern[0])] = true;
    }
}

int32_t AddedTokenMatcher::longest_at(std::string_view text, size_t pos, size_t &len) const {
    int32_t node = 0, best = -1;
    for (size_t i = pos; i < text.size(); ++i) {
        auto it = edges_.find(static_cast<uint64_t>(node) << 8 | static_cast<unsigned char>(text[i]));
        if (it == edges_.end()) break;
        node = it->second;
        if (node_token_[node] >= 0) {
            best = node_token_[node];
            len = i + 1 - pos;
        }
    }
    return best;
}

void AddedTokenMatcher::split(std::string_view text, const SpecialGate &specials, std::vector<Match> &out) const {
    size_t emitted = 0;  // text before this offset is already in `out`
    size_t pos = 0;
    while (pos < text.size()) {
        if (!first_byte_[static_cast<unsigned char>(text[pos])]) { ++pos; continue; }
        size_t len = 0;
        const int32_t k = longest_at(text, pos, len);
        if (k < 0) { ++pos; continue; }
        const AddedToken &t = (*tokens_)[k];
        size_t start = pos, stop = pos + len;
        // A match that is skipped still consumes its bytes, as HF's
        // automaton iteration does.
        pos = stop;
        if (t.special && !specials.allows(start, stop)) continue;
        if (t.single_word) {
            size_t s;
            const bool word_before = start > 0 && is_word_char(decode_before(text, start, s));
            size_t i = stop;
            const bool word_after = stop < text.size() && is_word_char(utf8_decode(text, i));
            if (word_before || word_after) continue;
        }
        if (t.lstrip) {
            while (start > emitted) {
                size_t s;
                if (!is_white_space(decode_before(text, start, s))) break;
                start = s;
            }
        }
        if (t.rstrip) {
            while (stop < text.size()) {
                size_t i = stop;
                if (!is_white_space(utf8_decode(text, i))) break;
                stop = i;
            }
            pos = stop;
        }
        if (start > emitted) out.push_back({-1, static_cast<uint32_t>(emitted), static_cast<uint32_t>(start)});
        out.push_back({k, static_cast<uint32_t>(start), static_cast<uint32_t>(stop)});
        emitted = stop;
    }
    if (emitted < text.size()) out.push_back({-1, static_cast<uint32_t>(emitted), static_cast<uint32_t>(text.size())});
}

} // namespace vt::tok
