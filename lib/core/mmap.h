// Read-only file mapping (or an owned in-memory copy when mmap is off).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace vt {

class MappedFile {
public:
    // Maps path read-only. Throws vt::Error: VT_ERR_IO for a missing or
    // unreadable file or a directory (the message names the path and reason).
    static std::unique_ptr<MappedFile> open(const std::string &path, bool use_mmap = true);
    ~MappedFile();
    MappedFile(const MappedFile &) = delete;
    MappedFile &operator=(const MappedFile &) = delete;

    const uint8_t *data() const { return data_; }
    size_t size() const { return size_; }
    const std::string &path() const { return path_; }

private:
    MappedFile() = default;
    const uint8_t *data_ = nullptr;
    size_t size_ = 0;
    bool mapped_ = false;
    std::string path_;
};

} // namespace vt
