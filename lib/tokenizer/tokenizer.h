// Tokenizer interface. A concrete tokenizer per vocabulary family
// (byte-level BPE, SentencePiece BPE, later WordPiece/Unigram...) is built
// from GGUF metadata by Tokenizer::from_gguf. Immutable after construction:
// all methods are const and thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace vt {

class GgufFile;

// Where special tokens (GGUF CONTROL/UNKNOWN ones, Hugging Face added
// tokens marked special) may be recognised in a text being encoded:
// everywhere (parse_special), nowhere, or everywhere except where a match
// would overlap given byte ranges: the spans of a rendered chat template
// that came from message content, so that a user's "<|im_start|>" stays
// text while the template's own markers become tokens. Non-special added
// tokens (USER_DEFINED) are recognised everywhere in every case, as
// transformers' split_special_tokens=True does.
class SpecialGate {
public:
    struct Range {
        uint32_t begin = 0, end = 0;  // bytes [begin, end)
    };
    SpecialGate(bool parse_special) : any_(parse_special) {}  // NOLINT: a bool reads as the old flag
    // `content`: sorted, disjoint, non-empty ranges; must outlive the gate.
    explicit SpecialGate(const std::vector<Range> &content) : any_(true), content_(&content) {}

    // Whether any special token may be recognised at all.
    bool any() const { return any_; }
    // Whether a special token may be recognised at bytes [begin, end) of
    // the text (offsets relative to this gate, see at()).
    bool allows(size_t begin, size_t end) const;
    // The same gate for the piece of the text that starts at `offset`.
    SpecialGate at(size_t offset) const {
        SpecialGate g = *this;
        g.offset_ += offset;
        return g;
    }

private:
    bool any_ = false;
    const std::vector<Range> *content_ = nullptr;
    size_t offset_ = 0;
};

enum class TokenType : int32_t {  // GGUF tokenizer.ggml.token_type values
    UNDEFINED = 0, NORMAL = 1, UNKNOWN = 2, CONTROL = 3, USER_DEFINED = 4,
    UNUSED = 5, BYTE = 6,
};

class Tokenizer {
public:
    virtual ~Tokenizer() = default;

    // Builds the tokenizer from tokenizer.ggml.* metadata. Throws vt::Error:
    // VT_ERR_UNSUPPORTED for an unknown model or pre-tokenizer name,
    // VT_ERR_FORMAT for inconsistent metadata.
    static std::unique_ptr<Tokenizer> from_gguf(const GgufFile &gguf);

    // Builds the tokenizer a file describes, sniffing its format: GGUF
    // (tokenizer.ggml.* metadata), tokenizer.json (with tokenizer_config.json
    // beside it when present), a directory holding tokenizer.json, a tiktoken
    // rank file, GPT-2 vocab.json/encoder.json with merges.txt/vocab.bpe
    // beside it, or a SentencePiece .model. Throws vt::Error: VT_ERR_IO,
    // VT_ERR_FORMAT, VT_ERR_UNSUPPORTED.
    static std::unique_ptr<Tokenizer> from_file(const std::string &path);

    // Encodes UTF-8 text. add_special: BOS/EOS as the metadata asks.
    // specials: where control/special token texts become their ids (a bool
    // converts: parse_special everywhere or nowhere); user-defined ones
    // always do. Throws vt::Error(VT_ERR_INVALID_UTF8) naming the offset of
    // bad input.
    virtual std::vector<int32_t> encode(std::string_view text, bool add_special,
                                        const SpecialGate &specials) const = 0;

    // Bytes of one token ("Ġa" -> " a", "<0x0A>" -> "\n"); control tokens
    // give their text only when render_special. Never lossy: a byte-level or
    // byte-fallback token that is part of a UTF-8 character gives that byte
    // (as llama.cpp's token_to_piece; HF's decode([id]) gives U+FFFD), so
    // pieces concatenate to the text and constrained decoding can match
    // tokens byte by byte.
    virtual std::string token_to_piece(int32_t id, bool render_special) const = 0;

    // Text of a sequence (pieces joined; SentencePiece's leading space of
    // the first token removed where the family does so).
    virtual std::string decode(const int32_t *ids, size_t n, bool render_special) const = 0;

    virtual uint32_t n_vocab() const = 0;
    virtual int32_t bos() const = 0;   // -1 if none
    virtual int32_t eos() const = 0;   // -1 if none
    virtual bool is_eog(int32_t id) const = 0;
};

// base, with ids it also treats as end of generation (a Hugging Face
// folder's generation_config.json eos_token_id list).
std::unique_ptr<Tokenizer> with_end_of_generation(std::unique_ptr<Tokenizer> base, std::vector<int32_t> ids);

} // namespace vt
