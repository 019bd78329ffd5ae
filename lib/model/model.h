// A loaded model: the GGUF file (mapped), hyper-parameters, the tokenizer
// and the architecture object that owns the weight tensors and builds the
// forward graph. Immutable after load; shared by contexts on any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/pages.h"
#include "core/tensor.h"
#include "kv/cache-spec.h"
#include "model/gguf.h"
#include "model/quantize-load.h"
#include "tokenizer/tokenizer.h"

namespace vt {

class Graph;

// Hyper-parameters common to decoder-only transformers.
struct Hparams {
    uint32_t n_vocab = 0;
    uint32_t n_ctx_train = 0;
    uint32_t n_embd = 0;
    uint32_t n_layer = 0;
    uint32_t n_head = 0;
    uint32_t n_head_kv = 0;
    uint32_t head_dim = 0;      // n_embd / n_head unless the file says otherwise
    uint32_t n_ff = 0;
    uint32_t n_rot = 0;         // rotated dimensions per head
    int32_t rope_mode = 0;      // kRopeAdjacent or kRopeNeox (core/op-params.h)
    float rope_freq_base = 10000.0f;
    float rope_freq_scale = 1.0f;
    // YaRN (rope.scaling.type yarn): see RopeParams.
    float rope_ext_factor = 0.0f;
    float rope_attn_factor = 1.0f;
    float rope_beta_fast = 32.0f;
    float rope_beta_slow = 1.0f;
    uint32_t rope_n_ctx_orig = 0;
    bool rope_yarn_exact = false;    // YaRN's correction dims not rounded (RopeParams::yarn_exact)
    float norm_eps = 1e-5f;

    uint32_t n_embd_kv() const { return head_dim * n_head_kv; }

