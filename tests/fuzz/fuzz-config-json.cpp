// libFuzzer target for the config.json of a Hugging Face model folder
// (model/hf-folder.cpp: the config read as GGUF keys, the architecture
// mapping, tensor names and shapes), then the architecture's own load
// (hyper-parameters, weight shapes) through vt::Model::load.
//
// The input is written as config.json into a scratch folder beside the
// weights and tokenizer of one of tests/models/tiny/*: the one whose
// config.json shares the most top-level values with the input, so a seed
// (a real tiny config) loads, and its mutants go as deep as they stay
// consistent. Only hf-folder.cpp, hf-experts.cpp and json-file.cpp are
// instrumented (coverage and ASan); the rest of the loader is libvt's own
// code, where a crash still stops the fuzzer. A vt::Error is the accepted
// way to refuse; any other exception (nlohmann's included), crash,
// sanitizer report or leak is a bug. Build and run: see meson.build.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/log.h"
#include "model/model.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

struct Folder {
    fs::path path;
    json config;
};

struct State {
    std::vector<Folder> folders;
    fs::path scratch;
    const Folder *linked = nullptr;

    State() {
        for (const auto &e : fs::directory_iterator(VT_TINY_MODELS)) {
            if (!e.is_directory() || !fs::exists(e.path() / "config.json") ||
                !fs::exists(e.path() / "model.safetensors"))
                continue;
            std::ifstream in(e.path() / "config.json");
            folders.push_back({e.path(), json::parse(in)});
        }
        if (folders.empty()) {
            std::fprintf(stderr, "fuzz-config-json: no tiny model folders in %s\n", VT_TINY_MODELS);
            std::abort();
        }
        char tmpl[] = "/tmp/vt-fuzz-config-XXXXXX";
        if (!mkdtemp(tmpl)) std::abort();
        scratch = tmpl;
    }
    ~State() {
        std::error_code ec;
        fs::remove_all(scratch, ec);
    }

    // The folder whose config.json agrees with the most keys of cfg.
    const Folder &closest(const json &cfg) const {
        const Folder *best = &folders[0];
        int best_score = -1;
        for (const Folder &f : folders) {
            int score = 0;
            if (cfg.is_object())
                for (auto it = cfg.begin(); it != cfg.end(); ++it)
                    if (auto o = f.config.find(it.key()); o != f.config.end() && *o == *it) ++score;
            if (score > best_score) best = &f, best_score = score;
        }
        return *best;
    }

    void link(const Folder &f) {
        if (linked == &f) return;
        for (const char *name : {"model.safetensors", "tokenizer.json", "tokenizer_config.json",
                                 "generation_config.json"}) {
            std::error_code ec;
            fs::remove(scratch / name, ec);
            if (fs::exists(f.path / name)) fs::create_symlink(f.path / name, scratch / name);
        }
        linked = &f;
    }
};

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    vt::log_set(nullptr, nullptr, VT_LOG_LEVEL_NONE);  // refusals are the normal case here
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static State st;
    static const bool verbose = std::getenv("FUZZ_CONFIG_VERBOSE") != nullptr;  // to see what seeds reach
    st.link(st.closest(json::parse(data, data + size, nullptr, false)));
    {
        std::ofstream out(st.scratch / "config.json", std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char *>(data), (std::streamsize)size);
    }
    try {
        auto m = vt::Model::load(st.scratch.string(), /*use_mmap=*/true, {});
        if (verbose) std::fprintf(stderr, "loaded %s (%s)\n", m->arch_name().c_str(), st.linked->path.c_str());
    } catch (const vt::Error &e) {
        if (verbose) std::fprintf(stderr, "refused: %s\n", e.what());
    }
    return 0;
}
