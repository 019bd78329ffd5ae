// Editing copies of the tiny Hugging Face folders (tests/models/tiny/<name>/)
// for the loader's tests: a scratch copy removed at scope exit, its
// safetensors file as (name -> dtype, shape, bytes) to rewrite whole, and a
// load that returns the error instead of throwing it.
#pragma once

#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "model/model.h"

namespace vt::test {

inline std::filesystem::path source_root() {
    const char *root = std::getenv("VT_SOURCE_ROOT");
    return std::filesystem::path(root ? root : ".");
}

inline std::string read_file(const std::filesystem::path &p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

inline void write_file(const std::filesystem::path &p, const std::string &s) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << s;
}

struct StFile {
    struct T {
        std::string dtype;
        std::vector<uint64_t> shape;
        std::string bytes;
    };
    std::map<std::string, T> t;
    explicit StFile(const std::filesystem::path &p) {
        using json = nlohmann::json;
        const std::string b = read_file(p);
        uint64_t n = 0;
        for (int i = 7; i >= 0; --i) n = (n << 8) | (uint8_t)b[(size_t)i];
        const json h = json::parse(b.substr(8, n));
        for (const auto &[name, v] : h.items()) {
            if (name == "__metadata__") continue;
            const uint64_t b0 = v["data_offsets"][0], b1 = v["data_offsets"][1];
            t[name] = {v["dtype"], v["shape"].get<std::vector<uint64_t>>(), b.substr(8 + n + b0, b1 - b0)};
        }
    }
    void save(const std::filesystem::path &p) const {
        using json = nlohmann::json;
        json h = json::object();
        std::string data;
        for (const auto &[name, v] : t) {
            h[name] = {{"dtype", v.dtype}, {"shape", v.shape}, {"data_offsets", {data.size(), data.size() + v.bytes.size()}}};
            data += v.bytes;
        }
        std::string hs = h.dump();
        std::string out(8, '\0');
        for (int i = 0; i < 8; ++i) out[(size_t)i] = (char)((hs.size() >> (8 * i)) & 0xff);
        write_file(p, out + hs + data);
    }
};

// A copy of tests/models/tiny/<name>, removed at scope exit.
struct Scratch {
    std::filesystem::path dir;
    explicit Scratch(const char *name) {
        namespace fs = std::filesystem;
        static int n = 0;
        dir = fs::temp_directory_path() / ("vt-scratch-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
        fs::remove_all(dir);
        fs::copy(source_root() / "tests" / "models" / "tiny" / name, dir, fs::copy_options::recursive);
    }
    ~Scratch() {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
    nlohmann::json config() const { return nlohmann::json::parse(read_file(dir / "config.json")); }
    void set_config(const nlohmann::json &c) const { write_file(dir / "config.json", c.dump(2)); }
};

inline std::pair<vt_status, std::string> load_status(const std::filesystem::path &dir) {
    try {
        Model::load(dir.string(), true, nullptr);
        return {VT_OK, ""};
    } catch (const Error &e) {
        return {e.status(), e.what()};
    }
}

} // namespace vt::test
