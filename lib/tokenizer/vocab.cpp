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

// Fill-in-the-middle markers by text, for GGUFs whose metadata lacks the
// ids; the first text found per group is taken.
constexpr std::array kFimPreTexts = {
    "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>",
    "<|code_prefix|>", "<|prefix|>"};
constexpr std::array kFimSufTexts = {
    "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>",
    "<|code_suffix|>", "<|suffix|>"};
constexpr std::array kFimMidTexts = {
    "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>",
    "<|code_middle|>", "<|middle|>"};
constexpr std::array kFimPadTexts = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"};
constexpr std::array kFimRepTexts = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"};
constexpr std::array kFimSepTexts = {"<|file_sep|>"};

} // namespace

void Vocab::derive_specials() {
    // A token that looks like an end-of-turn marker is treated as control
    // even when the converter typed it NORMAL (llama.cpp does the same, so
    // such tokens are parsed as specials and hidden when not rendering).
    // A USER_DEFINED token keeps its type: Hugging Face matches it in plain
    // text and decodes it (Gemma 3 has user-defined "<s>" and "</s>").
    // llama.cpp would promote it too; HF is the oracle for ids.
    auto promote = [&](int32_t id) {
        if ((attrs_[id] & (ATTR_CONTROL | ATTR_USER_DEFINED)) == 0) attrs_[id] = (attrs_[id] & ~0x7Fu) | ATTR_CONTROL;
    };

    // Ids the metadata did not give are found by text; a token found that
    // way is promoted to CONTROL, as llama.cpp does.
    auto detect = [&](int32_t &id, const auto &texts) {
        if (id >= 0) return;
        for (const char *t : texts) {
            if (int32_t found = find(t); found >= 0) {
                id = found;
                promote(found);
                return;
            }
        }
    };
    detect(eot, kEotTexts);
    detect(eom, std::array{"<|eom_id|>"});
    detect(fim_pre, kFimPreTexts);
    detect(fim_suf, kFimSufTexts);
    detect(fim_mid, kFimMidTexts);
    detect(fim_pad, kFimPadTexts);
    detect(fim_rep, kFimRepTexts);
    detect(fim_sep, kFimSepTexts);

    eog_ids.clear();
    // FIM padding / repository / file separators end generation too.
    for (int32_t id : {fim_pad, fim_rep, fim_sep}) {
        if (valid(id)) eog_ids.push_back(id);
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
