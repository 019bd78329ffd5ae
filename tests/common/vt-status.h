// Catch2 checks of vt_status results, for C++ tests of the C ABI: the failing
// call, its status name and vt_last_error() in the message.
#pragma once

#include <catch2/catch.hpp>

#include <string>

#include "vt/vt.h"

namespace vt::test {

inline std::string status_msg(vt_status st) { return std::string(vt_status_str(st)) + ": " + vt_last_error(); }

} // namespace vt::test

#define VT_REQUIRE_OK(expr)                                                                                          \
    do {                                                                                                             \
        vt_status st_ = (expr);                                                                                      \
        INFO(#expr << " -> " << vt::test::status_msg(st_));                                                          \
        REQUIRE(st_ == VT_OK);                                                                                       \
    } while (0)
