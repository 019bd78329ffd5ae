// GGUF v2/v3 parser. Format facts (little-endian throughout):
//   header  : "GGUF" u32 version, u64 n_tensors, u64 n_kv
//   kv      : string key, u32 type, value   (string = u64 length + bytes)
//   array   : u32 element type, u64 count, elements
//   tensor  : string name, u32 n_dims, u64 ne[n_dims], u32 type, u64 offset
//   data    : starts at the first multiple of general.alignment (default 32)
//             after the tensor infos; tensor offsets are relative to it.
// Nothing is trusted: every read is bounds-checked, and every count is checked
// against the bytes left before anything is sized from it, so a hostile file
// can make us throw vt::Error but never read out of bounds or allocate wildly.
#include "model/gguf.h"

#include <algorithm>
#include <bit>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <new>

#include "core/error.h"
#include "model/gguf-internal.h"

namespace vt {

static_assert(std::endian::native == std::endian::little, "the GGUF reader assumes a little-endian host");

namespace gguf_detail {

size_t scalar_size(uint32_t t) {
    switch ((GgufType)t) {
    case GgufType::UINT8: case GgufType::INT8: case GgufType::BOOL: return 1;
    case GgufType::UINT16: case GgufType::INT16: return 2;
    case GgufType::UINT32: case GgufType::INT32: case GgufType::FLOAT32: return 4;
    case GgufType::UINT64: case GgufType::INT64: case GgufType::FLOAT64: return 8;
    default: return 0;
    }
}

void load_scalar(GgufType t, const uint8_t *p, GgufValue &v) {
    auto get = [p](auto x) {
        std::memcpy(&x, p, sizeof x);
        return x;
    };
    auto set_u = [&v](uint64_t u) { v.u = u, v.i = (int64_t)u, v.f = (double)u; };
    auto set_i = [&v](int64_t i) { v.i = i, v.u = (uint64_t)i, v.f = (double)i; };
    switch (t) {
    case GgufType::UINT8: case GgufType::BOOL: set_u(get(uint8_t{})); break;
    case GgufType::INT8: set_i(get(int8_t{})); break;
    case GgufType::UINT16: set_u(get(uint16_t{})); break;
    case GgufType::INT16: set_i(get(int16_t{})); break;
    case GgufType::UINT32: set_u(get(uint32_t{})); break;
    case GgufType::INT32: set_i(get(int32_t{})); break;
    case GgufType::UINT64: set_u(get(uint64_t{})); break;
    case GgufType::INT64: set_i(get(int64_t{})); break;
    case GgufType::FLOAT32: v.f = get(float{}); break;
    case GgufType::FLOAT64: v.f = get(double{}); break;
    default: break;
    }
}

} // namespace gguf_detail

namespace {

using gguf_detail::load_scalar;
using gguf_detail::scalar_size;

constexpr uint32_t kMaxDims = 4;
// Real files hold well under a thousand kvs (vocabularies are single array
// kvs). The cap bounds the memory a hostile file can make us spend: each kv
// costs ~150 bytes of bookkeeping for as little as 13 bytes of input.
constexpr uint64_t kMaxKvs = 1u << 20;
// Smallest encodings, used to reject counts that cannot fit in the bytes left:
// a kv is key length (8) + type (4) + a 1-byte value; a tensor info is name
// length (8) + n_dims (4) + one dim (8) + type (4) + offset (8).
constexpr size_t kMinKvBytes = 13;
constexpr size_t kMinTensorBytes = 32;
constexpr size_t kMinStringBytes = 8;

// ggml type ids that vt has no kernels for: these are valid files we cannot
// run (VT_ERR_UNSUPPORTED), unlike ids nobody defines (VT_ERR_FORMAT).
const char *ggml_only_type_name(uint32_t id) {
    static const char *const names[] = {
        nullptr, nullptr, nullptr, nullptr, "IQ4_NL", nullptr, nullptr, "IQ4_XS",      // 16-23
        "I8", "I16", "I32", "I64", "F64", nullptr, nullptr,                            // 24-30
        "Q4_0_4_4", "Q4_0_4_8", "Q4_0_8_8", "TQ1_0", "TQ2_0",                           // 31-35
        "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8", "MXFP4",                              // 36-39
    };
    if (id == 4 || id == 5) return id == 4 ? "Q4_2" : "Q4_3";
    if (id < 16 || id >= 16 + sizeof(names) / sizeof(names[0])) return nullptr;
    return names[id - 16];
}

// Bounds-checked little-endian reader over the file bytes. Errors name the
// file and the offset where the offending item starts.
class Cursor {
public:
    Cursor(const uint8_t *data, size_t size, const std::string &name) : data_(data), size_(size), name_(name) {}

