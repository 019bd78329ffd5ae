// Hugging Face tokenizers' pipeline, stage by stage: normalizer ->
// pre-tokenizer -> model -> post-processor, and a decoder for the way back.
// A tokenizer.json names one component per stage (or a Sequence of them);
// tiktoken rank files, GPT-2 vocab.json + merges.txt and SentencePiece
// .model files are converted to the same description, as HF's own
// converters do, so one implementation serves every format.
//
// Each stage is an immutable object built once by a factory from its JSON
// node; every method is const and thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tokenizer/pretokenizer.h"  // Span
#include "tokenizer/vocab.h"

namespace vt::tok {

// The pieces of one text fragment during pre-tokenization: their bytes
// back to back in `buf`, described by `spans` in order.
struct Pieces {
    std::string buf;
    std::vector<Span> spans;

    void clear() { buf.clear(); spans.clear(); }
    size_t size() const { return spans.size(); }
    std::string_view operator[](size_t i) const {
        return std::string_view(buf.data() + spans[i].begin, spans[i].len);
    }
    void push(std::string_view s) {
        spans.push_back({static_cast<uint32_t>(buf.size()), static_cast<uint32_t>(s.size())});
        buf.append(s);
    }
};

// HF `normalizer`: rewrites one fragment of text (added tokens are cut out
// before normalization; see PipelineTokenizer).
class Normalizer {
public:
    virtual ~Normalizer() = default;
    // `in` is valid UTF-8; `out` is cleared, then receives valid UTF-8.
    virtual void normalize(std::string_view in, std::string &out) const = 0;
};

// HF `pre_tokenizer`: splits (and may rewrite) every piece of a fragment.
class PreTokenizeStep {
public:
    virtual ~PreTokenizeStep() = default;
    // Appends the pieces that every piece of `in` becomes to `out` (which
    // the caller cleared). `at_origin`: in[0] begins at byte 0 of the
    // user's text (Metaspace's prepend_scheme "first" keys on it).
    // Empty pieces are dropped.
    virtual void apply(const Pieces &in, bool at_origin, Pieces &out) const = 0;
};

// HF `model`: one pre-tokenized piece -> token ids.
class Model {
public:
    virtual ~Model() = default;
    // Appends the ids of `piece` (non-empty, valid UTF-8) to `out`.
    virtual void tokenize(std::string_view piece, std::vector<int32_t> &out) const = 0;
};

// HF `decoder`: token strings -> text, as HF's decode_chain: each decoder
// rewrites the list (and may join it); the caller concatenates the result.
class Decoder {
public:
    virtual ~Decoder() = default;
    // `first_index` is the position of tokens[0] in the whole sequence:
    // decoders that treat the first token specially (Metaspace's leading
    // space, WordPiece's "##") do so only where first_index + i == 0.
    virtual void decode_chain(std::vector<std::string> &tokens, size_t first_index) const = 0;
    // As decode_chain, keeping bytes that are not UTF-8 as they are where
    // decode_chain would put U+FFFD (byte-level and byte-fallback tokens).
    virtual void decode_chain_bytes(std::vector<std::string> &tokens, size_t first_index) const {
        decode_chain(tokens, first_index);
    }
};

// HF `post_processor` for one sequence: the special tokens put around the
// ids when add_special is asked for (TemplateProcessing "single", Bert,
// Roberta; ByteLevel only trims offsets and adds nothing).
struct PostProcessor {
    std::vector<int32_t> prefix;
    std::vector<int32_t> suffix;
};

// Factories from tokenizer.json nodes. A JSON null gives nullptr (no such
// stage). They throw vt::Error: VT_ERR_UNSUPPORTED for an unknown "type",
// VT_ERR_FORMAT for a malformed node (missing or mistyped field, a regex
// that does not compile), naming the field.
std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json &j);
std::unique_ptr<PreTokenizeStep> make_pre_tokenizer(const nlohmann::json &j);
std::unique_ptr<Decoder> make_decoder(const nlohmann::json &j);
// `vocab` holds every token (model vocabulary and added tokens) with its
// final id; post-processor token names resolve through it.
PostProcessor make_post_processor(const nlohmann::json &j, const Vocab &vocab);
// The model's own vocabulary has already been read into `vocab` (ids from
// j["vocab"]; Unigram scores as Vocab::score); the model keeps a reference,
// so `vocab` must outlive it and not move.
std::unique_ptr<Model> make_model(const nlohmann::json &j, const Vocab &vocab);

} // namespace vt::tok
