// safetensors reader over a memory mapping: an 8-byte little-endian header
// length, a JSON header {name: {dtype, shape, data_offsets}, "__metadata__":
// {...}}, then the tensor bytes. Nothing is copied. Every offset, size and
// shape is checked against the file before a tensor is listed, so a corrupt
// or truncated file is an error, never an out-of-bounds read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/mmap.h"

namespace vt {

struct SafetensorsTensor {
    std::string name;
    DType type = DType::F32;
    int n_dims = 0;
    int64_t ne[4] = {1, 1, 1, 1};  // ne[0] contiguous: the shape reversed
    const void *data = nullptr;    // into the mapping
    size_t nbytes = 0;
};

class SafetensorsFile {
public:
    // Opens and validates path. Throws vt::Error: VT_ERR_IO (missing,
    // unreadable), VT_ERR_FORMAT (corrupt or truncated; names the path and
    // the tensor), VT_ERR_UNSUPPORTED (a dtype other than F32, F16, BF16, or
    // more than 4 dimensions).
    static std::unique_ptr<SafetensorsFile> open(const std::string &path, bool use_mmap = true);
    // Parses bytes owned by the caller (tests, fuzzing); they must outlive it.
    static std::unique_ptr<SafetensorsFile> parse(const uint8_t *data, size_t size, const std::string &name = "safetensors");

    const std::vector<SafetensorsTensor> &tensors() const { return tensors_; }
    const std::string &path() const { return name_; }
    // See MappedFile::release.
    void release(const void *p, size_t n) const {
        if (file_) file_->release(p, n);
    }

private:
    SafetensorsFile() = default;
    void parse_all(const uint8_t *data, size_t size);
    std::unique_ptr<MappedFile> file_;
    std::string name_;
    std::vector<SafetensorsTensor> tensors_;
};

} // namespace vt