    size_t pos() const { return pos_; }
    size_t remaining() const { return size_ - pos_; }
    const uint8_t *base() const { return data_; }
    size_t size() const { return size_; }

    [[noreturn]] __attribute__((format(printf, 4, 5))) void bad(vt_status st, size_t at, const char *fmt, ...) const {
        va_list ap;
        va_start(ap, fmt);
        char msg[512];
        std::vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        fail(st, "%s: %s at offset %zu", name_.c_str(), msg, at);
    }

    const uint8_t *take(size_t n, const char *what) {
        if (n > remaining())
            bad(VT_ERR_FORMAT, pos_, "truncated file: %s needs %zu bytes but %zu remain", what, n, remaining());
        const uint8_t *p = data_ + pos_;
        pos_ += n;
        return p;
    }

    template <class T> T read(const char *what) {
        T v;
        std::memcpy(&v, take(sizeof(T), what), sizeof(T));
        return v;
    }

    std::string_view str(const char *what) {
        const size_t at = pos_;
        const uint64_t len = read<uint64_t>(what);
        if (len > remaining())
            bad(VT_ERR_FORMAT, at, "%s length %llu exceeds the %zu bytes left in the file", what,
                (unsigned long long)len, remaining());
        return {reinterpret_cast<const char *>(take((size_t)len, what)), (size_t)len};
    }

    // Rejects a count whose items (each at least min_bytes) cannot fit in
    // what is left, before anything is allocated for it.
    void check_count(uint64_t n, size_t min_bytes, size_t at, const char *what) const {
        if (n > remaining() / min_bytes)
            bad(VT_ERR_FORMAT, at, "%s %llu cannot fit in the %zu bytes left in the file", what,
                (unsigned long long)n, remaining());
    }

private:
    const uint8_t *data_;
    size_t size_;
    size_t pos_ = 0;
    const std::string &name_;
};

} // namespace

// Parses the whole file into a GgufFile; a friend so it can fill the members.
class GgufParser {
public:
    GgufParser(GgufFile &g, const uint8_t *data, size_t size) : g_(g), c_(data, size, g.name_) {}

    void run() {
        header();
        for (uint64_t k = 0; k < n_kv_; ++k) kv();
        c_.check_count(n_tensors_, kMinTensorBytes, 8, "tensor count");
        for (uint64_t t = 0; t < n_tensors_; ++t) tensor_info();
        data_section();
    }

private:
    void header() {
        const uint8_t *magic = c_.take(4, "magic");
        if (std::memcmp(magic, "GGUF", 4) != 0)
            c_.bad(VT_ERR_FORMAT, 0, "not a GGUF file (magic %02x %02x %02x %02x)", magic[0], magic[1], magic[2],
                   magic[3]);
        const uint32_t v = c_.read<uint32_t>("version");
        if (v == 1) c_.bad(VT_ERR_UNSUPPORTED, 4, "GGUF version 1 is not supported (re-convert the model)");
        if (v != 2 && v != 3) {
            const bool swapped = (v & 0xffff) == 0 && v != 0;  // 0x03000000: a big-endian file
            c_.bad(VT_ERR_FORMAT, 4, "unknown GGUF version %u%s", v, swapped ? " (big-endian file?)" : "");
        }
        g_.version_ = v;
        n_tensors_ = c_.read<uint64_t>("tensor count");
        n_kv_ = c_.read<uint64_t>("kv count");
        c_.check_count(n_kv_, kMinKvBytes, 16, "kv count");
        if (n_kv_ > kMaxKvs)
            c_.bad(VT_ERR_FORMAT, 16, "kv count %llu exceeds the limit of %llu", (unsigned long long)n_kv_,
                   (unsigned long long)kMaxKvs);
        c_.check_count(n_tensors_, kMinTensorBytes, 8, "tensor count");
    }

