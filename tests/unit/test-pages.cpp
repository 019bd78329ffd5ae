// PageBuffer: 2 MiB-aligned, whole pages, zero-filled and writable to the
// end, and (where Linux has transparent huge pages) advised MADV_HUGEPAGE
// unless $VT_HUGE_PAGES=0.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

#include "core/pages.h"

using namespace vt;

namespace {

// The VmFlags line of the mapping that holds p in /proc/self/smaps, or ""
// where there is no such file (not Linux).
std::string vm_flags_of(const void *p) {
    std::ifstream smaps("/proc/self/smaps");
    std::string line;
    bool inside = false;
    while (std::getline(smaps, line)) {
        unsigned long lo = 0, hi = 0;
        char dash = 0;
        std::istringstream head(line);
        if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
            inside = (uintptr_t)p >= lo && (uintptr_t)p < hi;
        } else if (inside && line.rfind("VmFlags:", 0) == 0) {
            return line;
        }
    }
    return "";
}

bool kernel_has_thp() {
    std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
    return f.good();
}

} // namespace

TEST_CASE("pages: a buffer is 2 MiB-aligned, whole pages, zeroed and writable", "[pages]") {
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    for (size_t bytes : {(size_t)1, (size_t)4097, (size_t)(2 << 20) + 3, (size_t)(5 << 20)}) {
        CAPTURE(bytes);
        auto b = PageBuffer::allocate(bytes);
        REQUIRE(b);
        CHECK((uintptr_t)b->data() % ((size_t)2 << 20) == 0);
        CHECK(b->size() >= bytes);
        CHECK(b->size() % page == 0);
        CHECK(b->size() < bytes + page);
        size_t nonzero = 0;
        for (size_t i = 0; i < b->size(); ++i) nonzero += b->data()[i] != 0;
        CHECK(nonzero == 0);
        for (size_t i = 0; i < b->size(); ++i) b->data()[i] = (uint8_t)i;
        CHECK(b->data()[b->size() - 1] == (uint8_t)(b->size() - 1));
    }
}

TEST_CASE("pages: an impossible size fails with nullptr", "[pages][errors]") {
    CHECK_FALSE(PageBuffer::allocate(SIZE_MAX));
    CHECK_FALSE(PageBuffer::allocate(SIZE_MAX / 2));  // more than any address space
}

TEST_CASE("pages: the range is advised to huge pages unless VT_HUGE_PAGES=0", "[pages]") {
    if (!kernel_has_thp()) {
        WARN("skipped: this kernel has no transparent huge pages");
        return;
    }
    ::unsetenv("VT_HUGE_PAGES");  // the default, whatever the caller's environment says
    auto advised = PageBuffer::allocate((size_t)4 << 20);
    REQUIRE(advised);
    const std::string flags = vm_flags_of(advised->data());
    REQUIRE(!flags.empty());
    CHECK(flags.find(" hg") != std::string::npos);

    ::setenv("VT_HUGE_PAGES", "0", 1);
    auto plain = PageBuffer::allocate((size_t)4 << 20);
    ::unsetenv("VT_HUGE_PAGES");
    REQUIRE(plain);
    const std::string plain_flags = vm_flags_of(plain->data());
    REQUIRE(!plain_flags.empty());
    CHECK(plain_flags.find(" hg") == std::string::npos);
}
