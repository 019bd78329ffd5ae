// tiktoken rank file -> tokenizer.json, as transformers' TikTokenConverter:
// tokens are spelled in the GPT-2 byte alphabet, ids are the ranks, and the
// merges are every split of a token into two tokens, ordered by the rank of
// the token they make. HF's BPE then merges the lowest-ranked pair first,
// which is what tiktoken does; ignore_merges makes a piece that is itself a
// token come out whole, as tiktoken's direct lookup does.
#include <algorithm>
#include <charconv>
#include <unordered_map>

#include "core/error.h"
#include "tokenizer/byte-level.h"
#include "tokenizer/convert-internal.h"
#include "tokenizer/convert.h"

namespace vt::tok {

namespace {

using nlohmann::json;

struct SpecialToken {
    const char *text;
    int32_t id;
};

// Split patterns and special tokens of OpenAI's encodings, as the tiktoken
// package defines them (tiktoken_ext/openai_public.py, tiktoken 0.14).
struct Encoding {
    const char *name;
    const char *pattern;
    std::vector<SpecialToken> specials;
};

const char *const kR50kPattern =
    R"re('(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s)re";

// tiktoken writes "\p{N}{1,3}+" (possessive). Oniguruma, which HF
// tokenizers uses, reads "{1,3}+" as "one or more runs of 1 to 3 digits",
// so "1805" would be one piece there instead of "180" + "5". A lone
// alternative never backtracks into itself, so the plain "{1,3}" means the
// same to tiktoken and reads the same in Oniguruma and PCRE2.
const char *const kCl100kPattern =
    R"re('(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s)re";

const char *const kO200kPattern =
    R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?)re"
    "|"
    R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?)re"
    "|"
    R"re(\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

const std::vector<Encoding> &encodings() {
    static const std::vector<Encoding> all = {
        {"r50k_base", kR50kPattern, {{"<|endoftext|>", 50256}}},
        {"p50k_base", kR50kPattern, {{"<|endoftext|>", 50256}}},
        {"cl100k_base", kCl100kPattern,
         {{"<|endoftext|>", 100257},
          {"<|fim_prefix|>", 100258},
          {"<|fim_middle|>", 100259},
          {"<|fim_suffix|>", 100260},
          {"<|endofprompt|>", 100276}}},
        {"o200k_base", kO200kPattern, {{"<|endoftext|>", 199999}, {"<|endofprompt|>", 200018}}},
    };
    return all;
}

struct RankedToken {
    std::string bytes;
    int32_t rank;
};

// "<base64> <rank>" per line; blank lines are skipped, as tiktoken does.
std::vector<RankedToken> parse_ranks(std::string_view text) {
    std::vector<RankedToken> out;
    size_t line_no = 0;
    while (!text.empty()) {
        ++line_no;
        const size_t eol = text.find('\n');
        std::string_view line = text.substr(0, eol);
        text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.empty()) continue;
        const size_t sp = line.find(' ');
        if (sp == std::string_view::npos) fail(VT_ERR_FORMAT, "tiktoken line %zu: expected '<base64> <rank>'", line_no);
        RankedToken t;
        if (!base64_decode(line.substr(0, sp), t.bytes) || t.bytes.empty()) {
            fail(VT_ERR_FORMAT, "tiktoken line %zu: bad base64 token", line_no);
        }
        const std::string_view rank = line.substr(sp + 1);
        const auto res = std::from_chars(rank.data(), rank.data() + rank.size(), t.rank);
        if (res.ec != std::errc() || res.ptr != rank.data() + rank.size() || t.rank < 0) {
            fail(VT_ERR_FORMAT, "tiktoken line %zu: bad rank '%.*s'", line_no, static_cast<int>(rank.size()),
                 rank.data());
        }
        out.push_back(std::move(t));
    }
    return out;
}

std::string byte_level(std::string_view bytes) {
    std::string s;
    for (char c : bytes) s += byte_to_unicode(static_cast<uint8_t>(c));
    return s;
}

} // namespace

json convert_tiktoken(std::string_view text, std::string_view encoding) {
    const Encoding *enc = nullptr;
    for (const Encoding &e : encodings()) {
        if (encoding == e.name) enc = &e;
    }
    if (!enc) {
        fail(VT_ERR_UNSUPPORTED, "tiktoken encoding '%.*s' is not known (r50k_base, p50k_base, cl100k_base, o200k_base)",
             static_cast<int>(encoding.size()), encoding.data());
    }

    std::vector<RankedToken> tokens = parse_ranks(text);
    if (tokens.empty()) fail(VT_ERR_FORMAT, "tiktoken file has no tokens");
    std::sort(tokens.begin(), tokens.end(), [](const RankedToken &a, const RankedToken &b) { return a.rank < b.rank; });
    // Token bytes -> index in `tokens`, and each token's byte-level spelling.
    std::unordered_map<std::string_view, size_t> index_of;
    index_of.reserve(tokens.size());
    std::vector<std::string> spelled(tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (i > 0 && tokens[i].rank == tokens[i - 1].rank) fail(VT_ERR_FORMAT, "tiktoken rank %d is used twice", tokens[i].rank);
        if (!index_of.emplace(tokens[i].bytes, i).second) {
            fail(VT_ERR_FORMAT, "tiktoken token of rank %d appears twice", tokens[i].rank);
        }
        spelled[i] = byte_level(tokens[i].bytes);
    }

    json vocab = json::object();
    json merges = json::array();
    json::array_t &merge_list = merges.get_ref<json::array_t &>();
    merge_list.reserve(tokens.size() * 3);
    struct Split {
        size_t left, right;  // indices in `tokens`, so in rank order
    };
    std::vector<Split> splits;
    for (size_t i = 0; i < tokens.size(); ++i) {
        vocab[spelled[i]] = tokens[i].rank;
        // Tokens come in rank order, so merges do too; within a token the
        // splits go by the ranks of their two halves.
        splits.clear();
        const std::string_view b = tokens[i].bytes;
        for (size_t at = 1; at < b.size(); ++at) {
            const auto l = index_of.find(b.substr(0, at));
            if (l == index_of.end()) continue;
            const auto r = index_of.find(b.substr(at));
            if (r == index_of.end()) continue;
            splits.push_back({l->second, r->second});
        }
        std::sort(splits.begin(), splits.end(), [](const Split &x, const Split &y) {
            return x.left != y.left ? x.left < y.left : x.right < y.right;
        });
        for (const Split &s : splits) merge_list.push_back(json::array_t{spelled[s.left], spelled[s.right]});
    }

    json j = tokenizer_json_skeleton();
    for (const SpecialToken &s : enc->specials) {
        // The file's ranks and the encoding's special ids must not collide.
        const bool id_taken = std::binary_search(tokens.begin(), tokens.end(), RankedToken{"", s.id},
            [](const RankedToken &a, const RankedToken &b) { return a.rank < b.rank; });
        if (id_taken || vocab.contains(s.text)) {
            fail(VT_ERR_FORMAT, "tiktoken file collides with %s's special token %s (id %d)", enc->name, s.text, s.id);
        }
        j["added_tokens"].push_back(added_token_json(s.id, s.text, true, false));
    }
    j["pre_tokenizer"] = split_then_byte_level(enc->pattern);
    j["post_processor"] = byte_level(true, false, true);
    j["decoder"] = byte_level(true, true, true);
    j["model"] = byte_level_bpe_model(std::move(vocab), std::move(merges), true);
    return j;
}

} // namespace vt::tok
