// A Hugging Face model folder (config.json, model.safetensors or shards with
// model.safetensors.index.json, tokenizer files, generation_config.json) read
// as the GGUF that llama.cpp's converter would write for it: config keys
// become "<arch>.*" keys, tensor names GGUF names, so the architecture files
// read one format. Matrices stay in the safetensors mappings (F32, F16, BF16);
// only what is small and must change is copied: 1-D tensors (norms, biases)
// become F32, Gemma's norms 1 + w, Llama 3's rope scaling a rope_freqs
// tensor. Q and K keep Hugging Face's rotate_half layout (the converter
// permutes Llama's for adjacent pairs): read_decoder_hparams uses NeoX rope
// for every model from a folder.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/gguf.h"

namespace vt {

// How a Hugging Face architecture maps onto a vt one (model/arch-registry.cpp).
enum class HfNorms : uint8_t {
    plain,  // post_attention_layernorm is the FFN's input norm (Llama)
    gemma,  // four norms per block, stored as w for x * (1 + w)
    // Qwen3-Next, Qwen3.5: stored as w for x * (1 + w) (but the linear
    // attention's gated norm), post_attention_layernorm the FFN's input
    // norm under llama.cpp's name post_attention_norm; linear-attention
    // layers (model/hf-linear-attention.h).
    zero_centred,
    // Kimi-Linear: plain norms; its KDA layers, MoE blocks and config
    // (model/hf-kimi.h).
    kimi,
    // LFM2 / LFM2-MoE: plain norms under their own names; short-conv
    // layers, config and final norm (model/hf-lfm2.h).
    lfm2,
    // NemotronH: plain norms; blocks of one mixer each, the checkpoint's
    // backbone.* names and layer pattern (model/hf-nemotron-h.h).
    nemotron_h,
    // Granite 4.0-H and Falcon-H1: plain norms; Mamba-2 layers, experts and
    // muP multipliers (model/hf-granite-falcon.h).
    granite_hybrid,
    falcon_h1,
    // gpt-oss: plain norms, post_attention_layernorm under llama.cpp's
    // post_attention_norm; sinks, router and expert biases, its experts'
    // transposed and interleaved gate_up (model/hf-gpt-oss.h).
    gpt_oss,
};
struct HfArchitecture {
    const char *gguf_arch;  // vt's (and GGUF's) name
    HfNorms norms;
};
// The entry for a config.json "architectures" name, or null.
const HfArchitecture *find_hf_architecture(const std::string &hf_name);
// Every Hugging Face name vt reads, for messages.
std::string hf_architecture_names();

// "model.layers.<bid>.<rest>" -> bid (decimal digits) and rest; false for
// any other name.
bool split_hf_layer_name(const std::string &name, std::string &bid, std::string &rest);

// The GGUF name of a Hugging Face tensor name ("model.layers.3.self_attn.
// q_proj.weight" -> "blk.3.attn_q.weight"), "" for a tensor vt does not
// read (or reads otherwise: experts, kv_b_proj).
std::string hf_tensor_gguf_name(const std::string &hf, HfNorms norms);

struct HfFolder {
    std::unique_ptr<GgufFile> gguf;     // metadata, tensors, chat template
    std::vector<int32_t> eos_ids;       // generation_config.json's eos_token_id(s)
};

// Reads dir. Throws vt::Error: VT_ERR_IO (a missing file or shard),
// VT_ERR_FORMAT (malformed JSON or safetensors, a tensor of the wrong
// shape), VT_ERR_UNSUPPORTED (an architecture or rope scaling vt does not
// read, naming what it does).
HfFolder open_hf_folder(const std::string &dir, bool use_mmap);

} // namespace vt
