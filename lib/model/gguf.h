// GGUF v2/v3 reader over a memory mapping. Nothing is copied: strings, arrays
// and tensor data point into the mapped bytes, which must outlive the reader.
// Every offset, count and size is checked against the file; a violation
// throws vt::Error(VT_ERR_FORMAT, "<path or 'gguf'>: <what> at offset N").
// Thread-safety: a GgufFile is immutable once open/parse returns; its const
// methods may be called from any number of threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/dtype.h"
#include "core/mmap.h"

namespace vt {

enum class GgufType : uint32_t {
    UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6,
    BOOL = 7, STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};

struct GgufValue {
    GgufType type = GgufType::UINT8;
    // Scalars, widened: for any integer type and bool (0/1) both i and u hold
    // the value (i wraps for a uint64 above INT64_MAX, u for a negative int);
    // f holds the value of any numeric type. Prefer the typed getters, which
    // check range and type.
    int64_t i = 0;
    uint64_t u = 0;
    double f = 0;
    std::string_view str;                 // STRING
    // ARRAY: element type and count; elements of fixed size at `raw`,
    // strings in `strs`. Nested arrays are rejected (VT_ERR_UNSUPPORTED).
    GgufType arr_type = GgufType::UINT8;
    uint64_t arr_n = 0;
    const uint8_t *raw = nullptr;
    std::vector<std::string_view> strs;

    // Element i of a numeric array (i < arr_n, unaligned little-endian read):
    // any integer or bool type as int64/uint64, any numeric type as double.
    // vt::Error(VT_ERR_FORMAT) for a string array, an out-of-range index, or
    // a value that does not fit (negative in uint_at, >INT64_MAX in int_at).
    int64_t int_at(uint64_t i) const;
    uint64_t uint_at(uint64_t i) const;
    double float_at(uint64_t i) const;
};

// "uint32", "string", ... ("unknown" for an invalid id).
const char *gguf_type_name(GgufType t);

struct GgufKV {
    std::string key;
    GgufValue value;
};

struct GgufTensorInfo {
    std::string name;
    uint32_t n_dims = 0;
    int64_t ne[4] = {1, 1, 1, 1};  // ne[0] is the contiguous (row) dimension
    DType type = DType::F32;
    uint64_t offset = 0;           // from the start of the data section
    const void *data = nullptr;    // into the mapping
    size_t nbytes = 0;
    bool copied = false;           // data is a copy in memory (a folder's converted or stacked tensors)
};

class GgufFile {
public:
    // Opens and validates a file. Throws vt::Error: VT_ERR_IO (missing,
    // unreadable, directory, empty), VT_ERR_FORMAT (corrupt; the message
    // names the path and offset), VT_ERR_UNSUPPORTED (GGUF v1, nested arrays,
    // a ggml tensor type vt has no kernels for), VT_ERR_OUT_OF_MEMORY.
    static std::unique_ptr<GgufFile> open(const std::string &path, bool use_mmap = true);
    // Parses bytes owned by the caller (tests, fuzzing); they must outlive it.
    static std::unique_ptr<GgufFile> parse(const uint8_t *data, size_t size);
    // A file assembled in memory: another format's metadata and tensors as a
    // converter would have written them (model/hf-folder.h). keep owns
    // whatever their strings and data point into. VT_ERR_FORMAT on a
    // duplicate key or tensor name.
    static std::unique_ptr<GgufFile> assemble(std::string name, std::vector<GgufKV> kvs,
                                              std::vector<GgufTensorInfo> tensors,
                                              std::vector<std::shared_ptr<const void>> keep);

    uint32_t version() const { return version_; }
    size_t alignment() const { return alignment_; }
    const std::vector<GgufKV> &kvs() const { return kvs_; }
    const GgufKV *find(std::string_view key) const;
    const std::vector<GgufTensorInfo> &tensors() const { return tensors_; }
    const GgufTensorInfo *find_tensor(std::string_view name) const;

    // Typed lookups: nullopt when absent; vt::Error(VT_ERR_FORMAT) when the
    // key holds another type (integers convert between widths when the value
    // fits; get_float also accepts integers) or, for get_array, an array of
    // another element type.
    std::optional<uint64_t> get_uint(std::string_view key) const;
    std::optional<int64_t> get_int(std::string_view key) const;
    std::optional<double> get_float(std::string_view key) const;
    std::optional<bool> get_bool(std::string_view key) const;
    std::optional<std::string_view> get_string(std::string_view key) const;
    const GgufValue *get_array(std::string_view key, GgufType elem) const;

    // Renders a value as text: numbers in decimal, bool true/false, strings
    // raw, arrays as JSON.
    static std::string to_string(const GgufValue &v);

    // See MappedFile::release: bytes of the file (a tensor's data) that
    // will not be read again.
    void release(const void *p, size_t n) const {
        if (file_) file_->release(p, n);
    }

    // Offset of the data section from the start of the file.
    size_t data_offset() const { return data_offset_; }

private:
    GgufFile() = default;
    void parse_all(const uint8_t *data, size_t size);
    const GgufValue *typed(std::string_view key, const char *want, bool ok(GgufType)) const;
    std::unique_ptr<MappedFile> file_;
    std::vector<std::shared_ptr<const void>> keep_;  // assemble()'s storage
    std::string name_ = "gguf";  // path for messages, "gguf" for parse()
    uint32_t version_ = 0;
    size_t alignment_ = 32;
    size_t data_offset_ = 0;
    std::vector<GgufKV> kvs_;
    std::vector<GgufTensorInfo> tensors_;
    // Keys and names view the file's bytes, so they stay valid as vectors grow.
    std::unordered_map<std::string_view, size_t> kv_index_;
    std::unordered_map<std::string_view, size_t> tensor_index_;

    friend class GgufParser;
};

} // namespace vt
