#include "core/pages.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <algorithm>
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
    void *m = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
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

namespace {
// A number from a one-line file ("max" and unreadable: none).
bool read_number(const std::string &path, uint64_t &out) {
    std::ifstream in(path);
    std::string s;
    if (!(in >> s) || s == "max") return false;
    char *end = nullptr;
    const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
    if (!end || *end) return false;
    out = v;
    return true;
}

// Room left under the process's cgroup limit, or UINT64_MAX.
uint64_t cgroup_room() {
    uint64_t room = UINT64_MAX;
    std::ifstream cg("/proc/self/cgroup");
    std::string line;
    while (std::getline(cg, line)) {
        // "0::/path" (v2) or "N:memory:/path" (v1).
        const size_t a = line.find(':'), b = line.find(':', a + 1);
        if (a == std::string::npos || b == std::string::npos) continue;
        const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
        uint64_t limit = 0, usage = 0;
        if (controllers.empty()) {
            if (read_number("/sys/fs/cgroup" + path + "/memory.max", limit) &&
                read_number("/sys/fs/cgroup" + path + "/memory.current", usage))
                room = std::min(room, limit > usage ? limit - usage : 0);
        } else if (controllers == "memory") {
            const std::string dir = "/sys/fs/cgroup/memory" + path;
            // v1 writes a huge page-rounded number for "no limit".
            if (read_number(dir + "/memory.limit_in_bytes", limit) && limit < (1ull << 60) &&
                read_number(dir + "/memory.usage_in_bytes", usage))
                room = std::min(room, limit > usage ? limit - usage : 0);
        }
    }
    return room;
}
} // namespace

uint64_t available_memory_bytes() {
    uint64_t avail = 0;
    if (FILE *f = std::fopen("/proc/meminfo", "r")) {
        char line[256];
        unsigned long long kb;
        while (std::fgets(line, sizeof line, f))
            if (std::sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
                avail = (uint64_t)kb * 1024;
                break;
            }
        std::fclose(f);
    }
    if (avail == 0) {
        long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        if (pages > 0 && page > 0) avail = (uint64_t)pages * (uint64_t)page;
    }
    const uint64_t room = cgroup_room();
    return room < avail || (avail == 0 && room != UINT64_MAX) ? room : avail;
}

} // namespace vt
