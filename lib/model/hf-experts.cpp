#include "model/hf-experts.h"

#include <cstring>

#include "core/error.h"
#include "model/hf-folder.h"

namespace vt {

namespace {
const char *exps_name(const std::string &proj) {
    if (proj == "gate_proj" || proj == "w1") return "ffn_gate_exps.weight";
    if (proj == "up_proj" || proj == "w3") return "ffn_up_exps.weight";
    if (proj == "down_proj" || proj == "w2") return "ffn_down_exps.weight";
    return nullptr;
}
} // namespace

bool HfExperts::take(const SafetensorsTensor &t) {
    std::string bid, rest;
    if (!split_hf_layer_name(t.name, bid, rest)) return false;
    const std::string blk = "blk." + bid + ".";
    for (const char *prefix : {"mlp.experts.", "block_sparse_moe.experts.", "feed_forward.experts." /* LFM2-MoE */,
                           "experts." /* Gemma 4 */}) {
        if (rest.rfind(prefix, 0) != 0) continue;
        const std::string tail = rest.substr(std::strlen(prefix));
        if (t.n_dims == 3 && (tail == "gate_up_proj" || tail == "down_proj")) {
            if (t.ne[2] <= 0 || t.ne[1] <= 0) fail(VT_ERR_FORMAT, "%s: an empty expert tensor", t.name.c_str());
            // Fused: one (n_in, n_out, n_expert) tensor per layer.
            if (tail == "down_proj") {
                parts_[blk + "ffn_down_exps.weight"][-1] = Part{t, 0, t.ne[1]};
                return true;
            }
            if (t.ne[1] % 2 != 0) fail(VT_ERR_FORMAT, "%s: gate_up_proj has an odd row count", t.name.c_str());
            for (int half = 0; half < 2; ++half) {
                const int64_t n = t.ne[1] / 2;
                for (int64_t e = 0; e < t.ne[2]; ++e) {
                    Part p{t, half * n, n};
                    p.t.data = static_cast<const uint8_t *>(t.data) + (size_t)e * (t.nbytes / (size_t)t.ne[2]);
                    parts_[blk + (half == 0 ? "ffn_gate_exps.weight" : "ffn_up_exps.weight")][e] = p;
                }
            }
            return true;
        }
        // Per expert: "<e>.<proj>.weight".
        const size_t dot = tail.find('.');
        if (dot == std::string::npos) return false;
        const std::string e = tail.substr(0, dot), proj_w = tail.substr(dot + 1);
        if (e.empty() || e.find_first_not_of("0123456789") != std::string::npos || e.size() > 6) return false;
        const std::string weight = ".weight";
        if (proj_w.size() <= weight.size() || proj_w.compare(proj_w.size() - weight.size(), weight.size(), weight) != 0)
            return false;
        const char *name = exps_name(proj_w.substr(0, proj_w.size() - weight.size()));
        if (!name || t.n_dims != 2) return false;
        parts_[blk + name][std::stoll(e)] = Part{t, 0, t.ne[1]};
        return true;
    }
    return false;
}

void HfExperts::finish(std::vector<GgufTensorInfo> &out, const std::string &where) {
    for (auto &[name, experts] : parts_) {
        GgufTensorInfo ti;
        ti.name = name;
        ti.n_dims = 3;
        if (auto whole = experts.find(-1); whole != experts.end()) {
            // A fused down_proj: already (n_ff, n_embd, n_expert).
            if (experts.size() != 1) fail(VT_ERR_FORMAT, "%s: %s both fused and per expert", where.c_str(), name.c_str());
            const SafetensorsTensor &t = whole->second.t;
            for (int d = 0; d < 4; ++d) ti.ne[d] = t.ne[d];
            ti.type = t.type;
            ti.data = t.data;
            ti.nbytes = t.nbytes;
            out.push_back(std::move(ti));
            continue;
        }
        const int64_t n_expert = (int64_t)experts.size();
        const SafetensorsTensor &first = experts.begin()->second.t;
        const int64_t k = first.ne[0], rows = experts.begin()->second.rows;
        if (experts.rbegin()->first != n_expert - 1)
            fail(VT_ERR_FORMAT, "%s: %s lacks experts (%lld found, the last is %lld)", where.c_str(), name.c_str(),
                 (long long)n_expert, (long long)experts.rbegin()->first);
        const size_t row = row_bytes(first.type, k), matrix = row * (size_t)rows;
        std::vector<uint8_t> &buf = storage_->emplace_back(matrix * (size_t)n_expert);
        for (const auto &[e, p] : experts) {
            if (p.t.type != first.type || p.t.ne[0] != k || p.rows != rows)
                fail(VT_ERR_FORMAT, "%s: the experts of %s differ in shape or type", where.c_str(), name.c_str());
            std::memcpy(buf.data() + (size_t)e * matrix, static_cast<const uint8_t *>(p.t.data) + (size_t)p.row0 * row,
                        matrix);
        }
        copied_ += buf.size();
        ti.ne[0] = k;
        ti.ne[1] = rows;
        ti.ne[2] = n_expert;
        ti.type = first.type;
        ti.data = buf.data();
        ti.nbytes = buf.size();
        ti.copied = true;
        out.push_back(std::move(ti));
        // The experts' NVFP4 factors (model/hf-quantized.h) as one F32 per
        // expert, llama.cpp's converter's `<name>.scale`.
        bool scaled = false;
        for (const auto &[e, p] : experts) scaled |= p.t.product_scale != 1.0f;
        if (scaled && name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0) {
            std::vector<uint8_t> &sb = storage_->emplace_back((size_t)n_expert * sizeof(float));
            for (const auto &[e, p] : experts) std::memcpy(sb.data() + (size_t)e * sizeof(float), &p.t.product_scale, 4);
            GgufTensorInfo si;
            si.name = name.substr(0, name.size() - 7) + ".scale";
            si.n_dims = 1;
            si.ne[0] = n_expert;
            si.type = DType::F32;
            si.data = sb.data();
            si.nbytes = sb.size();
            si.copied = true;
            out.push_back(std::move(si));
        }
    }
}

} // namespace vt
