#include "model/safetensors.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <map>

#include "core/error.h"

namespace vt {

namespace {
using json = nlohmann::json;

// A header larger than this is not a header (safetensors itself caps it at 100 MB).
constexpr uint64_t kMaxHeader = 100ull << 20;

bool dtype_of(const std::string &s, DType &t) {
    if (s == "F32") t = DType::F32;
    else if (s == "F16") t = DType::F16;
    else if (s == "BF16") t = DType::BF16;
    else return false;
    return true;
}

bool ends_with(const std::string &s, const char *suffix) {
    const size_t n = std::strlen(suffix);
    return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// The U8 halves of an MXFP4 pair (safetensors.h: pair_mxfp4).
bool mxfp4_part_name(const std::string &name) { return ends_with(name, "_blocks") || ends_with(name, "_scales"); }
} // namespace

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::string &path, bool use_mmap) {
    std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
    f->file_ = MappedFile::open(path, use_mmap);
    f->name_ = path;
    f->parse_all(f->file_->data(), f->file_->size());
    return f;
}

std::unique_ptr<SafetensorsFile> SafetensorsFile::parse(const uint8_t *data, size_t size, const std::string &name) {
    std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
    f->name_ = name;
    f->parse_all(data, size);
    return f;
}

void SafetensorsFile::parse_all(const uint8_t *data, size_t size) {
    const char *path = name_.c_str();
    if (size < 8) fail(VT_ERR_FORMAT, "%s: %zu bytes is too short for a safetensors header", path, size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | data[i];
    if (n < 2 || n > kMaxHeader || n > size - 8)
        fail(VT_ERR_FORMAT, "%s: header length %llu does not fit the file of %zu bytes", path, (unsigned long long)n,
             size);
    const json header = json::parse(data + 8, data + 8 + n, nullptr, /*allow_exceptions=*/false);
    if (!header.is_object()) fail(VT_ERR_FORMAT, "%s: the header is not a JSON object", path);
    const uint8_t *base = data + 8 + n;
    const uint64_t data_size = size - 8 - n;
    for (const auto &[name, t] : header.items()) {
        if (name == "__metadata__") continue;
        const char *tn = name.c_str();
        if (!t.is_object() || !t.contains("dtype") || !t["dtype"].is_string() || !t.contains("shape") ||
            !t["shape"].is_array() || !t.contains("data_offsets") || !t["data_offsets"].is_array() ||
            t["data_offsets"].size() != 2)
            fail(VT_ERR_FORMAT, "%s: tensor '%s' lacks dtype, shape or data_offsets", path, tn);
        SafetensorsTensor st;
        st.name = name;
        const std::string dt = t["dtype"].get<std::string>();
        const bool mx_part = dt == "U8" && mxfp4_part_name(name);
        const bool fp8 = dt == "F8_E4M3", u8 = dt == "U8" && !mx_part;
        if (!mx_part && !fp8 && !u8 && !dtype_of(dt, st.type))
            fail(VT_ERR_UNSUPPORTED, "%s: tensor '%s' has dtype %s (vt reads F32, F16, BF16, F8_E4M3 and U8)", path, tn,
                 dt.c_str());
        const json &shape = t["shape"];
        if (shape.size() > 4) fail(VT_ERR_UNSUPPORTED, "%s: tensor '%s' has %zu dimensions", path, tn, shape.size());
        st.n_dims = (int)shape.size();
        uint64_t count = 1;
        for (int d = 0; d < st.n_dims; ++d) {
            const json &v = shape[(size_t)(st.n_dims - 1 - d)];
            if (!v.is_number_unsigned() || v.get<uint64_t>() == 0 || v.get<uint64_t>() > (1ull << 40))
                fail(VT_ERR_FORMAT, "%s: tensor '%s' has an invalid shape", path, tn);
            st.ne[d] = (int64_t)v.get<uint64_t>();
            count *= (uint64_t)st.ne[d];
            if (count > (1ull << 40)) fail(VT_ERR_FORMAT, "%s: tensor '%s' is too large", path, tn);
        }
        const json &off = t["data_offsets"];
        if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned())
            fail(VT_ERR_FORMAT, "%s: tensor '%s' has invalid data_offsets", path, tn);
        const uint64_t b = off[0].get<uint64_t>(), e = off[1].get<uint64_t>();
        const uint64_t want = count * (mx_part || fp8 || u8 ? 1 : dtype_info(st.type).block_bytes);
        if (b > e || e > data_size || e - b != want)
            fail(VT_ERR_FORMAT, "%s: tensor '%s' data [%llu, %llu) does not hold %llu bytes inside the %llu of data",
                 path, tn, (unsigned long long)b, (unsigned long long)e, (unsigned long long)want,
                 (unsigned long long)data_size);
        st.data = base + b;
        st.nbytes = (size_t)want;
        (mx_part ? mx_parts_ : fp8 ? fp8_parts_ : u8 ? u8_parts_ : tensors_).push_back(std::move(st));
    }
}

std::vector<SafetensorsTensor> pair_mxfp4(const std::vector<const SafetensorsTensor *> &parts, const std::string &where) {
    std::map<std::string, std::pair<const SafetensorsTensor *, const SafetensorsTensor *>> pairs;
    for (const SafetensorsTensor *p : parts) {
        const bool blocks = ends_with(p->name, "_blocks");
        auto &slot = pairs[p->name.substr(0, p->name.size() - 7)];
        (blocks ? slot.first : slot.second) = p;
    }
    std::vector<SafetensorsTensor> out;
    for (const auto &[name, pr] : pairs) {
        const auto [b, s] = pr;
        const char *n = name.c_str();
        if (!b || !s)
            fail(VT_ERR_FORMAT, "%s: MXFP4 tensor '%s' has %s but no %s", where.c_str(), n, b ? "_blocks" : "_scales",
                 b ? "_scales" : "_blocks");
        // blocks (..., rows, n_blocks, 16), scales (..., rows, n_blocks): ne
        // reversed, so blocks' ne[d + 1] is scales' ne[d].
        bool ok = b->n_dims >= 3 && b->ne[0] == 16 && s->n_dims == b->n_dims - 1;
        for (int d = 0; ok && d < s->n_dims; ++d) ok = s->ne[d] == b->ne[d + 1];
        if (!ok)
            fail(VT_ERR_FORMAT,
                 "%s: MXFP4 tensor '%s': _blocks must be (..., rows, n_blocks, 16) and _scales (..., rows, n_blocks)",
                 where.c_str(), n);
        SafetensorsTensor t;
        t.name = name;
        t.type = DType::MXFP4;
        t.n_dims = s->n_dims;
        for (int d = 0; d < 4; ++d) t.ne[d] = s->ne[d];
        t.ne[0] = s->ne[0] * 32;
        t.nbytes = (size_t)(s->nbytes * 17);  // a block per scale
        t.mx_blocks = b;
        t.mx_scales = s;
        out.push_back(std::move(t));
    }
    return out;
}

SafetensorsTensor materialize_mxfp4(const SafetensorsTensor &t, int64_t first, int64_t step,
                                    std::deque<std::vector<uint8_t>> &store) {
    if (!t.mx_blocks || !t.mx_scales || step < 1 || first < 0 || first >= t.ne[1])
        fail(VT_ERR_INTERNAL, "materialize_mxfp4: '%s' is not a pending MXFP4 pair or rows %lld + k * %lld are empty",
             t.name.c_str(), (long long)first, (long long)step);
    const int64_t nb = t.ne[0] / 32, rows = t.ne[1], n_mat = t.ne[2] * t.ne[3];
    const int64_t taken = (rows - first + step - 1) / step;
    const uint8_t *blocks = static_cast<const uint8_t *>(t.mx_blocks->data);
    const uint8_t *scales = static_cast<const uint8_t *>(t.mx_scales->data);
    std::vector<uint8_t> &bytes = store.emplace_back((size_t)(n_mat * taken * nb * 17));
    uint8_t *o = bytes.data();
    for (int64_t m = 0; m < n_mat; ++m)
        for (int64_t r = first; r < rows; r += step)
            for (int64_t b = 0; b < nb; ++b, o += 17) {
                const int64_t at = (m * rows + r) * nb + b;
                const uint8_t *src = blocks + at * 16;
                o[0] = scales[at];
                // Element i: nibble i % 2 of byte i / 2. ggml's byte j holds
                // elements j and j + 16: bytes j / 2 and 8 + j / 2.
                for (int j = 0; j < 16; ++j) {
                    const uint8_t lo = (uint8_t)(src[j / 2] >> (4 * (j & 1)) & 0xF);
                    const uint8_t hi = (uint8_t)(src[8 + j / 2] >> (4 * (j & 1)) & 0xF);
                    o[1 + j] = (uint8_t)(lo | hi << 4);
                }
            }
    SafetensorsTensor out = t;
    out.ne[1] = taken;
    out.data = bytes.data();
    out.nbytes = bytes.size();
    out.mx_blocks = out.mx_scales = nullptr;
    return out;
}

} // namespace vt
