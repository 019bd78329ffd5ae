#include "model/safetensors.h"

#include <nlohmann/json.hpp>

#include <cstring>

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
        if (!dtype_of(dt, st.type))
            fail(VT_ERR_UNSUPPORTED, "%s: tensor '%s' has dtype %s (vt reads F32, F16 and BF16)", path, tn, dt.c_str());
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
        const uint64_t want = count * dtype_info(st.type).block_bytes;
        if (b > e || e > data_size || e - b != want)
            fail(VT_ERR_FORMAT, "%s: tensor '%s' data [%llu, %llu) does not hold %llu bytes inside the %llu of data",
                 path, tn, (unsigned long long)b, (unsigned long long)e, (unsigned long long)want,
                 (unsigned long long)data_size);
        st.data = base + b;
        st.nbytes = (size_t)want;
        tensors_.push_back(std::move(st));
    }
}

} // namespace vt