    void kv() {
        const size_t at = c_.pos();
        const std::string_view key = c_.str("key");
        if (g_.kv_index_.count(key)) c_.bad(VT_ERR_FORMAT, at, "duplicate key '%s'", std::string(key).c_str());
        const size_t type_at = c_.pos();
        GgufKV kv;
        kv.key.assign(key);
        kv.value.type = (GgufType)c_.read<uint32_t>("value type");
        value(kv.value, type_at, kv.key);
        if (key == "general.alignment") alignment(kv.value, type_at);
        g_.kv_index_.emplace(key, g_.kvs_.size());
        g_.kvs_.push_back(std::move(kv));
    }

    void value(GgufValue &v, size_t type_at, const std::string &key) {
        const uint32_t t = (uint32_t)v.type;
        if (v.type == GgufType::STRING) {
            v.str = c_.str("string value");
        } else if (v.type == GgufType::ARRAY) {
            array(v, key);
        } else if (size_t n = scalar_size(t)) {
            const size_t at = c_.pos();
            load_scalar(v.type, c_.take(n, "value"), v);
            if (v.type == GgufType::BOOL && v.u > 1)
                c_.bad(VT_ERR_FORMAT, at, "invalid bool value %u for key '%s'", (unsigned)v.u, key.c_str());
        } else {
            c_.bad(VT_ERR_FORMAT, type_at, "unknown value type %u for key '%s'", t, key.c_str());
        }
    }

    void array(GgufValue &v, const std::string &key) {
        const size_t type_at = c_.pos();
        const uint32_t et = c_.read<uint32_t>("array element type");
        v.arr_type = (GgufType)et;
        if (v.arr_type == GgufType::ARRAY)
            c_.bad(VT_ERR_UNSUPPORTED, type_at, "nested arrays are not supported (key '%s')", key.c_str());
        const size_t esize = scalar_size(et);
        if (v.arr_type != GgufType::STRING && esize == 0)
            c_.bad(VT_ERR_FORMAT, type_at, "unknown array element type %u for key '%s'", et, key.c_str());
        const size_t n_at = c_.pos();
        v.arr_n = c_.read<uint64_t>("array length");
        if (v.arr_type == GgufType::STRING) {
            c_.check_count(v.arr_n, kMinStringBytes, n_at, "string array length");
            v.strs.reserve((size_t)v.arr_n);
            for (uint64_t i = 0; i < v.arr_n; ++i) v.strs.push_back(c_.str("array string"));
            return;
        }
        c_.check_count(v.arr_n, esize, n_at, "array length");
        const size_t data_at = c_.pos();
        v.raw = c_.take((size_t)v.arr_n * esize, "array data");
        if (v.arr_type == GgufType::BOOL)
            for (uint64_t i = 0; i < v.arr_n; ++i)
                if (v.raw[i] > 1)
                    c_.bad(VT_ERR_FORMAT, data_at + (size_t)i, "invalid bool value %u in array '%s'", v.raw[i],
                           key.c_str());
    }

    void alignment(const GgufValue &v, size_t at) {
        if (v.type != GgufType::UINT32)
            c_.bad(VT_ERR_FORMAT, at, "general.alignment has type %s, expected uint32", gguf_type_name(v.type));
        if (v.u == 0 || (v.u & (v.u - 1)) != 0)
            c_.bad(VT_ERR_FORMAT, at, "general.alignment %llu is not a power of two", (unsigned long long)v.u);
        g_.alignment_ = (size_t)v.u;
    }

