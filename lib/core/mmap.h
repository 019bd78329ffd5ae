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

    // The caller will not read [p, p + n) again (a weight copied elsewhere):
    // for a mapping, the whole pages inside it leave this process's memory
    // (read again from the file should anything touch them); for an
    // in-memory copy, nothing happens.
    void release(const void *p, size_t n) const;

private:
    MappedFile() = default;
    const uint8_t *data_ = nullptr;
    size_t size_ = 0;
    bool mapped_ = false;
    std::string path_;
};

} // namespace vt
