#include "model/model.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/error.h"
#include "core/log.h"
#include "core/quant.h"
#include "model/hf-folder.h"

namespace vt {

namespace {
// A layer that shares another's cache (LayerCacheSpec::shared_from) reads a
// pool the runner lays out for its owner: the owner must be an earlier layer
// that owns its pool, of the same kind, window and row. Logs the mapping:
// these layers add nothing to the KV cache.
void check_shared_caches(const Model &m) {
    std::string shared;
    for (uint32_t l = 0; l < m.cache_layers.size(); ++l) {
        const LayerCacheSpec &s = m.cache_layers[l];
        if (!is_shared(s)) continue;
        const uint32_t o = s.shared_from;
        if (o >= l || is_shared(m.cache_layers[o]))
            fail(VT_ERR_FORMAT, "%s: layer %u shares the KV cache of layer %u, which is not an earlier layer with a cache "
                 "of its own", m.arch_name().c_str(), l, o);
        const LayerCacheSpec &src = m.cache_layers[o];
        if (src.kind != s.kind || src.window != s.window || src.kv_row != s.kv_row ||
            (s.kind != CacheKind::full_attention && s.kind != CacheKind::sliding_window))
            fail(VT_ERR_FORMAT, "%s: layer %u shares the KV cache of layer %u, whose kind, window or row differs",
                 m.arch_name().c_str(), l, o);
        shared += (shared.empty() ? "" : ", ") + std::to_string(l) + " -> " + std::to_string(o);
    }
    if (!shared.empty())
        VT_LOG_INFO("KV sharing: layers read the cache of an earlier layer and own none (%s)", shared.c_str());
}
} // namespace

std::unique_ptr<Model> Model::load(const std::string &path, bool use_mmap, const Progress &progress,
                                   std::optional<DType> quantize, vt_device *device, int32_t n_gpu_layers,
                                   uint64_t weights_budget) {
    if (quantize && !can_quantize_weights(*quantize))
        fail(VT_ERR_UNSUPPORTED, "cannot quantize weights to %s at load (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q6_K, MXFP4)",
             dtype_name(*quantize));
    auto report = [&](float p) {
        if (progress && !progress(p)) fail(VT_ERR_CANCELLED, "%s: load cancelled by the progress callback", path.c_str());
    };
    std::unique_ptr<Model> m(new Model());
    m->device_ = device ? device : cpu_device();
    m->quantized_.target = quantize;
    m->weights_budget_ = weights_budget;
    report(0.0f);
    std::vector<int32_t> extra_eos;
    m->from_folder_ = std::filesystem::is_directory(path);
    if (m->from_folder_) {
        HfFolder folder = open_hf_folder(path, use_mmap);
        m->gguf_ = std::move(folder.gguf);
        extra_eos = std::move(folder.eos_ids);
    } else {
        m->gguf_ = GgufFile::open(path, use_mmap);
    }
    report(0.3f);
    auto arch = m->gguf_->get_string("general.architecture");
    if (!arch) fail(VT_ERR_FORMAT, "%s: no general.architecture key", path.c_str());
    m->arch_name_ = std::string(*arch);
    try {
        m->arch_ = make_architecture(m->arch_name_);
        // Which layers the device takes is known before any weight is
        // looked up: the CPU's are prepared for its kernels, the device's not.
        const uint32_t blocks = (uint32_t)m->gguf_->get_uint(m->arch_name_ + ".block_count").value_or(0);
        m->nextn_layers_ = m->arch_u32("nextn_predict_layers", 0);
        if (m->nextn_layers_ >= blocks && blocks > 0)
            fail(VT_ERR_FORMAT, "%s: all %u blocks are multi-token-prediction layers (a draft head alone, llama.cpp's "
                 "--mtp export), not a model", path.c_str(), blocks);
        const uint32_t n_layer = m->block_count_ = blocks - m->nextn_layers_;

        if (device_is_host(m->device_)) {
            m->n_device_layers_ = n_layer;
            m->outer_on_device_ = true;
        } else {
            m->n_device_layers_ = n_gpu_layers < 0 ? n_layer : std::min<uint32_t>((uint32_t)n_gpu_layers, n_layer);
            m->outer_on_device_ = m->n_device_layers_ == n_layer;
        }
        m->tokenizer_ = m->from_folder_ ? Tokenizer::from_file(path) : Tokenizer::from_gguf(*m->gguf_);
        if (!extra_eos.empty()) m->tokenizer_ = with_end_of_generation(std::move(m->tokenizer_), extra_eos);
        report(0.6f);
        for (const GgufTensorInfo &t : m->gguf_->tensors()) {
            m->n_params += (uint64_t)(t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3]);
            m->size_bytes += t.nbytes;
        }
        m->arch_->load(*m);
        if (m->nextn_layers_)
            VT_LOG_INFO("%s: %u multi-token-prediction block%s after the %u layers: %s", path.c_str(), m->nextn_layers_,
                        m->nextn_layers_ > 1 ? "s" : "", m->block_count_,
                        m->arch_->has_mtp() ? "read, it drafts with speculative decoding's \"mtp\" method"
                                            : "not read (vt has no MTP layer for this architecture)");
        m->check_scales_read();
        if (m->cache_layers.size() != m->hparams.n_layer + m->extra_cache_owner.size())
            fail(VT_ERR_INTERNAL, "%s declared %zu cache layers for %u layers and %zu extra", m->arch_name_.c_str(),
                 m->cache_layers.size(), m->hparams.n_layer, m->extra_cache_owner.size());
        check_shared_caches(*m);
        for (uint32_t owner : m->extra_cache_owner)
            if (owner >= m->hparams.n_layer)
                fail(VT_ERR_INTERNAL, "%s: an extra cache layer of block %u of %u", m->arch_name_.c_str(), owner,
                     m->hparams.n_layer);
        if (m->hparams.n_vocab != m->tokenizer_->n_vocab())
            fail(VT_ERR_FORMAT, "the output has %u rows but the vocabulary %u tokens", m->hparams.n_vocab,
                 m->tokenizer_->n_vocab());
        m->prepare_experts();
        if (!device_is_host(m->device_)) m->place_weights();
        m->count_weight_bytes();
    } catch (const Error &e) {
        // Name the file: the architecture and tokenizer code does not know it.
        if (e.status() == VT_ERR_CANCELLED) throw;
        throw Error(e.status(), path + ": " + e.what());
    }
    report(1.0f);
    if (const QuantizeStats &q = m->quantized_; q.target)
        VT_LOG_INFO("quantized %u weights to %s at load (%u took the fallback type, %u kept as stored): "
                    "%.1f MiB -> %.1f MiB in %.2f s", q.n_quantized, dtype_name(*q.target), q.n_fallback, q.n_kept,
                    (double)q.bytes_in / (1 << 20), (double)q.bytes_out / (1 << 20), q.seconds);
    if (m->prepared_bytes_)
        VT_LOG_INFO("repacked %.1f MiB of weights into the CPU kernels' layouts", (double)m->prepared_bytes_ / (1 << 20));
    VT_LOG_INFO("loaded %s: %s, %u layers, %llu params, %.1f MiB", path.c_str(), m->arch_name_.c_str(),
                m->hparams.n_layer, (unsigned long long)m->n_params, (double)m->size_bytes / (1 << 20));
    if (const WeightBytes &w = m->weight_bytes_; w.experts)
        VT_LOG_INFO("weights: %.1f MiB resident copies, %.1f MiB read from the file mapping (%u of %u expert "
                    "tensors); a decode token reads %.1f MiB", (double)w.resident / (1 << 20),
                    (double)w.mapped / (1 << 20), w.experts_mapped, w.experts, (double)w.per_token / (1 << 20));
    return m;
}

