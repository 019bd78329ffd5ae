// libFuzzer target for tokenizer.json: the document is parsed, every stage
// built by its factory, then the text after the marker line is encoded
// (with and without special parsing and post-processing) and the ids
// decoded. A vt::Error anywhere is an accepted outcome; any other exception
// (a nlohmann::json one included), crash, hang, sanitizer report or leak is a
// bug. Build and run: see tests/fuzz/meson.build.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/pipeline-tokenizer.h"

namespace {
constexpr std::string_view kMarker = "\n#TEXT\n";
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string_view in(reinterpret_cast<const char *>(data), size);
    const size_t cut = in.find(kMarker);
    const std::string_view doc = in.substr(0, cut);
    const std::string_view text = cut == std::string_view::npos ? std::string_view() : in.substr(cut + kMarker.size());

    nlohmann::json j = nlohmann::json::parse(doc.begin(), doc.end(), nullptr, false);
    if (j.is_discarded()) return 0;
    try {
        const vt::tok::PipelineTokenizer tok(j, nullptr);
        for (int flags = 0; flags < 4; ++flags) {
            const std::vector<int32_t> ids = tok.encode(text, flags & 1, flags & 2);
            const std::string back = tok.decode(ids.data(), ids.size(), flags & 1);
            for (int32_t id : ids) {
                if (id < 0 || static_cast<uint32_t>(id) >= tok.n_vocab()) __builtin_trap();  // ids must be valid
            }
            volatile size_t keep = back.size();
            (void)keep;
        }
    } catch (const vt::Error &) {
    }
    return 0;
}
