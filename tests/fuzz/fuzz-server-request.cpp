// libFuzzer target for vt-server's request validation (examples/server/
// server-request.cpp), the code that faces every HTTP client: a body is
// parsed as JSON (as the route does, without exceptions), then checked as a
// /v1/chat/completions and as a /v1/completions request; what passes builds
// its sampler chain through the public ABI. An ApiError is the accepted way
// to refuse; any other exception (a nlohmann::json one included), crash,
// hang, sanitizer report or leak is a bug. Build and run: see meson.build.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "server-errors.h"
#include "server-request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const nlohmann::json body = nlohmann::json::parse(data, data + size, nullptr, false);
    if (body.is_discarded()) return 0;
    vts::Guards guards;
    guards.max_prompt_chars = 4096;
    guards.max_new_tokens = 256;
    for (bool chat : {true, false}) {
        try {
            const vts::GenRequest r = vts::parse_request(body, chat, guards, /*n_vocab=*/49152);
            for (const auto &ids : r.prompt_ids)
                for (vt_token id : ids)
                    if (id < 0 || id >= 49152) __builtin_trap();  // ids must be checked against the vocabulary
            if (r.n < 1 || (r.max_tokens && *r.max_tokens > guards.max_new_tokens)) __builtin_trap();
            vt_sampler_destroy(vts::make_sampler(r.sampling, r.sampling.seed.value_or(0)));
        } catch (const vts::ApiError &) {
        }
    }
    return 0;
}
