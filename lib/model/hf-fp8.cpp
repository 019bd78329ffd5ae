#include "model/hf-fp8.h"

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
void check_ct_weights(const json &w, const std::string &group, const std::string &dir, Fp8Scheme &s) {
    const char *d = dir.c_str(), *g = group.c_str();
    if (!w.is_object()) fail(VT_ERR_FORMAT, "%s: compressed-tensors group '%s' has no weights scheme", d, g);
    const std::string type = str(w, "type", "int");
    const int bits = w.contains("num_bits") && w["num_bits"].is_number_integer() ? w["num_bits"].get<int>() : 0;
    if (type != "float" || bits != 8)
        fail(VT_ERR_UNSUPPORTED,
             "%s: compressed-tensors group '%s' quantizes weights to %d-bit %s; vt reads 8-bit float (FP8) weights",
             d, g, bits, type.c_str());
    if (w.contains("symmetric") && w["symmetric"].is_boolean() && !w["symmetric"].get<bool>())
        fail(VT_ERR_UNSUPPORTED, "%s: compressed-tensors group '%s' has asymmetric FP8 weights (zero points)", d, g);
    if (w.contains("dynamic") && w["dynamic"].is_boolean() && w["dynamic"].get<bool>())
        fail(VT_ERR_UNSUPPORTED, "%s: compressed-tensors group '%s' asks for dynamic weight scales", d, g);
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

std::string describe_activations(const json &a) {
    if (!a.is_object()) return "";
    const bool dynamic = a.contains("dynamic") && a["dynamic"].is_boolean() && a["dynamic"].get<bool>();
    return std::string(dynamic ? "dynamic " : "static ") + std::to_string(a.value("num_bits", 0)) + "-bit " +
           str(a, "type", "int") + " per " + str(a, "strategy", "tensor");
}
} // namespace

Fp8Scheme read_fp8_scheme(const json &top, const std::string &dir) {
    namespace fs = std::filesystem;
    const char *d = dir.c_str();
    Fp8Scheme s;
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
    if (!q) fail(VT_ERR_FORMAT, "%s: tensors are F8_E4M3 but config.json has no quantization_config", d);
    s.method = str(*q, "quant_method");
    if (s.method == "fp8") {
        const std::string fmt = str(*q, "fmt", "e4m3");
        if (fmt != "e4m3") fail(VT_ERR_UNSUPPORTED, "%s: FP8 fmt '%s' (vt reads e4m3)", d, fmt.c_str());
        if (q->contains("weight_block_size") && !(*q)["weight_block_size"].is_null() &&
            !block_shape(*q, "weight_block_size", s.block_rows, s.block_cols))
            fail(VT_ERR_FORMAT, "%s: weight_block_size is not [rows, cols]", d);
        s.activations = str(*q, "activation_scheme", "dynamic") + " FP8";
    } else if (s.method == "compressed-tensors") {
        const std::string format = str(*q, "format");
        if (format != "float-quantized" && format != "naive-quantized")
            fail(VT_ERR_UNSUPPORTED, "%s: compressed-tensors format '%s' (vt reads float-quantized FP8)", d,
                 format.c_str());
        if (!q->contains("config_groups") || !(*q)["config_groups"].is_object() || (*q)["config_groups"].empty())
            fail(VT_ERR_FORMAT, "%s: compressed-tensors quantization_config has no config_groups", d);
        for (const auto &[name, g] : (*q)["config_groups"].items()) {
            if (!g.is_object()) fail(VT_ERR_FORMAT, "%s: compressed-tensors group '%s' is not an object", d, name.c_str());
            check_ct_weights(g.contains("weights") ? g["weights"] : json(), name, dir, s);
            if (g.contains("input_activations")) {
                const std::string a = describe_activations(g["input_activations"]);
                if (!a.empty()) s.activations = a;
            }
        }
    } else if (s.method == "modelopt") {
        const std::string algo = str(*q, "quant_algo");
        if (algo != "FP8")
            fail(VT_ERR_UNSUPPORTED, "%s: ModelOpt quant_algo '%s' (vt reads ModelOpt FP8 folders)", d, algo.c_str());
        s.activations = "static FP8 per tensor";
    } else {
        fail(VT_ERR_UNSUPPORTED, "%s: quantization_config.quant_method '%s' (vt reads fp8, compressed-tensors FP8, "
             "modelopt FP8 and mxfp4 checkpoints)", d, s.method.c_str());
    }
    return s;
}

std::vector<SafetensorsTensor> pair_fp8(const std::vector<const SafetensorsTensor *> &fp8,
                                        const std::vector<const SafetensorsTensor *> &all, const Fp8Scheme &scheme,
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
            return config > 0 && (size + config - 1) / config == scales ? config : 0;
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

} // namespace vt
