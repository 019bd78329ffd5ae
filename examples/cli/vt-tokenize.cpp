// vt-tokenize: text -> token ids (or pieces) from the command line, through
// the public C ABI only (include/vt). Reads UTF-8 text on stdin.
//
//   echo "Hello world" | vt-tokenize --tokenizer tokenizer.json
//   vt-tokenize --tokenizer model.gguf --pieces --lines < prompts.txt
//
// Defaults follow Hugging Face's encode(text): BOS/EOS are added as the
// tokenizer asks, and special-token text ("<|im_start|>") becomes those
// tokens. --no-special turns both off (text is tokenized as plain text).
//
// Output: the ids space-separated on one line; with --lines, one output line
// per input line (the line's '\n' is not tokenized). --pieces prints each
// token's text instead of its id, with special characters escaped as in C
// ("\n", "\t", "\x0b", "\\") and a space between pieces.
//
// Exit status: 0 on success, 1 when vt fails (a missing or unreadable
// tokenizer file, text that is not UTF-8: the message names the byte offset
// and, with --lines, the line), CLI11's status for argument errors.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "vt/vt.h"

namespace {

struct Options {
    std::string tokenizer;
    bool pieces = false;
    bool no_special = false;
    bool lines = false;
};

bool failed(vt_status s, const char *context = nullptr) {
    if (s == VT_OK) return false;
    const char *msg = vt_last_error();
    std::fprintf(stderr, "vt-tokenize: %s%s%s\n", context ? context : "", context ? ": " : "",
                 msg && *msg ? msg : vt_status_str(s));
    return true;
}

struct TokenizerDel { void operator()(vt_tokenizer *t) const { vt_tokenizer_destroy(t); } };

bool tokenize(const vt_tokenizer *tok, const std::string &text, uint32_t flags, std::vector<vt_token> &out,
              const char *context) {
    out.resize(text.size() + 16);
    size_t n = 0;
    vt_status s = vt_tokenize(tok, text.data(), text.size(), flags, out.data(), out.size(), &n);
    if (s == VT_ERR_BUFFER_TOO_SMALL) {
        out.resize(n);
        s = vt_tokenize(tok, text.data(), text.size(), flags, out.data(), out.size(), &n);
    }
    if (failed(s, context)) return false;
    out.resize(n);
    return true;
}

// A piece's bytes made printable on one line: controls, backslash and bytes
// that are not UTF-8 (part of a character split across tokens) escaped.
std::string escape(const std::string &piece) {
    std::string out;
    for (unsigned char c : piece) {
        switch (c) {
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        case '\r': out += "\\r"; break;
        case '\\': out += "\\\\"; break;
        default:
            if (c < 0x20 || c == 0x7f) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\x%02x", c);
                out += buf;
            } else {
                out += (char)c;
            }
        }
    }
    return out;
}

// Escapes bytes >= 0x80 too where they do not form complete UTF-8.
std::string printable_piece(const std::string &piece) {
    std::string valid;
    size_t i = 0;
    while (i < piece.size()) {
        const unsigned char c = (unsigned char)piece[i];
        size_t need = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        bool ok = need > 0 && i + need <= piece.size();
        for (size_t k = 1; ok && k < need; ++k) ok = ((unsigned char)piece[i + k] & 0xC0) == 0x80;
        if (!ok) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            valid += buf;
            ++i;
            continue;
        }
        valid += escape(piece.substr(i, need));
        i += need;
    }
    return valid;
}

bool print_tokens(const vt_tokenizer *tok, const std::vector<vt_token> &ids, bool pieces) {
    std::string line, buf(64, '\0');
    for (size_t i = 0; i < ids.size(); ++i) {
        if (i) line += ' ';
        if (!pieces) {
            line += std::to_string(ids[i]);
            continue;
        }
        size_t needed = 0;
        vt_status s = vt_token_to_piece(tok, ids[i], true, buf.data(), buf.size(), &needed);
        if (s == VT_ERR_BUFFER_TOO_SMALL) {
            buf.resize(needed + 1);
            s = vt_token_to_piece(tok, ids[i], true, buf.data(), buf.size(), &needed);
        }
        if (failed(s)) return false;
        line += printable_piece(buf.substr(0, needed));
    }
    line += '\n';
    return std::fwrite(line.data(), 1, line.size(), stdout) == line.size();
}

int run(const Options &o) {
    vt_tokenizer *raw = nullptr;
    if (failed(vt_tokenizer_load(o.tokenizer.c_str(), &raw), o.tokenizer.c_str())) return 1;
    std::unique_ptr<vt_tokenizer, TokenizerDel> tok(raw);
    const uint32_t flags = o.no_special ? VT_TOKENIZE_NONE : (VT_TOKENIZE_ADD_SPECIAL | VT_TOKENIZE_PARSE_SPECIAL);

    std::vector<vt_token> ids;
    if (!o.lines) {
        std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
        if (!tokenize(tok.get(), text, flags, ids, "stdin")) return 1;
        return print_tokens(tok.get(), ids, o.pieces) ? 0 : 1;
    }
    std::string line;
    for (size_t n = 1; std::getline(std::cin, line); ++n) {
        const std::string where = "line " + std::to_string(n);
        if (!tokenize(tok.get(), line, flags, ids, where.c_str())) return 1;
        if (!print_tokens(tok.get(), ids, o.pieces)) return 1;
    }
    return 0;
}

} // namespace

int main(int argc, char **argv) {
    Options o;
    CLI::App app{"vt-tokenize: UTF-8 text on stdin -> token ids (or pieces) on stdout.\n"
                 "By default BOS/EOS are added as the tokenizer asks and special-token text is\n"
                 "parsed, as Hugging Face's encode(text) does; --no-special turns both off."};
    app.add_option("-t,--tokenizer", o.tokenizer,
                   "tokenizer: GGUF, tokenizer.json or its directory, *.tiktoken, vocab.json/encoder.json "
                   "beside merges.txt/vocab.bpe, SentencePiece .model")
        ->required();
    bool ids_flag = false;  // the default; accepted so that scripts can say it
    auto *ids = app.add_flag("--ids", ids_flag, "print token ids (default)");
    app.add_flag("--pieces", o.pieces, "print each token's text (escaped) instead of its id")->excludes(ids);
    app.add_flag("--no-special", o.no_special,
                 "add no BOS/EOS and tokenize special-token text as plain text");
    app.add_flag("--lines", o.lines, "one output line per input line (the newline is not tokenized)");
    CLI11_PARSE(app, argc, argv);
    return run(o);
}
