// Anonymous memory for weights written at load (the CPU backend's _X16
// copies, quantize at load's output) and the CPU's large buffers (the KV
// pool), offered to transparent huge pages. Mapped MAP_NORESERVE: a page
// costs nothing until first written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace vt {

// A decode step streams every weight once, a TLB miss per 4 KiB page. On 2
// MiB pages, 1B decode on one thread (AVX-512, alternating runs): Q4_0 30-31
// -> 36-38 tok/s, Q8_0 and BF16 +4%, Q4_K the same; AVX2 Q4_0 on 2 threads
// 40 -> 42-47. The start is aligned to 2 MiB and the range advised
// MADV_HUGEPAGE (Linux's "madvise" THP mode, Debian's default, gives huge
// pages only to such ranges); where the kernel has none to give, the pages
// are ordinary ones. $VT_HUGE_PAGES=0 leaves out the advice (to measure it).
class PageBuffer {
public:
    // nullptr when the memory cannot be had.
    static std::unique_ptr<PageBuffer> allocate(size_t bytes);
    ~PageBuffer();
    PageBuffer(const PageBuffer &) = delete;
    PageBuffer &operator=(const PageBuffer &) = delete;

    uint8_t *data() const { return data_; }
    size_t size() const { return size_; }

private:
    PageBuffer(uint8_t *data, size_t size) : data_(data), size_(size) {}
    uint8_t *data_;
    size_t size_;  // mapped bytes, a whole number of pages
};

// Memory this process can still take without swapping or being killed:
// the kernel's MemAvailable, or less where its cgroup (v2 memory.max, v1
// memory.limit_in_bytes) leaves less above its current usage. 0 when none
// of it can be read.
uint64_t available_memory_bytes();

} // namespace vt