    // Mixture of experts (read by read_moe_hparams; n_expert 0: dense).
    uint32_t n_expert = 0;
    uint32_t n_expert_used = 0;      // experts per token
    uint32_t n_ff_exp = 0;           // an expert's hidden width
    uint32_t n_expert_shared = 0;    // shared experts (always run, added)
    uint32_t n_ff_shexp = 0;         // the shared experts' hidden width, all of them together
    uint32_t n_layer_dense_lead = 0; // the first layers have a dense FFN (DeepSeek)
    int32_t expert_gating = 0;       // kMoeSoftmax or kMoeSigmoid (core/op-params.h)
    bool expert_weights_norm = false;
    float expert_weights_scale = 1.0f;
    uint32_t expert_groups = 0;      // group-limited routing (DeepSeek-V3); 0 or 1: none
    uint32_t expert_groups_used = 0;
};

// What one forward pass computes: tokens of one or many sequences, each at
// its own position, with K/V in a pool of blocks (see Op::ATTN_PAGED; the
// runner packs kv_index).
class LoraAdapter;

// One LoRA adapter of a forward pass and the tokens that compute with it
// (graph inputs, Op::LORA's src4 and src5).
struct LoraSlot {
    const LoraAdapter *adapter = nullptr;
    Tensor *rows = nullptr;    // (n) i32: the tokens of its sequences
    Tensor *scales = nullptr;  // (n) f32: each token's scale (the adapter's times its request's)
};

struct ForwardArgs {
    Graph *graph;
    Tensor *tokens;      // (n_tokens) i32, graph input
    Tensor *positions;   // (n_tokens) i32, graph input
    Tensor *out_rows;    // (n_out) i32, graph input: which tokens need logits
    int64_t n_tokens;
    std::vector<Tensor> *k_cache;  // per layer (block_size, kv_row, n_blocks) f16, keys transposed per block
                                   // (kv_row: the layer's LayerCacheSpec::kv_row, n_embd_kv for attention)
    std::vector<Tensor> *v_cache;  // per layer (kv_row, n_slots) f16; a latent layer's has no elements
                                   // and null data: its ATTN_PAGED takes null for src2 and src4
    std::span<Tensor *const> kv_index;  // per layer: its cache group's i32 graph input, layout in Op::ATTN_PAGED
                                        // (null for a recurrent layer)
    // Recurrent layers (CacheKind::recurrent): k_cache[il] is the layer's
    // conv-tail pool (conv_floats, n_slots) f32 and v_cache[il] its state
    // pool (state_floats, n_slots) f32; state_index (3, n_seqs) i32, graph
    // input: per sequence in batch order {slot, n_tokens, fresh}
    // (Op::CONV1D_CAUSAL). Null when the model has no recurrent layer.
    Tensor *state_index = nullptr;
    std::span<const LoraSlot> lora;     // the adapters of the batch's sequences (LayerBuilder::linear applies them)
    // Multi-token prediction: build() also returns the final normed hidden
    // state of every token in *hidden_out (n_embd, n_tokens) when it is set
    // (LayerBuilder::logits); build_mtp() reads the trunk's ones at hidden_in
    // (n_embd, n_tokens), one per token, and returns its own in *hidden_out.
    Tensor **hidden_out = nullptr;
    Tensor *hidden_in = nullptr;
    int64_t n_ctx = 0;             // positions one sequence may reach (vt_seq's n_ctx, the engine's
                                   // max_model_len): Phi-3 picks its rope factors by it, as llama.cpp
};

class Model;

// One architecture family (lib/models/<arch>.cpp), listed in arch-registry.cpp.
class Architecture {
public:
    virtual ~Architecture() = default;
    // Reads hyper-parameters (keys "<arch>.*") into m.hparams and looks up
    // and shape-checks the weights. Throws vt::Error.
    virtual void load(Model &m) = 0;
    // Appends the forward graph to args.graph; returns the logits tensor
    // (n_vocab, n_out).
    virtual Tensor *build(const Model &m, const ForwardArgs &args) const = 0;
    // The checkpoint's multi-token-prediction (MTP, next-n) layer, where the
    // architecture reads one (Model::mtp_cache is then set): the logits of
    // the rows in out_rows for the next-but-one token of each token, from its
    // embedding and the trunk's hidden state at the position before
    // (args.hidden_in), as Qwen3.5's mtp.* / DeepSeek-V3's next-n layers.
    virtual bool has_mtp() const { return false; }
    virtual Tensor *build_mtp(const Model &m, const ForwardArgs &args) const;
};

// Creates the architecture for a GGUF general.architecture name, or throws
// vt::Error(VT_ERR_UNSUPPORTED) listing the known ones.
std::unique_ptr<Architecture> make_architecture(const std::string &name);
// Every registered architecture, in registry order.
std::vector<std::string> architecture_names();
// The Hugging Face "architectures" names that load as arch from a folder.
std::vector<std::string> hf_names_of(const std::string &arch);

class Model {
public:
    using Progress = std::function<bool(float)>;
    // Loads path, a GGUF file or a Hugging Face model folder; progress may
    // return false to cancel (VT_ERR_CANCELLED). quantize: the type float
    // matmul weights are quantized to at load (vt_model_params.quantize; one
    // can_quantize_weights accepts), nullopt to keep the file's types.
    // device: where the weights are placed (nullptr: the CPU); weights of
    // another device are uploaded from the mapping once the architecture
    // has looked them up, each byte moved once.
    // n_gpu_layers (with a device that is not the CPU): the last that many
    // layers go there, the others stay on the CPU, as do the embedding and
    // the output unless every layer is on the device; < 0 = every layer.
    // weights_budget: the most bytes of weight copies in memory (repacked
    // layouts, quantized or stacked copies) before expert weights are read
    // from the file mapping instead of copied; 0 = no limit.
    static std::unique_ptr<Model> load(const std::string &path, bool use_mmap, const Progress &progress,
                                       std::optional<DType> quantize = std::nullopt, vt_device *device = nullptr,
                                       int32_t n_gpu_layers = -1, uint64_t weights_budget = 0);

    // The device holding the weights; contexts of the model compute there.
    vt_device *device() const { return device_; }
    // Weight bytes uploaded to a device that is not host memory, and the
    // seconds it took (0 on the CPU, whose weights stay in the mapping or
    // in copies in its kernels' layouts).
    uint64_t uploaded_bytes() const { return uploaded_bytes_; }
    double upload_seconds() const { return upload_seconds_; }
    // The device of layer il's weights and KV: device(), or the CPU for a
    // layer n_gpu_layers left there. A cache layer past n_layer (a block's
    // second cache, extra_cache_owner) is on its block's device.
    vt_device *layer_device(uint32_t il) const;
    // Layers whose weights are on device() (n_layer on the CPU).
    uint32_t n_device_layers() const { return n_device_layers_; }