const Tensor *Model::weight(const std::string &name, std::initializer_list<int64_t> shape, bool required) {
    const GgufTensorInfo *info = gguf_->find_tensor(name);
    if (!info) {
        if (required) fail(VT_ERR_FORMAT, "model has no tensor '%s'", name.c_str());
        return nullptr;
    }
    int d = 0;
    for (int64_t want : shape) {
        if (info->ne[d] != want)
            fail(VT_ERR_FORMAT, "tensor '%s': dimension %d is %lld, expected %lld", name.c_str(), d,
                 (long long)info->ne[d], (long long)want);
        ++d;
    }
    for (; d < 4; ++d)
        if (info->ne[d] != 1) fail(VT_ERR_FORMAT, "tensor '%s' has more dimensions than expected", name.c_str());
    if (info->copied) copied_.push_back(info->data);
    auto t = std::make_unique<Tensor>();
    tensor_init(*t, info->type, info->ne[0], info->ne[1], info->ne[2], info->ne[3],
                const_cast<void *>(info->data), info->name.c_str());
    weights_.push_back(std::move(t));
    return weights_.back().get();
}

const Tensor *Model::matmul_weight(const std::string &name, std::initializer_list<int64_t> shape, bool required) {
    const Tensor *t = weight(name, shape, required);
    if (!t) return t;
    // One F32 value: the converter's product scale. Anything else of that
    // name is an architecture's own tensor (Gemma 4's router scale).
    const std::string sn = scale_name(name);
    const GgufTensorInfo *si = sn.empty() ? nullptr : gguf_->find_tensor(sn);
    if (si && (si->type != DType::F32 || si->ne[0] * si->ne[1] * si->ne[2] * si->ne[3] != 1)) si = nullptr;
    float s = 1.0f;
    if (si) std::memcpy(&s, si->data, sizeof s);
    t = finish_matmul_weight(weights_.back().get(), name, true);
    if (si) {
        output_scales_.emplace_back(t, s);
        scales_read_.push_back(sn);
    }
    return t;
}

