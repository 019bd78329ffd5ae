#include "engine/kv-plan.h"

#include <algorithm>

#include "backend/backend.h"
#include "core/error.h"
#include "engine/engine.h"
#include "kv/kv-cache-manager.h"

namespace vt {

namespace {
constexpr double kMiB = 1024.0 * 1024.0;

// The compute arena of the largest step the engine may run: max_batched
// tokens over as many sequences as may run, each wanting logits and each
// with a block table as long as the context allows. Built and planned over
// a pool of shapes only: nothing is computed or allocated.
size_t full_step_arena(Context &ctx, const std::vector<CacheGroup> &groups, uint32_t block_size,
                       uint32_t max_num_seqs, uint32_t max_batched, uint32_t max_len, bool with_mtp) {
    const uint32_t n_seq = std::max(1u, std::min(max_num_seqs, max_batched));
    const uint32_t n_slots = state_slots(ctx.model().cache_layers).layers.empty() ? 0 : n_seq;
    PagedKv shapes(ctx.model(), std::vector<uint32_t>(groups.size(), 1), block_size, n_slots, /*allocate=*/false,
                   with_mtp);
    const uint32_t first = max_batched - (n_seq - 1);
    std::vector<int32_t> tokens(first, 0);
    const size_t table_len = ((size_t)max_len + block_size - 1) / block_size;
    std::vector<std::vector<BlockId>> tables(groups.size(), std::vector<BlockId>(table_len, 0));
    std::vector<Context::BatchSeq> batch(n_seq);
    for (uint32_t s = 0; s < n_seq; ++s) {
        batch[s].tokens = std::span<const int32_t>(tokens.data(), s == 0 ? first : 1);
        batch[s].start_pos = 0;
        batch[s].block_tables = tables;
        batch[s].state_slot = n_slots ? (int32_t)s : -1;
    }
    return ctx.arena_need(shapes, batch, max_len);
}

// The most blocks a group may have so that each of its layers' pools (one
// tensor) fits in one allocation of the layer's device (a GPU's largest
// allocation is often smaller than its memory).
uint32_t blocks_per_allocation(const Model &m, const CacheGroup &g, uint32_t block_size) {
    uint64_t most = UINT32_MAX;
    for (uint32_t l : g.layers) {
        vt_device *d = m.layer_device(l);
        vt_buffer_type *bt = d->iface->get_buffer_type(d);
        const uint64_t pool_block = (uint64_t)block_size * row_bytes(DType::F16, m.cache_layer(l).kv_row);
        most = std::min<uint64_t>(most, bt->iface->get_max_size(bt) / pool_block);
    }
    return (uint32_t)most;
}
} // namespace

KvPlan plan_kv(Context &ctx, const EngineConfig &cfg) {
    const Model &model = ctx.model();
    const Hparams &hp = model.hparams;
    KvPlan p;
    // With the multi-token-prediction method, its layer's cache is one more
    // layer of the pool (engine/mtp.h).
    std::vector<LayerCacheSpec> layers = model.cache_layers;
    if (cfg.mtp_k) layers.insert(layers.end(), model.mtp_cache.begin(), model.mtp_cache.end());
    p.groups = cache_groups(layers);
    p.block_size = cfg.block_size ? cfg.block_size : 16;
    p.max_num_seqs = cfg.max_num_seqs ? cfg.max_num_seqs : 64;
    p.max_batched = cfg.max_batched_tokens ? cfg.max_batched_tokens : 512;
    const std::vector<CacheGroup> &groups = p.groups;
    const uint32_t block_size = p.block_size, max_num_seqs = p.max_num_seqs, max_batched = p.max_batched;
    uint32_t max_len = cfg.max_model_len ? cfg.max_model_len : (hp.n_ctx_train ? hp.n_ctx_train : 4096);
    const uint64_t len_blocks = ((uint64_t)max_len + block_size - 1) / block_size;

    // One byte budget over the groups (vLLM's hybrid allocator): a sliding
    // group gets the blocks max_num_seqs sequences touch at once (their
    // windows and a step each), full attention the rest. A latent group
    // keeps every position too (window 0): it counts as full attention here,
    // at its own bytes per token.
    uint64_t full_block_bytes = 0, sliding_bytes = 0;
    std::vector<uint64_t> want(groups.size(), 0);
    for (size_t g = 0; g < groups.size(); ++g) {
        const uint64_t block_bytes = groups[g].bytes_per_token * block_size;
        if (groups[g].window == 0) {
            full_block_bytes += block_bytes;
            continue;
        }
        want[g] = (uint64_t)max_num_seqs *
                  std::min(sliding_blocks_per_step(groups[g].window, max_batched, block_size), len_blocks);
        sliding_bytes += want[g] * block_bytes;
    }

    // A draft model's KV rides along every full-attention block (as many
    // tokens as the model's own), so the budget pays for both; beside a
    // model of sliding windows only it is the budget's full-attention part.
    uint64_t draft_block_bytes = 0;
    if (cfg.draft_model) {
        for (const CacheGroup &g : cache_groups(cfg.draft_model->cache_layers))
            draft_block_bytes += g.bytes_per_token * block_size;
        full_block_bytes += draft_block_bytes;
    }

    // What the devices hold after the weights and a full step's arena.
    bool on_device = false;
    for (uint32_t l = 0; l < model.cache_layers.size(); ++l) on_device |= !device_is_host(model.layer_device(l));
    if (on_device || !device_is_host(ctx.executor().device()))
        p.arena_bytes = full_step_arena(ctx, groups, block_size, max_num_seqs, max_batched, max_len, cfg.mtp_k > 0);
    std::string source;
    // Recurrent layers: a state slot per running sequence (vLLM's MambaSpec),
    // and with prefix caching up to two snapshots each (below).
    const uint64_t slot_bytes = state_slots(model.cache_layers).bytes_per_slot;
    // With speculative decoding, a checkpoint beside each live slot
    // (kv/state-slots.h): a running sequence holds two.
    const bool checkpoints = slot_bytes && (cfg.ngram.k || cfg.suffix.k || cfg.draft_k || cfg.mtp_k);
    const uint64_t live_per_seq = checkpoints ? 2 : 1;
    const uint64_t slots_per_seq = live_per_seq + (cfg.prefix_caching ? 2 : 0);
    // A draft model's recurrent layers: a live slot and a checkpoint per
    // running sequence (engine/draft-model.h).
    const uint64_t draft_slot_bytes = cfg.draft_model ? state_slots(cfg.draft_model->cache_layers).bytes_per_slot : 0;
    const uint64_t seq_state = slot_bytes * live_per_seq + 2 * draft_slot_bytes;
    const uint64_t limit =
        kv_memory_limit(model, ctx.executor().device(), p.arena_bytes, len_blocks * block_size / slots_per_seq, &source);
    uint64_t budget = cfg.kv_cache_bytes;
    if (budget == 0) {
        const uint64_t state = slot_bytes * slots_per_seq + 2 * draft_slot_bytes;
        budget = std::min(limit, (uint64_t)max_num_seqs * (len_blocks * full_block_bytes + state) + sliding_bytes);
        p.budget_source = budget == limit ? source : "what max_num_seqs requests of max_model_len tokens use";
    } else if (on_device && budget > limit) {
        // The CPU's pages are taken as they are first written, so an explicit
        // budget there is the caller's to judge; a device's is allocated whole.
        fail(VT_ERR_OUT_OF_MEMORY, "KV cache: %.1f MiB does not fit; %.1f MiB fits (%s)", (double)budget / kMiB,
             (double)limit / kMiB, source.c_str());
    } else {
        p.budget_source = "kv_cache_bytes";
    }
    // The slots come first, at most half the budget: with fewer slots than
    // max_num_seqs, fewer requests run at once (max_num_seqs is lowered).
    uint32_t n_slots = 0;
    if (seq_state) {
        n_slots = (uint32_t)std::min<uint64_t>(max_num_seqs, budget / 2 / seq_state);
        if (n_slots == 0) n_slots = budget >= seq_state ? 1 : 0;
        if (n_slots == 0)
            fail(cfg.kv_cache_bytes ? VT_ERR_INVALID_ARGUMENT : VT_ERR_OUT_OF_MEMORY,
                 "KV cache: %.2f MiB (%s) holds no state slot of %.2f MiB", (double)budget / kMiB,
                 cfg.kv_cache_bytes ? "kv_cache_bytes" : source.c_str(), (double)seq_state / kMiB);
        p.max_num_seqs = n_slots;
        p.state_slots = slot_bytes ? n_slots : 0;
        p.slot_bytes = slot_bytes;
        p.state_checkpoints = checkpoints;
        p.draft_state_seqs = draft_slot_bytes ? n_slots : 0;
        const uint64_t live_bytes = (uint64_t)n_slots * seq_state;
        if (slot_bytes && cfg.prefix_caching && budget / 2 > live_bytes)
            p.state_snapshots = (uint32_t)std::min<uint64_t>(2ull * n_slots, (budget / 2 - live_bytes) / slot_bytes);
        budget -= live_bytes + (uint64_t)p.state_snapshots * slot_bytes;
    }
    std::vector<uint32_t> blocks(groups.size(), 0);
    if (groups.empty()) {
        // Recurrent layers only: nothing paged.
    } else if (full_block_bytes == 0) {
        // Sliding windows only: every group the same count, the whole budget.
        uint64_t all_block_bytes = 0;
        for (const CacheGroup &g : groups) all_block_bytes += g.bytes_per_token * block_size;
        const uint64_t n = std::min<uint64_t>(budget / all_block_bytes, INT32_MAX - 1);
        for (uint32_t &b : blocks) b = (uint32_t)n;
    } else {
        // Sliding groups at most half the budget, and no more than leaves
        // full attention one sequence of max_model_len (a model whose few
        // full layers own little cache, as Gemma 4's with KV sharing, would
        // else hold less than one request); then full attention the rest.
        const uint64_t one_seq = len_blocks * full_block_bytes;
        const uint64_t cap = std::min(budget / 2, budget > one_seq ? budget - one_seq : 0);
        const double share = sliding_bytes > cap ? (double)cap / (double)sliding_bytes : 1.0;
        uint64_t used = 0;
        for (size_t g = 0; g < groups.size(); ++g) {
            if (groups[g].window == 0) continue;
            // Never below one sequence's step: the scheduler could serve no one.
            const uint64_t floor =
                std::min(sliding_blocks_per_step(groups[g].window, max_batched, block_size), len_blocks);
            blocks[g] = (uint32_t)std::min<uint64_t>(std::max((uint64_t)((double)want[g] * share), floor), INT32_MAX - 1);
            used += (uint64_t)blocks[g] * groups[g].bytes_per_token * block_size;
        }
        const uint32_t full_blocks =
            used < budget ? kv_blocks_for_budget(budget - used, full_block_bytes / block_size, block_size) : 0;
        for (size_t g = 0; g < groups.size(); ++g)
            if (groups[g].window == 0) blocks[g] = full_blocks;
        p.draft_blocks = full_blocks;
    }
    if (cfg.draft_model)
        for (const CacheGroup &g : cache_groups(cfg.draft_model->cache_layers))
            p.draft_blocks = std::min(p.draft_blocks, blocks_per_allocation(*cfg.draft_model, g, block_size));
    if (cfg.kv_cache_bytes == 0)
        for (size_t g = 0; g < groups.size(); ++g)
            blocks[g] = std::min(blocks[g], blocks_per_allocation(model, groups[g], block_size));
    for (size_t g = 0; g < groups.size(); ++g)
        if (blocks[g] == 0) {
            const uint64_t block_bytes = groups[g].bytes_per_token * block_size;
            if (cfg.kv_cache_bytes == 0)
                fail(VT_ERR_OUT_OF_MEMORY, "KV cache: %.2f MiB fits (%s), less than one block of %u tokens "
                     "(%.2f MiB)", (double)budget / kMiB, p.budget_source.c_str(), block_size,
                     (double)block_bytes / kMiB);
            fail(VT_ERR_INVALID_ARGUMENT, "KV cache of %llu bytes holds no block of %u tokens (%llu bytes each)",
                 (unsigned long long)budget, block_size, (unsigned long long)block_bytes);
        }

    KvCacheConfig kv_cfg{block_size, 0, cfg.prefix_caching, {}};
    for (size_t g = 0; g < groups.size(); ++g) kv_cfg.groups.push_back({blocks[g], groups[g].window});
    const uint64_t seq_tokens = KvCacheManager(kv_cfg).max_seq_tokens();
    if (cfg.max_model_len == 0) max_len = (uint32_t)std::min<uint64_t>(max_len, seq_tokens);
    else if (cfg.max_model_len > seq_tokens)
        fail(VT_ERR_INVALID_ARGUMENT, "max_model_len %u exceeds the %llu tokens the KV cache holds", cfg.max_model_len,
             (unsigned long long)seq_tokens);
    p.blocks = std::move(blocks);
    p.max_model_len = max_len;
    return p;
}

} // namespace vt
