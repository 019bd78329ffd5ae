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
    // parse_special: control/user-defined token texts become their ids.
    // Throws vt::Error(VT_ERR_INVALID_UTF8) naming the offset of bad input.
    virtual std::vector<int32_t> encode(std::string_view text, bool add_special,
                                        bool parse_special) const = 0;

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
