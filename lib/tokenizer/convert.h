// Converters from other tokenizer formats to a tokenizer.json document,
// the way Hugging Face's converters do it (transformers'
// convert_slow_tokenizer, TikTokenConverter), so PipelineTokenizer runs them
// all. Each throws vt::Error(VT_ERR_FORMAT) for a malformed file (naming
// what is wrong and where) and VT_ERR_UNSUPPORTED for a valid file of a kind
// not handled.
#pragma once

#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace vt {
class GgufFile;
}

namespace vt::tok {

// A tiktoken rank file ("<base64 token> <rank>" per line). `encoding` names
// the split pattern and special tokens (r50k_base, p50k_base, cl100k_base,
// o200k_base); the loader takes it from the file name.
nlohmann::json convert_tiktoken(std::string_view text, std::string_view encoding);

// GPT-2 style vocab.json / encoder.json and merges.txt / vocab.bpe.
nlohmann::json convert_gpt2_files(std::string_view vocab_json, std::string_view merges_txt);

// A SentencePiece ModelProto (.model), BPE or Unigram.
nlohmann::json convert_spm_model(std::string_view bytes);

// The tokenizer.ggml.* metadata of a GGUF whose tokenizer.ggml.model is
// "bert" (WordPiece) or "t5" (Unigram).
nlohmann::json convert_gguf_vocab(const GgufFile &gguf);

} // namespace vt::tok
