// Incremental detokenization: the text of a growing token stream, handed out
// in chunks that end on character boundaries. The method is Hugging Face
// tokenizers' DecodeStream (step_decode_stream): keep a short window of ids,
// of which the first ones were already shown (the context) and their text
// (the prefix); decode the window with each new id and hand out what follows
// the prefix once the text grew and does not end in an unfinished character.
// Built on Tokenizer::decode alone, so it serves every tokenizer family,
// whatever its decoder does with spaces (SentencePiece's leading space,
// Metaspace, WordPiece "##") or invalid bytes (passed through or U+FFFD).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace vt::tok {

class DecodeStream {
public:
    // Tokens pending without completing any text are flushed as they stand
    // after this many, so the window (and each push's decode) stays bounded.
    static constexpr size_t kMaxPending = 64;
    // Tokens of a prefill that are kept as context: enough for every decoder
    // that looks across tokens (a UTF-8 character spans at most 4 bytes).
    static constexpr size_t kMaxContext = 8;

    // `tok` must outlive the stream.
    DecodeStream(const Tokenizer &tok, bool render_special);

    // Starts over with context[0, n) as the tokens already shown (none for
    // n == 0): their text is not handed out, but the tokens pushed next
    // decode as they do after them. Context tokens that end in an unfinished
    // character stay pending, so that character comes out whole. Throws
    // vt::Error (an id out of range); the stream is then empty.
    void reset(const int32_t *context = nullptr, size_t n = 0);

    // Adds one token and appends the text it completes (maybe none) to out.
    // Throws vt::Error for an id out of range, leaving the stream unchanged.
    void push(int32_t id, std::string &out);

    // Appends the text still held back (an unfinished character, bytes as the
    // tokenizer's decode gives them) and starts over without context.
    void finish(std::string &out);

private:
    std::string decode_window() const;
    // Makes the pending tokens the context after their text was handed out.
    void slide();

    const Tokenizer &tok_;
    bool render_special_;
    std::vector<int32_t> ids_;  // the window: n_context_ context ids, then the pending ones
    size_t n_context_ = 0;
    std::string prefix_;        // decode of the context
};

// Bytes at the end of s that begin a UTF-8 character without finishing it
// (0 when s ends on a character boundary or in bytes that are invalid anyway).
size_t utf8_unfinished_tail(std::string_view s);

} // namespace vt::tok