std::string Model::scale_name(const std::string &name) const {
    constexpr std::string_view suffix = ".weight";
    if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
        return "";
    return name.substr(0, name.size() - suffix.size()) + ".scale";
}

float Model::output_scale(const Tensor *w) const {
    for (const auto &[t, s] : output_scales_)
        if (t == w) return s;
    return 1.0f;
}

const Tensor *Model::expert_output_scales(const Tensor *w) const {
    for (const auto &[t, s] : expert_output_scales_)
        if (t == w) return s;
    return nullptr;
}

void Model::check_scales_read() const {
    for (const GgufTensorInfo &t : gguf_->tensors()) {
        constexpr std::string_view suffix = ".scale";
        const std::string &n = t.name;
        if (n.size() <= suffix.size() || n.compare(n.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
        const GgufTensorInfo *w = gguf_->find_tensor(n.substr(0, n.size() - suffix.size()) + ".weight");
        if (!w || w->type != DType::NVFP4) continue;
        if (std::find(scales_read_.begin(), scales_read_.end(), n) == scales_read_.end())
            fail(VT_ERR_UNSUPPORTED, "%s (the product scale of an NVFP4 weight) is not applied by vt's %s", n.c_str(),
                 arch_name_.c_str());
    }
}

const Tensor *Model::embedding_weight(const std::string &name, std::initializer_list<int64_t> shape) {
    weight(name, shape);
    const Tensor *t = prepare_weight(weights_.back().get(), name);
    embedding_data_ = t->data;
    return t;
}

const Tensor *Model::expert_weight(const std::string &name, std::initializer_list<int64_t> shape) {
    weight(name, shape);
    experts_.push_back(weights_.back().get());
    const Tensor *t = experts_.back();
    // One F32 per expert: the converter's product scales (Gemma 4's
    // ffn_down_exps.scale is such a table too, which it applies itself).
    const std::string sn = scale_name(name);
    if (const GgufTensorInfo *si = sn.empty() ? nullptr : gguf_->find_tensor(sn);
        si && si->type == DType::F32 && si->n_dims == 1 && si->ne[0] == t->ne[2]) {
        expert_output_scales_.emplace_back(t, weight(sn, {t->ne[2]}));
        scales_read_.push_back(sn);
    }
    return t;
}

void Model::prepare_experts() {
    if (experts_.empty()) return;
    count_weight_bytes();
    uint64_t resident = weight_bytes_.resident;
    // No budget given: copies may take 3/4 of what the process can still
    // have (a cgroup's limit included); the page cache holds the rest.
    uint64_t budget = weights_budget_;
    if (budget == 0) budget = resident + available_memory_bytes() / 4 * 3;
    for (Tensor *t : experts_) {
        const size_t n = t->nbytes();
        if (resident + n > budget) continue;  // read from the mapping (as stored: never quantized then)
        const void *stored = t->data;
        finish_matmul_weight(t, t->name, true);
        if (t->data != stored) resident += t->nbytes();
    }
}

void Model::count_weight_bytes() {
    WeightBytes w;
    std::vector<const void *> seen;
    for (const auto &t : weights_) {
        if (!device_is_host(device_) && on_device(*t)) continue;  // in the device's memory
        if (std::find(seen.begin(), seen.end(), t->data) != seen.end()) continue;  // a view looked up twice
        seen.push_back(t->data);
        const uint64_t n = t->nbytes();
        const bool expert = std::find(experts_.begin(), experts_.end(), t.get()) != experts_.end();
        const bool copy = t->buffer != nullptr ||
                          std::find(copied_.begin(), copied_.end(), t->data) != copied_.end() ||
                          std::any_of(quantized_copies_.begin(), quantized_copies_.end(),
                                      [&](const auto &b) { return b->data() == t->data; });
        (copy ? w.resident : w.mapped) += n;
        if (expert) {
            ++w.experts;
            w.experts_mapped += !copy;
            w.per_token += n / std::max<uint32_t>(hparams.n_expert, 1) * hparams.n_expert_used;
        } else {
            // The embedding gives one row per token, unless it is the output too.
            w.per_token += t->data == embedding_data_ && !tied_output_ ? row_bytes(t->type, t->ne[0]) : n;
        }
    }
    weight_bytes_ = w;
}

const Tensor *Model::output_weight(const std::string &embedding, std::initializer_list<int64_t> shape) {
    if (gguf_->find_tensor("output.weight")) return matmul_weight("output.weight", shape);
    const GgufTensorInfo *e = gguf_->find_tensor(embedding);
    if (!quantized_.target || !e || !quantizable_source(e->type)) {
        tied_output_ = true;
        return nullptr;
    }
    // A view of the embedding as stored (its pages come back from the file
    // if its preparing released them), quantized into a copy of its own.
    weight(embedding, shape);
    return finish_matmul_weight(weights_.back().get(), embedding + " (as the tied output)", false);
}

const Tensor *Model::finish_matmul_weight(Tensor *t, const std::string &name, bool release) {
    std::optional<DType> to;
    // A 3-D weight (experts, per-head products) is its matrices' rows one
    // after the other: quantized as ne[1] * ne[2] rows.
    if (quantized_.target && quantizable_source(t->type) && t->ne[3] == 1 && t->is_contiguous()) {
        to = quantize_type_for_rows(*quantized_.target, t->ne[0]);
        if (!to) {
            ++quantized_.n_kept;
            VT_LOG_DEBUG("'%s': rows of %lld fit no %s block, kept as %s", name.c_str(), (long long)t->ne[0],
                         dtype_name(*quantized_.target), dtype_name(t->type));
        }
    }
    if (!to) return prepare_weight(t, name);
    const auto t0 = std::chrono::steady_clock::now();
    const int64_t rows = t->ne[1] * t->ne[2];
    const size_t in_bytes = t->nbytes(), out_bytes = row_bytes(*to, t->ne[0]) * (size_t)rows;
    std::unique_ptr<PageBuffer> buf = PageBuffer::allocate(out_bytes);
    if (!buf) fail(VT_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes to quantize '%s'", out_bytes, name.c_str());
    quantize_rows_parallel(t->type, static_cast<const uint8_t *>(t->data), t->nb[1], *to, buf->data(), t->ne[0],
                           rows);
    if (release) gguf_->release(t->data, in_bytes);
    if (*to != *quantized_.target) {
        ++quantized_.n_fallback;
        VT_LOG_DEBUG("'%s': rows of %lld are no whole %s blocks: %s instead", name.c_str(), (long long)t->ne[0],
                     dtype_name(*quantized_.target), dtype_name(*to));
    }
    ++quantized_.n_quantized;
    quantized_.bytes_in += in_bytes;
    quantized_.bytes_out += out_bytes;
    quantized_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    tensor_init(*t, *to, t->ne[0], t->ne[1], t->ne[2], 1, buf->data(), t->name);
    // As if read from a file of that type; preparing copies it into a
    // buffer of its own where the device has a faster layout.
    const Tensor *r = prepare_weight(t, name);
    if (r->data == buf->data()) quantized_copies_.push_back(std::move(buf));  // still read: keep it
    return r;
}

const Tensor *Model::matmul_weight_rows(const std::string &name, int64_t ne0, int64_t total_rows, int64_t row0,
                                        int64_t n_rows) {
    if (row0 < 0 || n_rows <= 0 || row0 + n_rows > total_rows)
        fail(VT_ERR_INTERNAL, "rows [%lld, %lld) of '%s' outside its %lld", (long long)row0,
             (long long)(row0 + n_rows), name.c_str(), (long long)total_rows);
    const Tensor *whole = weight(name, {ne0, total_rows});
    // Rows are contiguous: the part is the same mapping from row0 on.
    Tensor *part = weights_.back().get();
    tensor_init(*part, whole->type, ne0, n_rows, 1, 1, static_cast<uint8_t *>(whole->data) + (size_t)row0 * whole->nb[1],
                whole->name);
    return finish_matmul_weight(part, name, true);
}

vt_device *Model::layer_device(uint32_t il) const {
    if (il >= hparams.n_layer && il - hparams.n_layer < extra_cache_owner.size())
        il = extra_cache_owner[il - hparams.n_layer];
    return il + n_device_layers_ >= hparams.n_layer ? device_ : cpu_device();
}

bool Model::on_device(const Tensor &t) const {
    if (device_is_host(device_)) return true;
    // Experts stay in host memory (llama.cpp's --cpu-moe): no device backend
    // has MUL_MAT_ID, and a node the device lacks would copy them every step.
    if (std::find(experts_.begin(), experts_.end(), &t) != experts_.end()) return false;
    const char *name = t.name;
    unsigned il = 0;
    int used = 0;
    if (std::sscanf(name, "blk.%u.%n", &il, &used) == 1 && used > 0) return layer_device(il) == device_;
    return outer_on_device_;
}

const Tensor *Model::prepare_weight(Tensor *t, const std::string &name) {
    vt_device *dev = on_device(*t) ? device_ : cpu_device();
    if (!device_is_host(dev)) return t;  // uploaded as stored (place_weights)
    vt_buffer_type *bt = dev->iface->get_buffer_type(dev);
    if (!bt->iface->prepare_weight) return t;
    const void *stored = t->data;
    vt_buffer *copy = nullptr;
    const vt_status st = bt->iface->prepare_weight(bt, t, &copy);
    if (st != VT_OK) fail(st, "cannot prepare '%s' for %s", name.c_str(), device_name(dev).c_str());
    if (!copy) return t;
    prepared_.emplace_back(copy);
    gguf_->release(stored, t->nbytes());  // the copy replaces it: do not keep both in memory
    prepared_bytes_ += t->nbytes();
    return t;
}

void Model::place_weights() {
    const auto t0 = std::chrono::steady_clock::now();
    vt_buffer_type *bt = device_->iface->get_buffer_type(device_);
    const size_t align = bt->iface->get_alignment(bt), max_size = bt->iface->get_max_size(bt);
    auto aligned = [&](size_t n) { return (n + align - 1) / align * align; };
    // Buffers of at most max_size, each weight in one: first the layout,
    // then one allocation per buffer, then the uploads straight from the
    // mapping (or the copy quantize at load made).
    std::vector<size_t> buffer_of(weights_.size()), offset_of(weights_.size());
    std::vector<size_t> sizes{0};
    size_t n_placed = 0;
    for (size_t i = 0; i < weights_.size(); ++i) {
        if (!on_device(*weights_[i])) continue;
        ++n_placed;
        const size_t n = aligned(weights_[i]->nbytes());
        if (n > max_size)
            fail(VT_ERR_UNSUPPORTED, "weight '%s' of %.1f MiB exceeds the largest buffer of %s (%.1f MiB)",
                 weights_[i]->name, (double)n / (1 << 20), device_name(device_).c_str(), (double)max_size / (1 << 20));
        if (sizes.back() + n > max_size) sizes.push_back(0);
        buffer_of[i] = sizes.size() - 1;
        offset_of[i] = sizes.back();
        sizes.back() += n;
    }
    if (n_placed == 0) return;  // --n-gpu-layers 0: everything stays on the CPU
    for (size_t n : sizes) device_weights_.push_back(buffer_alloc(device_, n, "model weights"));
    for (size_t i = 0; i < weights_.size(); ++i) {
        if (!on_device(*weights_[i])) continue;
        Tensor &t = *weights_[i];
        vt_buffer *b = device_weights_[buffer_of[i]].get();
        const size_t n = t.nbytes();
        vt_status st = b->iface->set(b, t.data, offset_of[i], n);
        if (st != VT_OK) fail(st, "cannot upload weight '%s' to %s", t.name, device_name(device_).c_str());
        gguf_->release(t.data, n);  // read from the device from now on: its file pages may go
        t.data = static_cast<uint8_t *>(b->iface->get_base(b)) + offset_of[i];
        t.buffer = b;
        uploaded_bytes_ += n;
    }
    if (n_placed == weights_.size()) quantized_copies_.clear();  // on the device now
    upload_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (n_device_layers_ < hparams.n_layer)
        VT_LOG_INFO("%s holds the last %u of %u layers%s; the rest run on the CPU", device_name(device_).c_str(),
                    n_device_layers_, hparams.n_layer, outer_on_device_ ? " and the output" : "");
    VT_LOG_INFO("uploaded %zu weights, %.1f MiB, to %s in %zu buffers in %.2f s (%.2f GiB/s)", n_placed,
                (double)uploaded_bytes_ / (1 << 20), device_name(device_).c_str(), sizes.size(), upload_seconds_,
                upload_seconds_ > 0 ? (double)uploaded_bytes_ / (1 << 30) / upload_seconds_ : 0.0);
}

Tensor *Architecture::build_mtp(const Model &m, const ForwardArgs &) const {
    fail(VT_ERR_UNSUPPORTED, "%s: no multi-token-prediction layer", m.arch_name().c_str());
}

uint32_t Model::arch_u32(const char *suffix) const {
    std::string key = arch_name_ + "." + suffix;
    auto v = gguf_->get_uint(key);
    if (!v) fail(VT_ERR_FORMAT, "model lacks the required key %s", key.c_str());
    if (*v > UINT32_MAX) fail(VT_ERR_FORMAT, "key %s is out of range", key.c_str());
    return (uint32_t)*v;
}

uint32_t Model::arch_u32(const char *suffix, uint32_t def) const {
    std::string key = arch_name_ + "." + suffix;
    auto v = gguf_->get_uint(key);
    if (!v) return def;
    if (*v > UINT32_MAX) fail(VT_ERR_FORMAT, "key %s is out of range", key.c_str());
    return (uint32_t)*v;
}

std::string Model::arch_str(const char *suffix) const {
    auto v = gguf_->get_string(arch_name_ + "." + suffix);
    return v ? std::string(*v) : std::string();
}

bool Model::arch_bool(const char *suffix, bool def) const {
    auto v = gguf_->get_bool(arch_name_ + "." + suffix);
    return v ? *v : def;
}

float Model::arch_f32(const char *suffix, float def) const {
    auto v = gguf_->get_float(arch_name_ + "." + suffix);
    return v ? (float)*v : def;
}

} // namespace vt
