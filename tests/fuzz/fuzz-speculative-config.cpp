// libFuzzer target: --speculative-config (examples/common/speculative-config.h),
// the JSON the example tools read into vt_context_params. Any bytes must give
// either an error message and untouched parameters, or n-gram, suffix or
// draft-model parameters with a draft length (and a path for the last);
// never a crash, an exception or a sanitizer finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "speculative-config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 1 << 14) return 0;
    const std::string text(reinterpret_cast<const char *>(data), size);
    vt_context_params p, before;
    std::memset(&p, 0, sizeof p);
    std::memcpy(&before, &p, sizeof p);
    std::string draft = "untouched";
    const std::string err = vt_examples::parse_speculative_config(text, p, draft);
    if (err.empty()) {
        if ((p.spec_method != VT_SPEC_NGRAM && p.spec_method != VT_SPEC_SUFFIX &&
             p.spec_method != VT_SPEC_DRAFT_MODEL && p.spec_method != VT_SPEC_MTP) ||
            p.num_speculative_tokens == 0)
            std::abort();
        if ((p.spec_method == VT_SPEC_DRAFT_MODEL) == draft.empty()) std::abort();  // a path with the method only
    } else if (std::memcmp(&p, &before, sizeof p) != 0 || draft != "untouched") {
        std::abort();  // a refused config leaves the parameters as they were
    }
    return 0;
}
