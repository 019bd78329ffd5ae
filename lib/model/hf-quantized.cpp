#include "model/hf-quantized.h"

#include <cstring>
#include <filesystem>
#include <map>

#include "core/error.h"
#include "core/quant.h"
#include "core/quant/blocks.h"
#include "model/json-file.h"

namespace vt {

namespace {
using json = nlohmann::json;

const json *quantization_config(const json &top) {
    for (const json *c : {&top, top.contains("text_config") ? &top["text_config"] : nullptr})
        if (c && c->is_object() && c->contains("quantization_config") && (*c)["quantization_config"].is_object())
            return &(*c)["quantization_config"];
    return nullptr;
}

std::string str(const json &o, const char *key, const char *def = "") {
    auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : def;
}

int integer(const json &o, const char *key, int def = 0) {
    auto it = o.find(key);
    return it != o.end() && it->is_number_integer() ? it->get<int>() : def;
}

// A [rows, cols] pair of positive sizes, or false.
bool block_shape(const json &o, const char *key, int64_t &r, int64_t &c) {
    auto it = o.find(key);
    if (it == o.end() || !it->is_array() || it->size() != 2 || !(*it)[0].is_number_unsigned() ||
        !(*it)[1].is_number_unsigned())
        return false;
    r = (*it)[0].get<int64_t>();
    c = (*it)[1].get<int64_t>();
    return r > 0 && c > 0;
}

// One compressed-tensors config group's weights: what vt can read, or the
// reason it cannot.
void check_ct_fp8_weights(const json &w, const std::string &group, const std::string &dir, QuantScheme &s) {
    const char *d = dir.c_str(), *g = group.c_str();
    if (!w.is_object()) fail(VT_ERR_FORMAT, "%s: compressed-tensors group '%s' has no weights scheme", d, g);
    const std::string type = str(w, "type", "int");
    const int bits = integer(w, "num_bits");
    if (type != "float" || bits != 8)
        fail(VT_ERR_UNSUPPORTED,
             "%s: compressed-tensors group '%s' quantizes weights to %d-bit %s; vt reads 8-bit float (FP8) weights",
             d, g, bits, type.c_str());
    if (w.contains("symmetric") && w["symmetric"].is_boolean() && !w["symmetric"].get<bool>())
        fail(VT_ERR_UNSUPPORTED, "%s: compressed-tensors group '%s' has asymmetric FP8 weights (zero points)", d, g);
    if (w.contains("dynamic") && w["dynamic"].is_boolean() && w["dynamic"].get<bool>())
        fail(VT_ERR_UNSUPPORTED, "%s: compressed-tensors group '%s' asks for dynamic weight scales", d, g);
    s.fp8 = true;
    const std::string strategy = str(w, "strategy", "tensor");
    if (strategy != "tensor" && strategy != "channel" && strategy != "group" && strategy != "block")
        fail(VT_ERR_UNSUPPORTED, "%s: compressed-tensors group '%s' has weight strategy '%s'", d, g, strategy.c_str());
    int64_t r, c;
    if (strategy == "block") {
        if (!block_shape(w, "block_structure", r, c))
            fail(VT_ERR_FORMAT, "%s: compressed-tensors group '%s' has strategy block but no block_structure", d, g);
        if (s.block_rows && (s.block_rows != r || s.block_cols != c))
            fail(VT_ERR_UNSUPPORTED, "%s: compressed-tensors groups with two different block structures", d);
        s.block_rows = r;
        s.block_cols = c;
    }
}

// A compressed-tensors group in nvfp4-pack-quantized: 4-bit float weights in
// groups of 16 (the format's only layout).
void check_ct_nvfp4_weights(const json &w, const std::string &group, const std::string &dir, QuantScheme &s) {
    const char *d = dir.c_str(), *g = group.c_str();
    if (!w.is_object()) fail(VT_ERR_FORMAT, "%s: compressed-tensors group '%s' has no weights scheme", d, g);
    if (str(w, "type", "int") != "float" || integer(w, "num_bits") != 4 || integer(w, "group_size") != 16)
        fail(VT_ERR_UNSUPPORTED,
             "%s: compressed-tensors group '%s' is nvfp4-pack-quantized but not 4-bit float weights in groups of 16",
             d, g);
    s.nvfp4 = true;
}

std::string describe_activations(const json &a) {
    if (!a.is_object()) return "";
    const bool dynamic = a.contains("dynamic") && a["dynamic"].is_boolean() && a["dynamic"].get<bool>();
    return std::string(dynamic ? "dynamic " : "static ") + std::to_string(integer(a, "num_bits")) + "-bit " +
           str(a, "type", "int") + " per " + str(a, "strategy", "tensor");
}
} // namespace

QuantScheme read_quant_scheme(const json &top, const std::string &dir) {
    namespace fs = std::filesystem;
    const char *d = dir.c_str();
    QuantScheme s;
    const json *q = quantization_config(top);
    json modelopt;
    if (!q && fs::exists(fs::path(dir) / "hf_quant_config.json")) {
        // ModelOpt checkpoints may carry their scheme only here.
        const json h = read_json_file(fs::path(dir) / "hf_quant_config.json");
        if (h.contains("quantization") && h["quantization"].is_object()) {
            modelopt = h["quantization"];
            modelopt["quant_method"] = "modelopt";
            q = &modelopt;
        }
    }
    if (!q) return s;
    s.method = str(*q, "quant_method");
    if (s.method == "mxfp4") return s;  // safetensors.h: pair_mxfp4
    if (s.method == "fp8") {
        const std::string fmt = str(*q, "fmt", "e4m3");
        if (fmt != "e4m3") fail(VT_ERR_UNSUPPORTED, "%s: FP8 fmt '%s' (vt reads e4m3)", d, fmt.c_str());
        if (q->contains("weight_block_size") && !(*q)["weight_block_size"].is_null() &&
            !block_shape(*q, "weight_block_size", s.block_rows, s.block_cols))
            fail(VT_ERR_FORMAT, "%s: weight_block_size is not [rows, cols]", d);
        s.fp8 = true;
        s.activations = str(*q, "activation_scheme", "dynamic") + " FP8";
    } else if (s.method == "compressed-tensors") {
        const std::string format = str(*q, "format");
        if (format != "float-quantized" && format != "naive-quantized" && format != "nvfp4-pack-quantized" &&
            format != "mixed-precision")
            fail(VT_ERR_UNSUPPORTED,
                 "%s: compressed-tensors format '%s' (vt reads float-quantized FP8 and nvfp4-pack-quantized)", d,
                 format.c_str());
        if (!q->contains("config_groups") || !(*q)["config_groups"].is_object() || (*q)["config_groups"].empty())
            fail(VT_ERR_FORMAT, "%s: compressed-tensors quantization_config has no config_groups", d);
        for (const auto &[name, g] : (*q)["config_groups"].items()) {
            if (!g.is_object()) fail(VT_ERR_FORMAT, "%s: compressed-tensors group '%s' is not an object", d, name.c_str());
            const std::string f = str(g, "format", format.c_str());
            const json w = g.contains("weights") ? g["weights"] : json();
            if (f == "float-quantized" || f == "naive-quantized") check_ct_fp8_weights(w, name, dir, s);
            else if (f == "nvfp4-pack-quantized") check_ct_nvfp4_weights(w, name, dir, s);
            else
                fail(VT_ERR_UNSUPPORTED,
                     "%s: compressed-tensors format '%s' (vt reads float-quantized FP8 and nvfp4-pack-quantized)", d,
                     f.c_str());
            if (g.contains("input_activations")) {
                const std::string a = describe_activations(g["input_activations"]);
                if (!a.empty()) s.activations = a;
            }
        }
    } else if (s.method == "modelopt") {
        const std::string algo = str(*q, "quant_algo");
        if (algo == "FP8") {
            s.fp8 = true;
            s.activations = "static FP8 per tensor";
        } else if (algo == "NVFP4" || algo == "W4A16_NVFP4") {
            s.nvfp4 = true;
            if (algo == "NVFP4") s.activations = "NVFP4 (4-bit)";
        } else if (algo == "MIXED_PRECISION") {
            s.fp8 = s.nvfp4 = true;  // per layer: the tensors' types say which
            s.activations = "per layer";
        } else {
            fail(VT_ERR_UNSUPPORTED, "%s: ModelOpt quant_algo '%s' (vt reads FP8, NVFP4, W4A16_NVFP4)", d, algo.c_str());
        }
    } else {
        fail(VT_ERR_UNSUPPORTED, "%s: quantization_config.quant_method '%s' (vt reads fp8, compressed-tensors FP8 and "
             "NVFP4, modelopt FP8 and NVFP4, and mxfp4 checkpoints)", d, s.method.c_str());
    }
    return s;
}

std::vector<SafetensorsTensor> pair_fp8(const std::vector<const SafetensorsTensor *> &fp8,
                                        const std::vector<const SafetensorsTensor *> &all, const QuantScheme &scheme,
                                        std::deque<std::vector<uint8_t>> &store,
                                        std::vector<const SafetensorsTensor *> &used, const std::string &dir) {
    const char *d = dir.c_str();
    std::map<std::string, const SafetensorsTensor *> by_name;
    for (const SafetensorsTensor *t : all) by_name[t->name] = t;
    std::vector<SafetensorsTensor> out;
    for (const SafetensorsTensor *w : fp8) {
        const char *n = w->name.c_str();
        const SafetensorsTensor *sc = nullptr;
        for (const char *suffix : {"_scale_inv", "_scale"})
            if (auto it = by_name.find(w->name + suffix); it != by_name.end()) {
                sc = it->second;
                break;
            }
        if (!sc) fail(VT_ERR_FORMAT, "%s: F8_E4M3 tensor '%s' has no %s_scale_inv or %s_scale", d, n, n, n);
        if (w->n_dims < 2) fail(VT_ERR_FORMAT, "%s: F8_E4M3 tensor '%s' is not a matrix", d, n);
        const int64_t cols = w->ne[0], rows = w->ne[1], n_mat = w->ne[2] * w->ne[3];
        if (cols % 64)
            fail(VT_ERR_UNSUPPORTED, "%s: '%s' has rows of %lld elements; vt's FP8 rows take 64 at a time", d, n,
                 (long long)cols);
        // The scale's shape: one, (rows, 1), (rows / br, cols / bc) per matrix.
        const int64_t numel = sc->ne[0] * sc->ne[1] * sc->ne[2] * sc->ne[3];
        const bool one = numel == 1;
        const int64_t s_cols = one ? 1 : sc->ne[0], s_rows = one ? 1 : sc->ne[1];
        const int64_t s_mats = one ? 1 : sc->ne[2] * sc->ne[3];
        auto blocks = [](int64_t size, int64_t scales, int64_t config) -> int64_t {
            if (scales == 1) return size;
            if (scales == size) return 1;
            if (config <= 0) return 0;
            return (config >= size ? 1 : (size + config - 1) / config) == scales ? config : 0;  // no overflow
        };
        const int64_t br = blocks(rows, s_rows, scheme.block_rows), bc = blocks(cols, s_cols, scheme.block_cols);
        if (br == 0 || bc == 0 || (s_mats != 1 && s_mats != n_mat))
            fail(VT_ERR_FORMAT, "%s: the scale '%s' (%lld x %lld) fits no FP8 scheme for '%s' (%lld x %lld)", d,
                 sc->name.c_str(), (long long)s_rows, (long long)s_cols, n, (long long)rows, (long long)cols);
        if (bc % 64 && bc < cols)
            fail(VT_ERR_UNSUPPORTED, "%s: '%s' has a scale per %lld columns; vt's FP8 rows need whole 64s", d, n,
                 (long long)bc);
        std::vector<float> scales((size_t)numel);
        ref::dequantize_row(sc->type, sc->data, scales.data(), numel);  // F32, BF16, F16: exact
        const int64_t nb = cols / 64;
        std::vector<uint8_t> &bytes = store.emplace_back((size_t)(n_mat * rows * nb) * sizeof(quant::BlockFP8));
        const uint8_t *src = static_cast<const uint8_t *>(w->data);
        uint8_t *o = bytes.data();
        for (int64_t m = 0; m < n_mat; ++m)
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t b = 0; b < nb; ++b, o += sizeof(quant::BlockFP8)) {
                    const int64_t si = (s_mats == 1 ? 0 : m * s_rows * s_cols) + (r / br) * s_cols + (b * 64) / bc;
                    std::memcpy(o, &scales[(size_t)si], 4);
                    std::memcpy(o + 4, src + ((m * rows + r) * cols + b * 64), 64);
                }
        SafetensorsTensor t = *w;
        t.type = DType::FP8_E4M3;
        t.data = bytes.data();
        t.nbytes = bytes.size();
        out.push_back(std::move(t));
        used.push_back(sc);
    }
    return out;
}