    void tensor_info() {
        const size_t at = c_.pos();
        GgufTensorInfo ti;
        const std::string_view name = c_.str("tensor name");
        ti.name.assign(name);
        if (g_.tensor_index_.count(name)) c_.bad(VT_ERR_FORMAT, at, "duplicate tensor '%s'", ti.name.c_str());
        shape(ti);
        dtype(ti);
        ti.offset = c_.read<uint64_t>("tensor offset");
        g_.tensor_index_.emplace(name, g_.tensors_.size());
        g_.tensors_.push_back(std::move(ti));
        starts_.push_back(at);
    }

    void shape(GgufTensorInfo &ti) {
        const size_t at = c_.pos();
        ti.n_dims = c_.read<uint32_t>("tensor n_dims");
        if (ti.n_dims == 0 || ti.n_dims > kMaxDims)
            c_.bad(VT_ERR_FORMAT, at, "tensor '%s' has %u dimensions (1 to %u allowed)", ti.name.c_str(), ti.n_dims,
                   kMaxDims);
        int64_t nel = 1;
        for (uint32_t d = 0; d < ti.n_dims; ++d) {
            const size_t dat = c_.pos();
            const uint64_t ne = c_.read<uint64_t>("tensor dimension");
            if (ne == 0 || ne > (uint64_t)INT64_MAX)
                c_.bad(VT_ERR_FORMAT, dat, "tensor '%s' dimension %u is %llu", ti.name.c_str(), d,
                       (unsigned long long)ne);
            if ((int64_t)ne > INT64_MAX / nel)
                c_.bad(VT_ERR_FORMAT, dat, "tensor '%s' element count overflows", ti.name.c_str());
            ti.ne[d] = (int64_t)ne;
            nel *= (int64_t)ne;
        }
        nel_ = nel;
    }

    void dtype(GgufTensorInfo &ti) {
        const size_t at = c_.pos();
        const uint32_t id = c_.read<uint32_t>("tensor type");
        const DTypeInfo *info = id < kFirstOwnType ? dtype_info(id) : nullptr;  // vt's own types are no GGUF's
        if (!info) {
            if (const char *known = ggml_only_type_name(id))
                c_.bad(VT_ERR_UNSUPPORTED, at, "tensor '%s' has type %s (id %u), which vt does not support",
                       ti.name.c_str(), known, id);
            c_.bad(VT_ERR_FORMAT, at, "tensor '%s' has unknown type id %u", ti.name.c_str(), id);
        }
        ti.type = (DType)id;
        if (ti.ne[0] % info->block_elems != 0)
            c_.bad(VT_ERR_FORMAT, at, "tensor '%s': row length %lld is not a multiple of the %s block size %lld",
                   ti.name.c_str(), (long long)ti.ne[0], info->name, (long long)info->block_elems);
        const uint64_t blocks = (uint64_t)(nel_ / info->block_elems);
        if (blocks > SIZE_MAX / info->block_bytes)
            c_.bad(VT_ERR_FORMAT, at, "tensor '%s' byte size overflows", ti.name.c_str());
        ti.nbytes = (size_t)blocks * info->block_bytes;
    }

