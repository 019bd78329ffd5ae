// libFuzzer target: the harmony parser (lib/tokenizer/harmony.cpp) over any
// bytes. The input is read whole and, from the same bytes, in pieces whose
// lengths the input's first bytes choose; both must give the same split,
// and the streamed deltas must add up to it (the parser's contract), with
// no crash, no sanitizer finding and bounded work. The JSON writers run on
// the results too (invalid UTF-8 becomes U+FFFD there).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/harmony.h"

using vt::tok::HarmonyDelta;
using vt::tok::HarmonyParser;
using vt::tok::HarmonyResult;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 1 << 16) return 0;
    const std::string_view all(reinterpret_cast<const char *>(data), size);
    const HarmonyResult whole = vt::tok::parse_harmony(all);
    (void)vt::tok::harmony_result_to_json(whole);

    HarmonyParser p;
    std::vector<HarmonyDelta> deltas;
    size_t at = 0, k = 0;
    while (at < size) {
        const size_t n = 1 + data[k++ % size] % 16;
        p.push(all.substr(at, n), deltas);
        at += n;
    }
    p.finish(deltas);
    (void)vt::tok::harmony_deltas_to_json(deltas);

    std::string content, reasoning;
    std::vector<vt::tok::ToolCall> calls;
    for (const HarmonyDelta &d : deltas) {
        switch (d.kind) {
        case HarmonyDelta::Kind::content: content += d.text; break;
        case HarmonyDelta::Kind::reasoning: reasoning += d.text; break;
        case HarmonyDelta::Kind::call_begin:
            if (d.call != (int)calls.size()) std::abort();
            calls.push_back({d.text, ""});
            break;
        case HarmonyDelta::Kind::call_arguments:
            if (calls.empty() || d.call != (int)calls.size() - 1) std::abort();
            calls.back().arguments += d.text;
            break;
        }
    }
    const HarmonyResult &r = p.result();
    if (r.content != whole.content || r.reasoning != whole.reasoning || r.calls.size() != whole.calls.size())
        std::abort();
    if (content != whole.content.value_or("") || reasoning != whole.reasoning.value_or("")) std::abort();
    for (size_t i = 0; i < calls.size(); ++i)
        if (calls[i].name != whole.calls[i].name || calls[i].arguments != whole.calls[i].arguments ||
            r.calls[i].arguments != whole.calls[i].arguments)
            std::abort();
    return 0;
}
