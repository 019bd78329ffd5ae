// What the architecture files share: reading the common hyper-parameters
// and weights of a decoder block, and building its graph pieces (norms,
// projections, rotary embedding, attention, gated FFN, logits). A model file
// never sees the cache layout: attention() reads the paged pool the runner
// owns, with the layer's window from its cache spec.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/graph.h"
#include "model/model.h"

namespace vt {

// Reads "<arch>.*" keys shared by decoder-only transformers into m.hparams
// (context, widths, heads, head size, rope dimensions, base, linear or YaRN
// scaling, RMS epsilon) and checks them. rope_mode is the caller's: it
// depends on how the converter laid out Q and K (a folder is always NeoX).
// uniform_kv_heads false: the layers may have KV head counts of their own
// (Gemma 4's global layers); hparams then hold the first layer's, and the
// architecture reads read_head_count_kv().
void read_decoder_hparams(Model &m, int32_t rope_mode, bool uniform_kv_heads = true);

// Which layers slide, as llama.cpp reads it: attention.sliding_window_pattern
// is a bool per layer, or a period n (layer il slides unless il % n == n - 1;
// 0: all slide), def_period when absent. full_first: the full layer is the
// first of each period instead (il % n == 0; llama.cpp's Laguna rule).
std::vector<bool> sliding_layers(const Model &m, uint32_t n_layer, uint32_t def_period, bool full_first = false);

// attention.head_count_kv per layer: one count for every layer, or the
// file's per-layer list (Kimi-Linear writes 0 for its linear-attention
// layers); n_head where the file has neither. Needs n_layer and n_head.
std::vector<uint32_t> read_head_count_kv(const Model &m);
// attention.head_count per layer: one count for every layer, or the file's
// per-layer list (Laguna's); each from 1 to 4096. Needs block_count only.
std::vector<uint32_t> read_head_counts(const Model &m);

// One full-attention cache layer per block.
void full_attention_cache(Model &m);

// The projections of one attention block. Biases, q/k norms (per head, over
// head_dim) and rope frequency factors are optional (nullptr).
struct AttnWeights {
    const Tensor *wq = nullptr, *wk = nullptr, *wv = nullptr, *wo = nullptr;
    const Tensor *bq = nullptr, *bk = nullptr, *bv = nullptr;
    const Tensor *q_norm = nullptr, *k_norm = nullptr;  // (head_dim), or (n_head * head_dim) and (n_embd_kv)
    bool qk_norm_full = false;                           // the norms span the whole projections (OLMoE)
    const Tensor *bo = nullptr;                          // (n_embd): the output projection's bias (gpt-oss)
    const Tensor *sinks = nullptr;                       // (n_head) f32: attention sinks (gpt-oss), ATTN_PAGED's src6
};

// Loads blk.<il>.attn_{q,k,v,output}.weight (or q, k and v as row ranges of
// a fused attn_qkv.weight) and, when present, their .bias and
// attn_{q,k}_norm.weight, checked against hparams: per head (head_dim), or
// with qk_norm_full over the whole q and k projections (OLMoE). n_head: the
// layer's query heads where they differ from hparams' (Laguna), 0: n_head.
AttnWeights load_attn_weights(Model &m, uint32_t il, bool qk_norm_full = false, uint32_t n_head = 0);

struct FfnWeights {
    const Tensor *gate = nullptr, *up = nullptr, *down = nullptr;
};
// blk.<il>.ffn_{gate,up,down}.weight; without ffn_gate, ffn_up is the fused
// (n_embd, 2 n_ff) gate_up, gate rows first.
FfnWeights load_ffn_weights(Model &m, uint32_t il);

// A mixture-of-experts FFN: a router over n_expert experts, each a gated
// FFN, the chosen ones' outputs weighed and added; shared experts (one
// gated FFN of all of them together) run for every token and are added.
struct MoeWeights {
    const Tensor *router = nullptr;      // (n_embd, n_expert), as stored: routing stays exact
    const Tensor *probs_bias = nullptr;  // (n_expert) or null: the selection bias (DeepSeek-V3)
    const Tensor *gate = nullptr, *up = nullptr;  // (n_embd, n_ff_exp, n_expert)
    const Tensor *down = nullptr;                 // (n_ff_exp, n_embd, n_expert)
    FfnWeights shared;                   // all null without shared experts
    const Tensor *shared_gate = nullptr; // (n_embd, 1) or null: sigmoid(h . g) scales the shared experts' output
    float router_softcap = 0.0f;         // > 0: the router logits soft-capped, c * tanh(l / c) (Laguna)
    // gpt-oss: the router's bias and each expert's biases (F32, chosen by
    // the expert ids), and its clamped SwiGLU (limit > 0).
    const Tensor *router_bias = nullptr;              // (n_expert)
    const Tensor *gate_bias = nullptr, *up_bias = nullptr;  // (n_ff_exp, n_expert)
    const Tensor *down_bias = nullptr;                // (n_embd, n_expert)
    SwigluParams swiglu{};
};

// Defaults of what the file may leave out, per architecture (llama.cpp's).
struct MoeDefaults {
    int32_t gating = kMoeSoftmax;
    bool norm = true;  // chosen weights renormalized to sum to 1
};
// Reads the "<arch>.expert_*" keys (and leading_dense_block_count) into
// m.hparams when the file has experts; checks them.
void read_moe_hparams(Model &m, const MoeDefaults &d);
// blk.<il>.ffn_gate_inp, ffn_{gate,up,down}_exps, and, when present,
// exp_probs_b.bias, ffn_{gate,up,down}_shexp and ffn_gate_inp_shexp.
MoeWeights load_moe_weights(Model &m, uint32_t il);
// Whether layer il is a MoE layer of m (else it has a dense FFN).
bool is_moe_layer(const Model &m, uint32_t il);

// A norm weight (ne0) that must be F32.
const Tensor *load_norm(Model &m, const std::string &name, int64_t ne0, bool required = true);

// The token embedding (n_embd, n_vocab), the output projection (output.weight,
// or the embedding itself where the file ties them) and the final norm
// (norm_name): every architecture's first and last weights.
void load_embeddings_and_output(Model &m, const Tensor *&tok_embd, const Tensor *&output, const Tensor *&output_norm,
                                const char *norm_name = "output_norm.weight");

enum class Activation { silu, gelu_tanh };

// Graph building for one forward pass of m.
class LayerBuilder {
public:
    LayerBuilder(const Model &m, const ForwardArgs &a);

