// Tokenizer::from_file: one entry point for every tokenizer file format.
// The format is sniffed from the content, not trusted from the extension
// (GGUF magic, a JSON object, tiktoken's "base64 rank" lines, otherwise a
// SentencePiece protobuf); everything but GGUF is converted to a
// tokenizer.json document and run by PipelineTokenizer.
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/gguf.h"
#include "tokenizer/convert.h"
#include "tokenizer/pipeline-tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace vt {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Tokenizer files are megabytes; anything past this is not one.
constexpr uintmax_t kMaxTokenizerFileBytes = 1ull << 30;

std::string read_file(const fs::path &p) {
    std::error_code ec;
    const uintmax_t size = fs::file_size(p, ec);
    if (ec) fail(VT_ERR_IO, "%s: %s", p.c_str(), ec.message().c_str());
    if (size > kMaxTokenizerFileBytes) fail(VT_ERR_FORMAT, "%s: %ju bytes is too large for a tokenizer file", p.c_str(), size);
    std::ifstream in(p, std::ios::binary);
    if (!in) fail(VT_ERR_IO, "%s: cannot open", p.c_str());
    std::string data(static_cast<size_t>(size), '\0');
    if (!in.read(data.data(), static_cast<std::streamsize>(size))) fail(VT_ERR_IO, "%s: read failed", p.c_str());
    return data;
}

// The first bytes of a file (fewer if it is shorter): enough to tell a
// GGUF, whose whole multi-gigabyte file must not be read for its vocabulary.
std::string read_head(const fs::path &p, size_t n) {
    std::ifstream in(p, std::ios::binary);
    if (!in) fail(VT_ERR_IO, "%s: cannot open", p.c_str());
    std::string head(n, '\0');
    in.read(head.data(), static_cast<std::streamsize>(n));
    head.resize(static_cast<size_t>(in.gcount()));
    return head;
}

json parse_json(const std::string &text, const fs::path &p) {
    try {
        return json::parse(text);
    } catch (const json::exception &e) {
        fail(VT_ERR_FORMAT, "%s: not valid JSON: %s", p.c_str(), e.what());
    }
}

bool starts_json_object(std::string_view s) {
    for (char c : s) {
        if (c == '{') return true;
        if (c == '\xEF' || c == '\xBB' || c == '\xBF') continue;  // a UTF-8 byte-order mark
        if (!std::isspace(static_cast<unsigned char>(c))) return false;
    }
    return false;
}

// tiktoken: "<base64> <decimal rank>" on the first line.
bool looks_like_tiktoken(std::string_view s) {
    const size_t nl = s.find('\n');
    std::string_view line = s.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const size_t sp = line.find(' ');
    if (sp == 0 || sp == std::string_view::npos || sp + 1 == line.size()) return false;
    for (char c : line.substr(0, sp)) {
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '/' && c != '=') return false;
    }
    for (char c : line.substr(sp + 1)) {
        if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    }
    return true;
}

fs::path first_existing(const fs::path &dir, std::initializer_list<const char *> names) {
    for (const char *n : names) {
        if (fs::exists(dir / n)) return dir / n;
    }
    return {};
}

std::unique_ptr<Tokenizer> from_tokenizer_json(const json &doc, const fs::path &path) {
    const fs::path config_path = path.parent_path() / "tokenizer_config.json";
    if (fs::exists(config_path)) {
        const json config = parse_json(read_file(config_path), config_path);
        return std::make_unique<tok::PipelineTokenizer>(doc, &config);
    }
    return std::make_unique<tok::PipelineTokenizer>(doc, nullptr);
}

std::unique_ptr<Tokenizer> load(const fs::path &path) {
    if (fs::is_directory(path)) {
        fs::path f = first_existing(path, {"tokenizer.json", "tokenizer.model", "vocab.json", "encoder.json"});
        if (f.empty()) fail(VT_ERR_IO, "%s: a directory without tokenizer.json, tokenizer.model or vocab.json", path.c_str());
        return load(f);
    }
    if (read_head(path, 4) == "GGUF") {  // mapped: only the metadata is touched
        auto gguf = GgufFile::open(path.string(), true);
        return Tokenizer::from_gguf(*gguf);
    }
    const std::string data = read_file(path);
    if (starts_json_object(data)) {
        const json doc = parse_json(data, path);
        // A vocab.json may well hold a token "model"; a tokenizer.json's
        // "model" is an object.
        if (auto m = doc.find("model"); m != doc.end() && m->is_object()) return from_tokenizer_json(doc, path);
        // A GPT-2 style vocabulary: the merges live in a file beside it.
        const fs::path merges = first_existing(path.parent_path(), {"merges.txt", "vocab.bpe"});
        if (merges.empty()) {
            fail(VT_ERR_FORMAT, "%s: a JSON file that is neither a tokenizer.json (no \"model\") nor a vocab.json "
                 "with merges.txt or vocab.bpe beside it", path.c_str());
        }
        const json converted = tok::convert_gpt2_files(data, read_file(merges));
        return from_tokenizer_json(converted, path);
    }
    if (looks_like_tiktoken(data)) {
        std::string encoding = path.filename().string();
        if (const size_t dot = encoding.find('.'); dot != std::string::npos) encoding.resize(dot);
        return std::make_unique<tok::PipelineTokenizer>(tok::convert_tiktoken(data, encoding), nullptr);
    }
    // SentencePiece's ModelProto has no magic; its converter rejects
    // anything that does not parse as one.
    return from_tokenizer_json(tok::convert_spm_model(data), path);
}

} // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_file(const std::string &path) {
    try {
        return load(fs::path(path));
    } catch (const Error &e) {
        const std::string msg = e.what();
        if (msg.rfind(path, 0) == 0) throw;  // already names the file
        throw Error(e.status(), path + ": " + msg);
    } catch (const fs::filesystem_error &e) {
        fail(VT_ERR_IO, "%s: %s", path.c_str(), e.what());
    }
}

} // namespace vt
