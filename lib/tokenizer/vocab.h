// Vocabulary shared by every tokenizer model: token texts, scores, per-token
// attributes, special ids and the end-of-generation set. Built once by a
// loader (GGUF today, tokenizer.json later), immutable afterwards.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace vt::tok {

// Attribute bits (as llama.cpp's llama_token_attr, so behaviour that keys on
// them carries over one to one). A token has exactly one type bit plus
// optional LSTRIP/RSTRIP.
enum TokenAttr : uint32_t {
    ATTR_UNDEFINED = 0,
    ATTR_UNKNOWN = 1u << 0,
    ATTR_UNUSED = 1u << 1,
    ATTR_NORMAL = 1u << 2,
    ATTR_CONTROL = 1u << 3,
    ATTR_USER_DEFINED = 1u << 4,
    ATTR_BYTE = 1u << 5,
    ATTR_LSTRIP = 1u << 7,  // eat whitespace left of the token when partitioning
    ATTR_RSTRIP = 1u << 8,  // ... and right of it
};

// Maps GGUF tokenizer.ggml.token_type values (TokenType) to attribute bits.
uint32_t attr_from_gguf_type(int32_t type);

class Vocab {
public:
    Vocab() = default;
    Vocab(const Vocab &) = delete;             // to_id_ holds views into blob_
    Vocab &operator=(const Vocab &) = delete;
    Vocab(Vocab &&) = default;

    // Appends a token; ids are given in order from 0.
    void add_token(std::string_view text, float score, uint32_t attr);
    // Indexes the texts; call once after the last add_token. Duplicate
    // texts resolve to the last id, as llama.cpp's token_to_id does.
    void finalize();

    uint32_t size() const { return static_cast<uint32_t>(offsets_.size()); }
    std::string_view text(int32_t id) const {
        return std::string_view(blob_.data() + offsets_[id], lengths_[id]);
    }
    float score(int32_t id) const { return scores_[id]; }
    uint32_t attr(int32_t id) const { return attrs_[id]; }
    void set_attr(int32_t id, uint32_t a) { attrs_[id] = a; }
    bool valid(int32_t id) const { return id >= 0 && static_cast<uint32_t>(id) < size(); }

    // -1 when the text is not a token.
    int32_t find(std::string_view text) const {
        auto it = to_id_.find(text);
        return it == to_id_.end() ? -1 : it->second;
    }

    // Special ids (-1 = none) and flags read from metadata.
    int32_t bos = -1, eos = -1, eot = -1, eom = -1, unk = -1, pad = -1;
    // Fill-in-the-middle markers (prefix, suffix, middle, pad, repo, file sep).
    int32_t fim_pre = -1, fim_suf = -1, fim_mid = -1, fim_pad = -1, fim_rep = -1, fim_sep = -1;
    bool add_bos = false, add_eos = false;

    // End-of-generation set and the special-token list used by the
    // partitioner (CONTROL | USER_DEFINED | UNKNOWN, longest text first).
    std::vector<int32_t> eog_ids;      // sorted
    std::vector<int32_t> special_ids;  // longest first, ties by id

    // Fills eot/eom/eog_ids/special_ids from texts and attributes the way
    // llama.cpp does (known end-of-turn texts, control-looking tokens
    // promoted to CONTROL). Call after finalize() and after ids are set.
    void derive_specials();

    bool is_eog(int32_t id) const;

private:
    // All token texts back to back. A vector, not a string: a moved-from
    // small string would move its bytes and invalidate the views in to_id_.
    std::vector<char> blob_;
    std::vector<uint32_t> offsets_;
    std::vector<uint32_t> lengths_;
    std::vector<float> scores_;
    std::vector<uint32_t> attrs_;
    std::unordered_map<std::string_view, int32_t> to_id_;
};

} // namespace vt::tok
