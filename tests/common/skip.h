// Catch2 v2 has no SKIP. A case that cannot run here (its data or model is
// absent) says so with VT_SKIP, which warns and leaves the case; the test
// binary's main (catch-main.cpp) then exits 77, meson's "skipped", when
// nothing failed. So a run without the data is a skip, never a pass, and
// CI (.ci/run) sees it.
#pragma once

#include <catch2/catch.hpp>

namespace vt::test {
void note_skip();  // catch-main.cpp
} // namespace vt::test

// Counts a skip and warns without leaving: for a loop that skips one of
// its items (then `continue`), or a helper that returns "no data".
#define VT_NOTE_SKIP(msg)                \
    do {                                 \
        ::vt::test::note_skip();         \
        WARN("SKIPPED: " << msg);        \
    } while (0)

#define VT_SKIP(msg)                     \
    do {                                 \
        VT_NOTE_SKIP(msg);               \
        return;                          \
    } while (0)