    // Places the data section and checks every tensor lies inside the file,
    // aligned, and apart from the others.
    void data_section() {
        const size_t end = c_.pos(), a = g_.alignment_;
        if (end > SIZE_MAX - (a - 1)) c_.bad(VT_ERR_FORMAT, end, "data section offset overflows");
        g_.data_offset_ = (end + a - 1) / a * a;
        if (g_.tensors_.empty()) return;  // vocab-only files may end without padding
        if (g_.data_offset_ > c_.size())
            c_.bad(VT_ERR_FORMAT, end, "data section (aligned to %zu) starts past the end of the file", a);
        const size_t room = c_.size() - g_.data_offset_;
        for (size_t i = 0; i < g_.tensors_.size(); ++i) {
            GgufTensorInfo &ti = g_.tensors_[i];
            if (ti.offset % a != 0)
                c_.bad(VT_ERR_FORMAT, starts_[i], "tensor '%s' offset %llu is not a multiple of the alignment %zu",
                       ti.name.c_str(), (unsigned long long)ti.offset, a);
            if (ti.offset > room || ti.nbytes > room - ti.offset)
                c_.bad(VT_ERR_FORMAT, starts_[i],
                       "tensor '%s' data (%zu bytes at data offset %llu) extends past the end of the file",
                       ti.name.c_str(), ti.nbytes, (unsigned long long)ti.offset);
            ti.data = c_.base() + g_.data_offset_ + ti.offset;
        }
        check_overlaps();
    }

    void check_overlaps() {
        std::vector<size_t> order(g_.tensors_.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        const auto &ts = g_.tensors_;
        std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return ts[x].offset < ts[y].offset; });
        for (size_t k = 1; k < order.size(); ++k) {
            const GgufTensorInfo &p = ts[order[k - 1]], &t = ts[order[k]];
            if (p.offset + p.nbytes > t.offset)
                c_.bad(VT_ERR_FORMAT, starts_[order[k]], "tensor '%s' overlaps tensor '%s' in the data section",
                       t.name.c_str(), p.name.c_str());
        }
    }

    GgufFile &g_;
    Cursor c_;
    uint64_t n_tensors_ = 0, n_kv_ = 0;
    int64_t nel_ = 0;             // element count of the tensor being read
    std::vector<size_t> starts_;  // file offset of each tensor info, for messages
};

void GgufFile::parse_all(const uint8_t *data, size_t size) {
    GgufParser(*this, data, size).run();
}

std::unique_ptr<GgufFile> GgufFile::open(const std::string &path, bool use_mmap) {
    try {
        std::unique_ptr<GgufFile> g(new GgufFile());
        g->name_ = path;
        g->file_ = MappedFile::open(path, use_mmap);
        if (g->file_->size() == 0) fail(VT_ERR_FORMAT, "%s: file is empty, not a GGUF file (at offset 0)", path.c_str());
        g->parse_all(g->file_->data(), g->file_->size());
        return g;
    } catch (const std::bad_alloc &) {
        fail(VT_ERR_OUT_OF_MEMORY, "%s: out of memory while reading the GGUF header", path.c_str());
    }
}

std::unique_ptr<GgufFile> GgufFile::parse(const uint8_t *data, size_t size) {
    try {
        std::unique_ptr<GgufFile> g(new GgufFile());
        g->parse_all(data, size);
        return g;
    } catch (const std::bad_alloc &) {
        fail(VT_ERR_OUT_OF_MEMORY, "gguf: out of memory while reading the GGUF header");
    }
}

std::unique_ptr<GgufFile> GgufFile::assemble(std::string name, std::vector<GgufKV> kvs,
                                             std::vector<GgufTensorInfo> tensors,
                                             std::vector<std::shared_ptr<const void>> keep) {
    std::unique_ptr<GgufFile> g(new GgufFile());
    g->name_ = std::move(name);
    g->version_ = 3;
    g->keep_ = std::move(keep);
    g->kvs_ = std::move(kvs);
    g->tensors_ = std::move(tensors);
    // The indexes view the strings in their final place.
    for (size_t i = 0; i < g->kvs_.size(); ++i)
        if (!g->kv_index_.emplace(g->kvs_[i].key, i).second)
            fail(VT_ERR_FORMAT, "%s: duplicate key '%s'", g->name_.c_str(), g->kvs_[i].key.c_str());
    for (size_t i = 0; i < g->tensors_.size(); ++i)
        if (!g->tensor_index_.emplace(g->tensors_[i].name, i).second)
            fail(VT_ERR_FORMAT, "%s: duplicate tensor '%s'", g->name_.c_str(), g->tensors_[i].name.c_str());
    return g;
}

} // namespace vt
