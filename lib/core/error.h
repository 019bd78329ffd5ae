// Internal error type. Code under lib/ reports failures by throwing vt::Error;
// lib/api catches everything at the C boundary and turns it into a vt_status
// plus the thread's last-error message.
#pragma once

#include <stdexcept>
#include <string>

#include "vt/vt_common.h"

namespace vt {

class Error : public std::runtime_error {
public:
    Error(vt_status status, const std::string &msg) : std::runtime_error(msg), status_(status) {}
    vt_status status() const { return status_; }

private:
    vt_status status_;
};

// printf-style message builder for errors and logs.
std::string strprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

[[noreturn]] void fail(vt_status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

} // namespace vt
