#include "core/mmap.h"

#include <cerrno>
#include <cstring>
#include <new>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"

namespace vt {

namespace {

// Closes the descriptor on every path out of open(); the mapping (if any)
// stays valid after close, as POSIX guarantees.
struct FdGuard {
    int fd = -1;
    ~FdGuard() {
        if (fd >= 0) ::close(fd);
    }
};

[[noreturn]] void fail_io(const std::string &path, const char *what, int err) {
    fail(VT_ERR_IO, "%s: %s: %s", path.c_str(), what, std::strerror(err));
}

// Reads the whole file into buf; short reads and EINTR are retried.
void read_all(int fd, const std::string &path, uint8_t *buf, size_t size) {
    size_t done = 0;
    while (done < size) {
        ssize_t n = ::read(fd, buf + done, size - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) fail_io(path, "read failed", errno);
        if (n == 0) fail(VT_ERR_IO, "%s: file shrank while reading (%zu of %zu bytes)", path.c_str(), done, size);
        done += (size_t)n;
    }
}

} // namespace

std::unique_ptr<MappedFile> MappedFile::open(const std::string &path, bool use_mmap) {
    try {
        FdGuard g;
        g.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (g.fd < 0) fail_io(path, "cannot open", errno);

        struct stat st {};
        if (::fstat(g.fd, &st) != 0) fail_io(path, "cannot stat", errno);
        if (S_ISDIR(st.st_mode)) fail_io(path, "not a regular file", EISDIR);
        if (!S_ISREG(st.st_mode)) fail(VT_ERR_IO, "%s: not a regular file", path.c_str());

        std::unique_ptr<MappedFile> f(new MappedFile());
        f->path_ = path;
        f->size_ = (size_t)st.st_size;
        // An empty file maps to no bytes (mmap rejects length 0); the format
        // parser then reports what the file lacks.
        if (f->size_ == 0) return f;
        if (use_mmap) {
            void *p = ::mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, g.fd, 0);
            if (p == MAP_FAILED) fail_io(path, "mmap failed", errno);
            f->data_ = static_cast<const uint8_t *>(p);
            f->mapped_ = true;
        } else {
            uint8_t *buf = new uint8_t[f->size_];
            f->data_ = buf;  // owned from here on: the destructor frees it
            read_all(g.fd, path, buf, f->size_);
        }
        return f;
    } catch (const std::bad_alloc &) {
        fail(VT_ERR_OUT_OF_MEMORY, "%s: out of memory reading the file", path.c_str());
    }
}

MappedFile::~MappedFile() {
    if (!data_) return;
    if (mapped_)
        ::munmap(const_cast<uint8_t *>(data_), size_);
    else
        delete[] data_;
}

void MappedFile::release(const void *p, size_t n) const {
    if (!mapped_ || n == 0) return;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t begin = ((uintptr_t)p + page - 1) & ~(page - 1), end = ((uintptr_t)p + n) & ~(page - 1);
    if (begin < end && begin >= (uintptr_t)data_ && end <= (uintptr_t)data_ + size_)
        ::madvise((void *)begin, end - begin, MADV_DONTNEED);  // a private read-only file mapping: pages re-read on access
}

} // namespace vt