namespace {
bool ends_with(const std::string &s, const char *suffix) {
    const size_t n = std::strlen(suffix);
    return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}
} // namespace

std::vector<SafetensorsTensor> pair_nvfp4(const std::vector<const SafetensorsTensor *> &bytes,
                                          const std::vector<const SafetensorsTensor *> &fp8,
                                          const std::vector<const SafetensorsTensor *> &all,
                                          std::deque<std::vector<uint8_t>> &store,
                                          std::vector<const SafetensorsTensor *> &used, const std::string &dir) {
    const char *d = dir.c_str();
    std::map<std::string, const SafetensorsTensor *> scales, others;
    for (const SafetensorsTensor *t : fp8) scales[t->name] = t;
    for (const SafetensorsTensor *t : all) others[t->name] = t;
    std::vector<SafetensorsTensor> out;
    for (const SafetensorsTensor *b : bytes) {
        // compressed-tensors' <w>.weight_packed with <w>.weight_global_scale
        // (its reciprocal is the factor), ModelOpt's <w>.weight with
        // <w>.weight_scale_2.
        const bool ct = ends_with(b->name, ".weight_packed");
        if (!ct && !ends_with(b->name, ".weight")) continue;
        const std::string w = ct ? b->name.substr(0, b->name.size() - 7) : b->name;
        const char *n = w.c_str();
        auto sit = scales.find(w + "_scale");
        if (sit == scales.end()) fail(VT_ERR_FORMAT, "%s: NVFP4 weight '%s' has no F8_E4M3 %s_scale", d, n, n);
        const SafetensorsTensor *sc = sit->second;
        const int64_t cols = b->ne[0] * 2, rows = b->ne[1], n_mat = b->ne[2] * b->ne[3];
        if (b->n_dims < 2 || cols % 64)
            fail(VT_ERR_UNSUPPORTED, "%s: NVFP4 weight '%s' has rows of %lld elements; vt's NVFP4 rows take 64 at a time",
                 d, n, (long long)cols);
        if (sc->ne[0] != cols / 16 || sc->ne[1] != rows || sc->ne[2] * sc->ne[3] != n_mat)
            fail(VT_ERR_FORMAT, "%s: %s_scale is not one F8_E4M3 per 16 of '%s' (%lld x %lld)", d, n, n,
                 (long long)rows, (long long)cols);
        float factor = 1.0f;
        const SafetensorsTensor *g = nullptr;
        if (auto it = others.find(w + (ct ? "_global_scale" : "_scale_2")); it != others.end()) {
            g = it->second;
            if (g->ne[0] * g->ne[1] * g->ne[2] * g->ne[3] != 1)
                fail(VT_ERR_UNSUPPORTED, "%s: %s has %lld values (vt reads one per tensor)", d, g->name.c_str(),
                     (long long)(g->ne[0] * g->ne[1] * g->ne[2] * g->ne[3]));
            ref::dequantize_row(g->type, g->data, &factor, 1);
            if (ct) factor = 1.0f / factor;  // as llama.cpp's converter: in f32
        } else if (ct) {
            fail(VT_ERR_FORMAT, "%s: NVFP4 weight '%s' has no %s_global_scale", d, n, n);
        }
        // ggml's blocks of 64: the four group scales' bytes without the sign
        // (UE4M3), then per group byte i = code i | code i + 8 << 4.
        const uint8_t *src = static_cast<const uint8_t *>(b->data), *sb = static_cast<const uint8_t *>(sc->data);
        const int64_t nb = cols / 64;
        std::vector<uint8_t> &blocks = store.emplace_back((size_t)(n_mat * rows * nb) * sizeof(quant::BlockNVFP4));
        quant::BlockNVFP4 *o = reinterpret_cast<quant::BlockNVFP4 *>(blocks.data());
        for (int64_t r = 0; r < n_mat * rows; ++r)
            for (int64_t j = 0; j < nb; ++j, ++o)
                for (int s = 0; s < 4; ++s) {
                    const int64_t group = r * (cols / 16) + 4 * j + s;
                    o->d[s] = (uint8_t)(sb[group] & 0x7F);
                    const uint8_t *p = src + group * 8;  // 16 codes, element 2i in the low nibble of byte i
                    auto code = [&](int e) { return (uint8_t)((p[e / 2] >> (4 * (e & 1))) & 0xF); };
                    for (int i = 0; i < 8; ++i) o->qs[8 * s + i] = (uint8_t)(code(i) | code(i + 8) << 4);
                }
        SafetensorsTensor t = *b;
        t.name = w;
        t.type = DType::NVFP4;
        t.ne[0] = cols;
        t.data = blocks.data();
        t.nbytes = blocks.size();
        t.product_scale = factor;
        out.push_back(std::move(t));
        used.push_back(b);
        used.push_back(sc);
        if (g) used.push_back(g);
    }
    return out;
}

} // namespace vt
