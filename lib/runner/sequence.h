// The runner: the only bridge from model graphs to backends. A Context owns a
// graph executor on the model's device and the reusable buffers of one
// forward pass (graph, an arena in device memory), packs the attention
// metadata of a batch (slots, positions, block tables) into the graph's
// inputs, sends them to the device and hands back the logits in host memory. K/V live in a PagedKv: the
// serving engine's pool of blocks shared by many sequences, or a Sequence's
// own (vt_seq), one sequence over blocks 0..n-1 of the same kind of pool, so
// both run the same attention kernel and pick the same tokens.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/graph-exec.h"
#include "core/graph.h"
#include "kv/block-pool.h"
#include "model/lora.h"
#include "model/model.h"
#include "runner/paged-kv.h"

namespace vt {

class Context {
public:
    // Computes on the model's device (Model::device()); device, when not
    // empty, must name it. Throws vt::Error.
    Context(const Model &model, const std::string &device, uint32_t n_threads, uint32_t n_batch);
    // Computes with another context's executor (its stream and threads),
    // which must be on the model's device and outlive this context: a
    // draft model beside its target, whose passes alternate with the
    // target's on one thread, so that two pools of spinning workers never
    // share the cores. Throws vt::Error (another device).
    Context(const Model &model, Context &shared, uint32_t n_batch);
    ~Context();
    Context(const Context &) = delete;
    Context &operator=(const Context &) = delete;

    const Model &model() const { return model_; }
    uint32_t n_batch() const { return n_batch_; }

    // Which of a sequence's tokens in a batch need logits (last: its last
    // BatchSeq::n_last).
    enum class Logits : uint8_t { none, last, all };

    // One sequence's part of a batch: tokens at positions start_pos.. whose
    // K/V go to (and whose attention reads) the slots of its block tables,
    // one per cache group of the PagedKv, each covering start_pos +
    // tokens.size() positions (kNoBlock before a sliding window).
    struct BatchSeq {
        std::span<const int32_t> tokens;
        uint32_t start_pos = 0;
        std::span<const std::vector<BlockId>> block_tables;
        Logits logits = Logits::last;
        uint32_t n_last = 1;  // Logits::last: the rows of its last n_last tokens (a draft's verification)
        const LoraAdapter *lora = nullptr;  // the adapter its tokens compute with, or none
        float lora_scale = 1.0f;            // the request's scale of it
        // Its recurrent layers' state slot in the PagedKv (a model with such
        // layers; -1 otherwise). start_pos 0 starts from a zero state.
        int32_t state_slot = -1;
    };

    // One forward pass over every sequence of the batch; n_ctx is the most
    // positions a sequence may reach (vt_seq's n_ctx, the engine's
    // max_model_len). Returns the logits (n_vocab, n_out) of the requested
    // rows in batch order (one unrequested row when none is: a graph needs an
    // output), in host memory, valid until the next forward.
    const Tensor *forward(PagedKv &kv, std::span<const BatchSeq> batch, int64_t n_ctx);

    // Multi-token prediction (Architecture::build_mtp). With hidden_out, a
    // forward pass also keeps every token's final normed hidden state,
    // hidden() (n_embd, n_tokens) in batch order; with mtp it is the MTP
    // layer's pass instead (kv made with_mtp), which reads hidden_in, one
    // trunk hidden state per token, and keeps its own.
    struct Pass {
        bool hidden_out = false;
        bool mtp = false;
        const float *hidden_in = nullptr;  // mtp: (n_embd, n_tokens)
    };
    const Tensor *forward(PagedKv &kv, std::span<const BatchSeq> batch, int64_t n_ctx, const Pass &pass);
    // The hidden states of the last forward with hidden_out or mtp, valid
    // until the next forward.
    std::span<const float> hidden() const { return hidden_; }

