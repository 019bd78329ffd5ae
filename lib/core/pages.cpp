#include "core/pages.h"

#include <cstdlib>
#include <cstring>

#include <sys/mman.h>
#include <unistd.h>

namespace vt {

namespace {

constexpr size_t kHugePage = (size_t)2 << 20;

bool huge_pages_wanted() {
    const char *e = std::getenv("VT_HUGE_PAGES");
    return !e || std::strcmp(e, "0") != 0;
}

} // namespace

std::unique_ptr<PageBuffer> PageBuffer::allocate(size_t bytes) {
    const size_t page = (size_t)::sysconf(_SC_PAGESIZE);
    if (bytes == 0) bytes = 1;
    if (bytes > SIZE_MAX - kHugePage - page) return nullptr;
    const size_t len = (bytes + page - 1) / page * page;
    // Map a huge page more than asked and unmap what lies outside the
    // aligned range: mmap itself aligns to a page only.
    const size_t span = len + kHugePage - page;
    void *m = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return nullptr;
    const uintptr_t begin = (uintptr_t)m, aligned = (begin + kHugePage - 1) / kHugePage * kHugePage;
    if (aligned > begin) ::munmap(m, aligned - begin);
    if (begin + span > aligned + len) ::munmap((void *)(aligned + len), begin + span - aligned - len);
#ifdef MADV_HUGEPAGE
    if (huge_pages_wanted()) ::madvise((void *)aligned, len, MADV_HUGEPAGE);  // advice: failure changes nothing
#endif
    std::unique_ptr<PageBuffer> b(new (std::nothrow) PageBuffer((uint8_t *)aligned, len));
    if (!b) ::munmap((void *)aligned, len);
    return b;
}

PageBuffer::~PageBuffer() { ::munmap(data_, size_); }

} // namespace vt
