// libFuzzer target for the SentencePiece .model converter and the protobuf
// reader under it. Any vt::Error is an accepted outcome; any other exception
// (a nlohmann::json one included), crash, sanitizer report or leak is a bug.
// Build and run: see tests/fuzz/meson.build.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/convert.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    try {
        const nlohmann::json j =
            vt::tok::convert_spm_model(std::string_view(reinterpret_cast<const char *>(data), size));
        // Serializing checks that every string put in the document is valid
        // UTF-8 (dump throws otherwise) and that no NaN score slipped through.
        volatile size_t keep = j.dump().size();
        (void)keep;
    } catch (const vt::Error &) {
    }
    return 0;
}
