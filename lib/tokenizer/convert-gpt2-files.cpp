// GPT-2 style encoder.json (vocab.json) + vocab.bpe (merges.txt) ->
// tokenizer.json, as transformers' GPT2Converter: byte-level BPE with the
// GPT-2 regex, no unknown token, <|endoftext|> special when present.
//
// Llama 3 ships the same two files (a tiktoken vocabulary re-spelled in the
// byte alphabet) but needs its own split regex and ignore_merges, and the
// files do not say so. The rule used here: exactly 128000 tokens and a
// first merge of "Ġ Ġ" is Llama 3 (GPT-2's first merge is "Ġ t"; Llama 3's
// 128000 base tokens before its 256 specials are a fixed size). A loader that
// sees a tokenizer_config.json should prefer what that says.
#include "core/error.h"
#include "tokenizer/convert-internal.h"
#include "tokenizer/convert.h"

namespace vt::tok {

namespace {

using nlohmann::json;

// The pre-tokenizer regex of Llama 3's tokenizer.json.
const char *const kLlama3Pattern =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

constexpr size_t kLlama3Tokens = 128000;

json parse_vocab(std::string_view text) {
    json vocab;
    try {
        vocab = json::parse(text.begin(), text.end());
    } catch (const json::exception &e) {
        fail(VT_ERR_FORMAT, "vocab.json: %s", e.what());
    }
    if (!vocab.is_object() || vocab.empty()) fail(VT_ERR_FORMAT, "vocab.json: expected a non-empty object token -> id");
    for (const auto &[token, id] : vocab.items()) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
            fail(VT_ERR_FORMAT, "vocab.json: token '%s' has no valid id", token.c_str());
        }
    }
    return vocab;
}

// One merge a line, "left right"; a first line "#version..." is a comment.
json parse_merges(std::string_view text, const json &vocab) {
    json merges = json::array();
    size_t line_no = 0;
    while (!text.empty()) {
        ++line_no;
        const size_t eol = text.find('\n');
        std::string_view line = text.substr(0, eol);
        text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.empty() || (line_no == 1 && line.substr(0, 8) == "#version")) continue;
        const size_t sp = line.find(' ');
        if (sp == std::string_view::npos || sp == 0 || sp + 1 == line.size() ||
            line.find(' ', sp + 1) != std::string_view::npos) {
            fail(VT_ERR_FORMAT, "merges line %zu: expected two tokens separated by one space", line_no);
        }
        std::string left(line.substr(0, sp)), right(line.substr(sp + 1));
        // HF's BPE refuses merges whose parts or result are not tokens.
        if (!vocab.contains(left) || !vocab.contains(right) || !vocab.contains(left + right)) {
            fail(VT_ERR_FORMAT, "merges line %zu: '%s %s' uses a token not in the vocabulary", line_no,
                 left.c_str(), right.c_str());
        }
        merges.push_back(json::array({std::move(left), std::move(right)}));
    }
    return merges;
}

} // namespace

json convert_gpt2_files(std::string_view vocab_json, std::string_view merges_txt) {
    json vocab = parse_vocab(vocab_json);
    json merges = parse_merges(merges_txt, vocab);
    const bool llama3 = vocab.size() == kLlama3Tokens && !merges.empty() &&
                        merges[0] == json::array({"\xc4\xa0", "\xc4\xa0"});

    json j = tokenizer_json_skeleton();
    if (auto it = vocab.find("<|endoftext|>"); it != vocab.end()) {
        j["added_tokens"].push_back(added_token_json(it->get<int64_t>(), "<|endoftext|>", true, true));
    }
    j["pre_tokenizer"] = llama3 ? split_then_byte_level(kLlama3Pattern) : byte_level(false, true, true);
    j["post_processor"] = byte_level(true, false, true);
    j["decoder"] = byte_level(true, true, true);
    j["model"] = byte_level_bpe_model(std::move(vocab), std::move(merges), llama3);
    return j;
}

} // namespace vt::tok