    const GgufFile &gguf() const { return *gguf_; }
    const Tokenizer &tokenizer() const { return *tokenizer_; }
    const Architecture &arch() const { return *arch_; }
    const std::string &arch_name() const { return arch_name_; }
    // Loaded from a Hugging Face folder (model/hf-folder.h), not a GGUF file.
    bool from_folder() const { return from_folder_; }
    // Reads an optional "<arch>.<suffix>" boolean.
    bool arch_bool(const char *suffix, bool def) const;

    // A weight by GGUF name as a tensor view into the mapping, checked
    // against the expected shape (trailing 1s may be omitted). Throws
    // VT_ERR_FORMAT on a shape mismatch or when a required tensor is absent;
    // returns nullptr when an optional one is absent.
    const Tensor *weight(const std::string &name, std::initializer_list<int64_t> shape, bool required = true);

    // The same for a weight that is only ever the src0 of MUL_MAT: it may be
    // quantized (quantize at load, when stored as a float type), and where
    // it stays in host memory, its buffer type may put it into a layout its
    // kernels read faster (vt_buffer_type_i::prepare_weight: the CPU's _X16),
    // in a buffer the model owns; that keeps results bit-identical.
    const Tensor *matmul_weight(const std::string &name, std::initializer_list<int64_t> shape, bool required = true);
    // A table only GET_ROWS reads (the token embedding): prepared like a
    // matmul weight, never quantized at load (a row lookup per token gains
    // nothing from it, and the embedding keeps its precision).
    const Tensor *embedding_weight(const std::string &name, std::initializer_list<int64_t> shape);
    // The output projection: "output.weight" as a matmul weight when the
    // file has one. Tied to the embedding (none in the file): nullptr, the
    // caller uses its embedding, except under quantize at load, which makes
    // a quantized copy of `embedding` (stored as a float type) for the
    // output: it is the largest matmul of a decode step.
    const Tensor *output_weight(const std::string &embedding, std::initializer_list<int64_t> shape);
    // A mixture-of-experts weight (ne0, rows, n_expert), only ever the src0
    // of MUL_MAT_ID. It is quantized at load and prepared like a matmul
    // weight after the architecture's load, while the copies stay within the
    // weights budget; past it, it is read from the file mapping as stored.
    const Tensor *expert_weight(const std::string &name, std::initializer_list<int64_t> shape);
    // llama.cpp's per-tensor product scales: `<name>.scale` (F32) beside a
    // `<name>.weight`, one value, or one per expert for an expert weight
    // (a `.scale` of another shape is left to the architecture).
    // Its converter writes them for NVFP4 checkpoints (ModelOpt's
    // weight_scale_2, compressed-tensors' 1 / weight_global_scale), and
    // llama.cpp multiplies each product by them (build_lora_mm's w_s);
    // matmul_weight and expert_weight look them up with the weight.
    // output_scale: 1 where there is none; expert_output_scales: (n_expert)
    // or nullptr. A `.scale` beside an NVFP4 weight that the architecture
    // read some other way fails the load (it would be silently wrong).
    float output_scale(const Tensor *w) const;
    const Tensor *expert_output_scales(const Tensor *w) const;
    // Rows [row0, row0 + n_rows) of a required (ne0, total_rows) matrix as a
    // matmul weight of its own: one part of a fused projection (Phi-3's qkv
    // and gate_up), prepared like matmul_weight.
    const Tensor *matmul_weight_rows(const std::string &name, int64_t ne0, int64_t total_rows, int64_t row0,
                                     int64_t n_rows);

    // The decoder blocks the model runs: <arch>.block_count less the
    // multi-token-prediction blocks stored after them
    // (<arch>.nextn_predict_layers: llama.cpp's converter keeps a Qwen3.5's,
    // NemotronH's or GLM's by default), which vt does not run. A per-layer
    // list of the file may cover those too (per_layer_list_ok).
    uint32_t block_count() const { return block_count_; }
    uint32_t nextn_layers() const { return nextn_layers_; }
    bool per_layer_list_ok(uint64_t n) const { return n == block_count_ || n == (uint64_t)block_count_ + nextn_layers_; }

    // Reads a required/optional "<arch>.<suffix>" integer, float or string key.
    uint32_t arch_u32(const char *suffix) const;
    uint32_t arch_u32(const char *suffix, uint32_t def) const;
    float arch_f32(const char *suffix, float def) const;
    std::string arch_str(const char *suffix) const;  // "" when absent

    // What quantization at load did (target nullopt: not asked for).
    const QuantizeStats &quantize_stats() const { return quantized_; }