    // The compute arena a forward pass over batch needs (the graph built and
    // planned, nothing computed or allocated; kv may hold shapes only).
    size_t arena_need(PagedKv &kv, std::span<const BatchSeq> batch, int64_t n_ctx);
    // Grows the arena on the device to at least bytes now (a later forward
    // that needs more grows it again). Throws VT_ERR_OUT_OF_MEMORY.
    void reserve_arena(size_t bytes);

    const GraphExecutor &executor() const { return *exec_; }

private:
    // The batch's per-group index sizes (n_index_), adapters (lora_) and the
    // forward's arguments; sets n_tok and n_out (rows that want logits).
    ForwardArgs prepare(PagedKv &kv, std::span<const BatchSeq> batch, int64_t n_ctx, int64_t &n_tok, int64_t &n_out);
    // Builds the forward graph into graph_, unplanned.
    const Tensor *build_graph(ForwardArgs &args, const PagedKv &kv, int64_t n_out, const std::vector<int64_t> &n_index);
    // Builds the graph (with one kv_index input per cache group of kv, of
    // n_index[g] entries), sizes the arena and binds it; the caller fills
    // the inputs, then compute().
    const Tensor *build(ForwardArgs &args, const PagedKv &kv, int64_t n_out, const std::vector<int64_t> &n_index);
    void compute();

    const Model &model_;
    std::unique_ptr<GraphExecutor> own_exec_;  // null when shared
    GraphExecutor *exec_;
    uint32_t n_batch_;
    Graph graph_;
    BufferPtr arena_;  // on the device; grows to the largest plan, then stays
    std::vector<int32_t> staging_;   // forward(): inputs before they go to the device
    std::vector<float> logits_host_; // forward(): the logits of a device that is not host memory
    Pass pass_;                      // forward(): what build_graph builds
    Tensor *hidden_t_ = nullptr;     // its hidden states' output, or null
    Tensor *hidden_in_t_ = nullptr;  // the MTP pass's input
    std::vector<float> hidden_host_; // hidden()'s copy from a device
    std::span<const float> hidden_;
    Tensor logits_view_{};
    std::vector<int64_t> n_index_;     // forward() scratch
    int64_t n_state_seqs_ = 0;         // forward(): the batch's sequences (the state index's columns)
    std::vector<Tensor *> index_in_;     // per cache group
    std::vector<Tensor *> layer_index_;  // per layer: its group's
    std::vector<LoraSlot> lora_;         // forward(): one per adapter in the batch
    std::vector<int64_t> lora_counts_;   // forward(): tokens per adapter
    std::vector<int32_t> lora_rows_;     // forward(): one adapter's rows and scales, staged
    std::vector<float> lora_scales_;
};

// vt_seq: one sequence with a cache of its own for n_ctx positions.
class Sequence {
public:
    Sequence(Context &ctx, uint32_t n_ctx, bool logits_all);
    Sequence(const Sequence &) = delete;
    Sequence &operator=(const Sequence &) = delete;

    void feed(const int32_t *tokens, size_t n);
    void step();
    const float *logits(int32_t i) const;
    size_t n_past() const { return (size_t)n_past_; }
    void reset();
    // The adapter the next steps compute with (null: none), held until replaced.
    void set_lora(std::shared_ptr<const LoraAdapter> lora, float scale);

private:
    static constexpr uint32_t kBlockSize = 16;  // as the engine's default

    // Group g's table for positions 0 .. n - 1: blocks in order for full
    // attention; a ring over the group's blocks for a sliding window, with
    // kNoBlock before the window of position first.
    void fill_tables(uint32_t first, uint32_t n);

    Context &ctx_;
    uint32_t n_ctx_;
    bool logits_all_;
    int64_t n_past_ = 0;
    std::vector<int32_t> pending_;
    std::unique_ptr<PagedKv> kv_;
    std::vector<std::vector<BlockId>> tables_;  // per cache group
    std::vector<float> logits_;               // (n_vocab, n_rows_of_last_step)
    int64_t n_logit_rows_ = 0;
    std::shared_ptr<const LoraAdapter> lora_;
    float lora_scale_ = 1.0f;
};

} // namespace vt
