// A scratch file holding given bytes, removed at scope exit (Catch2 tests).
#pragma once

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "common/gguf-writer.h"

namespace vt::test {

struct TempFile {
    std::filesystem::path path;
    explicit TempFile(const std::vector<uint8_t> &bytes, const char *suffix = ".gguf") {
        static int counter = 0;
        path = std::filesystem::temp_directory_path() /
               ("vt-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + suffix);
        REQUIRE(write_file(path.string(), bytes));
    }
    ~TempFile() {
        std::error_code ec;
        std::filesystem::remove(path, ec);
    }
    TempFile(const TempFile &) = delete;
    TempFile &operator=(const TempFile &) = delete;
};

// A scratch directory, removed with what it holds at scope exit.
struct TempDir {
    TempDir() {
        static int counter = 0;
        path_ = std::filesystem::temp_directory_path() /
                ("vt-test-dir-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
        std::filesystem::create_directories(path_);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir &) = delete;
    TempDir &operator=(const TempDir &) = delete;
    const std::filesystem::path &path() const { return path_; }

private:
    std::filesystem::path path_;
};

} // namespace vt::test
