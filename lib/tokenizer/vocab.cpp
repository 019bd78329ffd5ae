#include "tokenizer/vocab.h"

#include <algorithm>
#include <array>

namespace vt::tok {

uint32_t attr_from_gguf_type(int32_t type) {
    switch (type) {
    case 1: return ATTR_NORMAL;
    case 2: return ATTR_UNKNOWN;
    case 3: return ATTR_CONTROL;
    case 4: return ATTR_USER_DEFINED;
    case 5: return ATTR_UNUSED;
    case 6: return ATTR_BYTE;
    default: return ATTR_UNDEFINED;
    }
}

void Vocab::add_token(std::string_view text, float score, uint32_t attr) {
    offsets_.push_back(static_cast<uint32_t>(blob_.size()));
    lengths_.push_back(static_cast<uint32_t>(text.size()));
    blob_.insert(blob_.end(), text.begin(), text.end());
    scores_.push_back(score);
    attrs_.push_back(attr);
}

void Vocab::finalize() {
    to_id_.clear();
    to_id_.reserve(size());
    for (uint32_t i = 0; i < size(); ++i) to_id_[text(static_cast<int32_t>(i))] = static_cast<int32_t>(i);
}

namespace {

// Texts that end a turn in the chat formats llama.cpp knows; generation
// stops on them even when the metadata names only EOS.
constexpr std::array kEogTexts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",  // DeepSeek, fullwidth bars
};

// Candidates for tokenizer.ggml.eot_token_id when the metadata has none,
// in the order of preference.
constexpr std::array kEotTexts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
    "<EOT>", "_<EOT>", "[EOT]",
    "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
    "<end_of_utterance>",
};

// Fill-in-the-middle pad / repository / file-separator tokens also end
// generation (Qwen coder style); one per group, the first text found.
const std::array<std::array<const char *, 5>, 3> kFimEogGroups = {{
    {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"},
    {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"},
    {"<|file_sep|>", nullptr, nullptr, nullptr, nullptr},
}};

} // namespace

void Vocab::derive_specials() {
    // A token that looks like an end-of-turn marker is treated as control
    // even when the converter typed it NORMAL (llama.cpp does the same, so
    // such tokens are parsed as specials and hidden when not rendering).
    auto promote = [&](int32_t id) {
        if ((attrs_[id] & ATTR_CONTROL) == 0) attrs_[id] = (attrs_[id] & ~0x7Fu) | ATTR_CONTROL;
    };

    if (eot < 0) {
        for (const char *t : kEotTexts) {
            if (int32_t id = find(t); id >= 0) { eot = id; break; }
        }
        if (eot >= 0) promote(eot);
    }
    if (eom < 0) {
        if (int32_t id = find("<|eom_id|>"); id >= 0) { eom = id; promote(id); }
    }

    eog_ids.clear();
    for (const auto &group : kFimEogGroups) {
        for (const char *t : group) {
            if (!t) break;
            if (int32_t id = find(t); id >= 0) { eog_ids.push_back(id); promote(id); break; }
        }
    }
    for (const char *t : kEogTexts) {
        if (int32_t id = find(t); id >= 0) { eog_ids.push_back(id); promote(id); }
    }
    for (int32_t id : {eos, eot, eom}) {
        if (valid(id)) eog_ids.push_back(id);
    }
    std::sort(eog_ids.begin(), eog_ids.end());
    eog_ids.erase(std::unique(eog_ids.begin(), eog_ids.end()), eog_ids.end());

    // Harmony (gpt-oss) and solar-open end a message with <|end|> but
    // continue the turn: there it is not an end of generation.
    const bool has_return = find("<|return|>") >= 0;
    const bool has_call = find("<|call|>") >= 0 || find("<|calls|>") >= 0;
    const bool has_flush = find("<|flush|>") >= 0;
    if (int32_t end = find("<|end|>"); end >= 0 && ((has_return && has_call) || (has_call && has_flush))) {
        eog_ids.erase(std::remove(eog_ids.begin(), eog_ids.end(), end), eog_ids.end());
        attrs_[end] = ATTR_USER_DEFINED;
    }

    special_ids.clear();
    for (uint32_t i = 0; i < size(); ++i) {
        if (attrs_[i] & (ATTR_CONTROL | ATTR_USER_DEFINED | ATTR_UNKNOWN)) {
            if (lengths_[i] > 0) special_ids.push_back(static_cast<int32_t>(i));
        }
    }
    std::stable_sort(special_ids.begin(), special_ids.end(), [&](int32_t a, int32_t b) {
        return lengths_[a] > lengths_[b];
    });
}

bool Vocab::is_eog(int32_t id) const {
    return std::binary_search(eog_ids.begin(), eog_ids.end(), id);
}

} // namespace vt::tok