    Graph &graph() { return g_; }
    int64_t n_tokens() const { return n_; }
    const ForwardArgs &args() const { return a_; }
    const Model &model() const { return m_; }

    Tensor *embed(const Tensor *tok_embd);                                  // (n_embd, n)
    Tensor *rms_norm(Tensor *x, const Tensor *w);                           // eps from hparams
    Tensor *rms_norm(Tensor *x, const Tensor *w, float eps);                // w null: x / rms only
    Tensor *linear(const Tensor *w, Tensor *x, const Tensor *bias = nullptr);
    Tensor *add(Tensor *a, Tensor *b);
    Tensor *scale(Tensor *x, float s);
    // cap * tanh(x / cap) (cap > 0): the soft-capped logits of Gemma and Muse Glimmer, routers' too.
    Tensor *softcap(Tensor *x, float cap);

    // Self-attention of layer il on normed input h (n_embd, n): projections,
    // q/k norms, rotary embedding with rope, causal attention (scaled by
    // scale, within the layer's window) over the KV cache, output
    // projection. Returns (n_embd, n).
    Tensor *attention(uint32_t il, Tensor *h, const AttnWeights &w, const RopeParams &rope, float scale,
                      const Tensor *rope_factors = nullptr);
    // attention() after its projections: q (head_dim, H, n) with H the
    // layer's query heads (n_head, or Laguna's per-layer count), k and v
    // (head_dim, n_head_kv, n) through w's per-head norms (when w has them),
    // rope (none where rope.n_rot is 0: a layer without positions) and the
    // paged attention of layer il. Returns (head_dim * H, n), before the
    // output projection. The shapes are q's and k's (a layer may have its own
    // head size and KV heads). k and v null: the layer shares another's cache
    // (LayerCacheSpec::shared_from) and reads it, writing nothing
    // (ATTN_PAGED's read-only mode).
    Tensor *attend(uint32_t il, Tensor *q, Tensor *k, Tensor *v, const AttnWeights &w, const RopeParams &rope,
                   float scale, const Tensor *rope_factors = nullptr);

    Tensor *ffn(Tensor *h, const FfnWeights &w, Activation act);
    // The mixture-of-experts FFN of h (n_embd, n), with hparams' routing.
    Tensor *moe(Tensor *h, const MoeWeights &w);
    // MUL_MAT_ID of the experts `weight` (ne0, rows, n_expert) over x's
    // slots (ne0, k or 1, n) chosen by ids (k, n): (rows, k, n), each slot's
    // product times its expert's scale where the model has one
    // (Model::expert_output_scales: NVFP4's).
    Tensor *experts(const Tensor *weight, Tensor *x, Tensor *ids);
    // A layer's FFN: its experts where it has them (moe.router), else the dense one.
    Tensor *ffn_or_moe(Tensor *h, const FfnWeights &ffn, const MoeWeights &moe, Activation act) {
        return moe.router ? this->moe(h, moe) : this->ffn(h, ffn, act);
    }

    // The rows in out_rows, normed and projected to the vocabulary, times
    // scale (muP's logit multipliers), soft-capped at cap when cap > 0
    // (Gemma 4): the graph's output (n_vocab, n_out).
    Tensor *logits(Tensor *x, const Tensor *norm, const Tensor *output, float scale = 1.0f, float cap = 0.0f);

    // RopeParams from hparams, with another base and scale where a layer
    // kind has its own (Gemma 3's sliding layers).
    RopeParams rope() const;

private:
    static Tensor *w(const Tensor *t) { return const_cast<Tensor *>(t); }
    const Model &m_;
    const ForwardArgs &a_;
    Graph &g_;
    int64_t n_;
};

} // namespace vt
