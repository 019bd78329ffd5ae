#include "model/hf-gpt-oss.h"

#include <cstring>

#include "core/error.h"
#include "core/quant.h"

namespace vt {

std::string gpt_oss_gguf_name(const std::string &rest) {
    if (rest == "self_attn.sinks") return "attn_sinks.weight";
    if (rest == "self_attn.o_proj.bias") return "attn_output.bias";
    if (rest == "post_attention_layernorm.weight") return "post_attention_norm.weight";
    if (rest == "mlp.router.weight") return "ffn_gate_inp.weight";
    if (rest == "mlp.router.bias") return "ffn_gate_inp.bias";
    return "";
}

namespace {
void add(std::vector<GgufTensorInfo> &out, const std::string &name, DType type, std::vector<uint8_t> &b, int64_t ne0,
         int64_t ne1, int64_t ne2) {
    GgufTensorInfo ti;
    ti.name = name;
    ti.n_dims = ne2 > 1 ? 3 : 2;
    ti.ne[0] = ne0;
    ti.ne[1] = ne1;
    ti.ne[2] = ne2;
    ti.type = type;
    ti.data = b.data();
    ti.nbytes = b.size();
    ti.copied = true;
    out.push_back(std::move(ti));
}

// Rows of an (ne0, ne1) F32 copy of t's 2-D data, taking every `step`-th
// element of each row from `first` (the interleaved halves of gate_up's bias).
std::vector<uint8_t> f32_columns(const SafetensorsTensor &t, int64_t first, int64_t step) {
    const int64_t n = t.ne[0] * t.ne[1], cols = t.ne[0] / step;
    std::vector<float> all((size_t)n);
    ref::dequantize_row(t.type, t.data, all.data(), n);
    std::vector<uint8_t> b((size_t)(cols * t.ne[1]) * sizeof(float));
    float *o = reinterpret_cast<float *>(b.data());
    for (int64_t r = 0; r < t.ne[1]; ++r)
        for (int64_t c = 0; c < cols; ++c) o[r * cols + c] = all[(size_t)(r * t.ne[0] + first + c * step)];
    return b;
}
} // namespace

bool take_gpt_oss_experts(const SafetensorsTensor &t, const std::string &rest, const std::string &blk,
                          std::deque<std::vector<uint8_t>> &store, std::vector<GgufTensorInfo> &out) {
    const std::string prefix = "mlp.experts.";
    if (rest.rfind(prefix, 0) != 0) return false;
    const std::string tail = rest.substr(prefix.size());
    if (tail != "gate_up_proj" && tail != "down_proj" && tail != "gate_up_proj_bias" && tail != "down_proj_bias")
        return false;
    const DTypeInfo &di = dtype_info(t.type);
    if (di.block_elems != 1)
        fail(VT_ERR_UNSUPPORTED, "%s: gpt-oss experts of type %s are not supported (F32, F16, BF16)", t.name.c_str(),
             di.name);
    const bool bias = tail.size() > 5 && tail.compare(tail.size() - 5, 5, "_bias") == 0;
    const bool gate_up = tail.rfind("gate_up_proj", 0) == 0;
    if (t.n_dims != (bias ? 2 : 3) || t.ne[0] <= 0 || t.ne[1] <= 0 || (gate_up && t.ne[0] % 2 != 0))
        fail(VT_ERR_FORMAT, "%s: expected %s with an even last dimension for gate_up", t.name.c_str(),
             bias ? "(n_expert, width)" : "(n_expert, n_in, n_out)");
    if (bias) {
        // (n_expert, 2 n_ff) or (n_expert, n_embd): per expert, one row of ne0.
        if (gate_up) {
            add(out, blk + "ffn_gate_exps.bias", DType::F32, store.emplace_back(f32_columns(t, 0, 2)), t.ne[0] / 2,
                t.ne[1], 1);
            add(out, blk + "ffn_up_exps.bias", DType::F32, store.emplace_back(f32_columns(t, 1, 2)), t.ne[0] / 2,
                t.ne[1], 1);
        } else {
            add(out, blk + "ffn_down_exps.bias", DType::F32, store.emplace_back(f32_columns(t, 0, 1)), t.ne[0], t.ne[1],
                1);
        }
        return true;
    }
    // W (n_expert, n_in, n_out): element (e, i, o) at (e * n_in + i) * n_out + o.
    // GGUF wants (n_in, rows, n_expert): row o of expert e holds W[e, :, o].
    const size_t es = di.block_bytes;
    const int64_t n_out = t.ne[0], n_in = t.ne[1], X = t.ne[2];
    const uint8_t *src = static_cast<const uint8_t *>(t.data);
    auto transposed = [&](int64_t first, int64_t step) -> std::vector<uint8_t> & {
        const int64_t rows = n_out / step;
        std::vector<uint8_t> &b = store.emplace_back((size_t)(X * rows * n_in) * es);
        for (int64_t e = 0; e < X; ++e)
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t i = 0; i < n_in; ++i)
                    std::memcpy(&b[((size_t)(e * rows + r) * n_in + i) * es],
                                src + ((size_t)(e * n_in + i) * n_out + first + r * step) * es, es);
        return b;
    };
    if (gate_up) {
        add(out, blk + "ffn_gate_exps.weight", t.type, transposed(0, 2), n_in, n_out / 2, X);
        add(out, blk + "ffn_up_exps.weight", t.type, transposed(1, 2), n_in, n_out / 2, X);
    } else {
        add(out, blk + "ffn_down_exps.weight", t.type, transposed(0, 1), n_in, n_out, X);
    }
    return true;
}

} // namespace vt
