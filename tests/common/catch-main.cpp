// The main of the Catch2 test binaries: Catch2's own, except that a run in
// which a case skipped (VT_SKIP, skip.h) and none failed exits 77.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <atomic>

#include "skip.h"

namespace vt::test {
namespace {
std::atomic<int> g_skips{0};
} // namespace
void note_skip() { g_skips.fetch_add(1); }
} // namespace vt::test

int main(int argc, char **argv) {
    const int rc = Catch::Session().run(argc, argv);
    return rc == 0 && vt::test::g_skips.load() > 0 ? 77 : rc;
}