    // Where the weights a forward pass reads are, in host memory (weights
    // on another device are not counted): copies (repacked, quantized, a folder's stacked
    // experts) and the file mapping; and the bytes one decode token reads:
    // every weight but the experts whole (an untied embedding one row), of
    // each expert tensor n_expert_used / n_expert.
    struct WeightBytes {
        uint64_t resident = 0, mapped = 0, per_token = 0;
        uint32_t experts_mapped = 0, experts = 0;  // expert tensors left in the mapping, of all
    };
    const WeightBytes &weight_bytes() const { return weight_bytes_; }

    Hparams hparams;
    std::vector<LayerCacheSpec> cache_layers;  // (n_layer + extra_cache_owner.size()), set by Architecture::load
    // The block of each cache layer past n_layer: a block with two caches
    // (Falcon-H1: attention KV beside a Mamba state slot) declares its second
    // one there, and its graph reads k_cache / v_cache at that index. Empty
    // for one cache per block (every other architecture).
    std::vector<uint32_t> extra_cache_owner;
    // The multi-token-prediction layer's cache (Architecture::build_mtp),
    // index cache_layers.size() in a PagedKv made with_mtp; empty without
    // one. Not in cache_layers: only a context that drafts with it pays for it.
    std::vector<LayerCacheSpec> mtp_cache;
    // cache_layers[il], or past them the MTP layer's.
    const LayerCacheSpec &cache_layer(uint32_t il) const {
        return il < cache_layers.size() ? cache_layers[il] : mtp_cache.at(il - cache_layers.size());
    }
    uint64_t n_params = 0;
    uint64_t size_bytes = 0;

private:
    Model() = default;
    // Hands t to prepare_weight of the buffer type of its device where that
    // is host memory (a device's weights are uploaded as stored).
    const Tensor *prepare_weight(Tensor *t, const std::string &name);
    // Quantizes t (a float matmul weight) in place when quantize at load
    // asks for it; then prepares it. `release` gives back the float source's
    // pages (false where it is still read: a tied embedding).
    const Tensor *finish_matmul_weight(Tensor *t, const std::string &name, bool release);
    std::unique_ptr<GgufFile> gguf_;
    std::unique_ptr<Tokenizer> tokenizer_;
    std::unique_ptr<Architecture> arch_;
    std::string arch_name_;
    bool from_folder_ = false;
    std::vector<std::unique_ptr<Tensor>> weights_;  // stable addresses
    std::vector<std::unique_ptr<PageBuffer>> quantized_copies_;  // weights quantize at load wrote
    std::vector<BufferPtr> prepared_;  // weights in a buffer type's own layout (prepare_weight)
    size_t prepared_bytes_ = 0;
    // Copies the weights into buffers of the device (not host memory).
    void place_weights();
    // Whether weight t goes to device_ (by its layer: n_device_layers_;
    // experts never).
    bool on_device(const Tensor &t) const;
    vt_device *device_ = nullptr;
    uint32_t n_device_layers_ = 0;
    uint32_t block_count_ = 0, nextn_layers_ = 0;
    bool outer_on_device_ = false;  // embedding, output norm and output
    std::vector<BufferPtr> device_weights_;  // on device_, when it is not the CPU
    uint64_t uploaded_bytes_ = 0;
    double upload_seconds_ = 0;
    QuantizeStats quantized_;
    // Expert weights, prepared after the architecture's load (prepare_experts).
    std::vector<Tensor *> experts_;
    uint64_t weights_budget_ = 0;
    const void *embedding_data_ = nullptr;  // the token embedding as looked up
    bool tied_output_ = false;              // the output reads the embedding
    std::vector<const void *> copied_;      // weights a folder holds as copies (GgufTensorInfo::copied)
    std::vector<std::pair<const Tensor *, float>> output_scales_;
    std::vector<std::pair<const Tensor *, const Tensor *>> expert_output_scales_;
    std::vector<std::string> scales_read_;  // the `.scale` names looked up with their weights
    // The `.scale` tensor of weight `name` ("" if none or not a .weight).
    std::string scale_name(const std::string &name) const;
    // Fails the load for a `.scale` beside an NVFP4 weight that none of the above read.
    void check_scales_read() const;
    WeightBytes weight_bytes_;
    void prepare_experts();
    // Fills weight_bytes_ from the weights looked up so far.
    void count_weight_bytes();
};

} // namespace vt
