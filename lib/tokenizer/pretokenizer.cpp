#include "tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <array>
#include <initializer_list>
#include <utility>

#include "core/error.h"
#include "tokenizer/utf8.h"

namespace vt::tok {

// ---------------------------------------------------------------------------
// Pattern sets. They are the split regexes of the models' tokenizer.json
// files, as llama.cpp's llama-vocab.cpp groups them per tokenizer.ggml.pre
// name. PCRE2 has Unicode properties and look-around, so the original
// expressions are used where llama.cpp needed std::regex workarounds; the
// contraction group is spelled with explicit case classes ('[sS]) rather than
// (?i:...) because PCRE2's caseless matching would also fold U+017F into 's'.
// ---------------------------------------------------------------------------
namespace {

// The GPT-2 word pattern; many families reuse it after splitting digits.
constexpr const char *kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";

constexpr const char *kContractions =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))";

// Llama 3 / tiktoken cl100k style: digits in runs of at most 3.
const std::string kLlama3 = std::string(kContractions) +
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Qwen 2: as Llama 3 but single digits.
const std::string kQwen2 = std::string(kContractions) +
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Hand-listed letter ranges of DeepSeek LLM's tokenizer (cased scripts only).
constexpr const char *kDeepseekLetters =
    R"(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293})"
    R"(\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A})"
    R"(\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556})"
    R"(\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF})"
    R"(\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D})"
    R"(\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D}\x{1F5F}-\x{1F7D})"
    R"(\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3})"
    R"(\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107})"
    R"(\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D})"
    R"(\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184})"
    R"(\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4}\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D})"
    R"(\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF})"
    R"(\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F})"
    R"(\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2})"
    R"(\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+)";

constexpr const char *kCjkHangul = R"([\x{4E00}-\x{9FA5}\x{800}-\x{4E00}\x{AC00}-\x{D7FF}]+)";

// Mistral Tekken / GPT-4o (o200k): case-aware words.
constexpr const char *kTekken =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)"
    R"(|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

const std::string kGpt4o =
    std::string(R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)") +
    kContractions + "?" +
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)" +
    kContractions + "?" + R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

enum class Family {
    Default, Gpt2, Llama3, Llama3Regex, DeepseekLlm, DeepseekCoder, Deepseek3, Falcon,
    Starcoder, Qwen2, Poro, Viking, Tekken, Chameleon, Gpt4o, SeedCoder,
};

struct NameEntry {
    const char *name;
    Family family;
};

// tokenizer.ggml.pre names, as llama.cpp maps them.
constexpr NameEntry kNames[] = {
    {"default", Family::Default},
    {"llama3", Family::Llama3}, {"llama-v3", Family::Llama3}, {"llama-bpe", Family::Llama3},
    {"falcon3", Family::Llama3}, {"falcon-h1", Family::Llama3}, {"pixtral", Family::Llama3},
    {"dbrx", Family::Llama3Regex}, {"smaug-bpe", Family::Llama3Regex},
    {"chatglm-bpe", Family::Llama3Regex},
    {"deepseek-llm", Family::DeepseekLlm},
    {"deepseek-coder", Family::DeepseekCoder},
    {"deepseek-v3", Family::Deepseek3},
    {"falcon", Family::Falcon},
    {"gpt-2", Family::Gpt2}, {"gpt2", Family::Gpt2}, {"mpt", Family::Gpt2}, {"olmo", Family::Gpt2},
    {"phi-2", Family::Gpt2}, {"jais", Family::Gpt2}, {"roberta-bpe", Family::Gpt2},
    {"jina-es", Family::Gpt2}, {"jina-de", Family::Gpt2}, {"jina-v1-en", Family::Gpt2},
    {"jina-v2-es", Family::Gpt2}, {"jina-v2-de", Family::Gpt2}, {"jina-v2-code", Family::Gpt2},
    {"gigachat", Family::Gpt2}, {"trillion", Family::Gpt2}, {"exaone4", Family::Gpt2},
    {"a.x-4.0", Family::Gpt2}, {"mellum", Family::Gpt2}, {"modern-bert", Family::Gpt2},
    {"starcoder", Family::Starcoder}, {"refact", Family::Starcoder},
    {"command-r", Family::Starcoder}, {"smollm", Family::Starcoder},
    {"codeshell", Family::Starcoder}, {"exaone", Family::Starcoder},
    {"minerva-7b", Family::Starcoder},
    {"qwen2", Family::Qwen2}, {"deepseek-r1-qwen", Family::Qwen2}, {"stablelm2", Family::Qwen2},
    {"megrez", Family::Qwen2}, {"hunyuan", Family::Qwen2},
    {"poro-chat", Family::Poro}, {"bloom", Family::Poro}, {"gpt3-finnish", Family::Poro},
    {"viking", Family::Viking},
    {"tekken", Family::Tekken},
    {"chameleon", Family::Chameleon},
    {"gpt-4o", Family::Gpt4o}, {"llama4", Family::Gpt4o},
    {"seed-coder", Family::SeedCoder},
};

PreTokenizerSpec make_spec(Family f) {
    PreTokenizerSpec s;
    switch (f) {
    case Family::Default:
        s.patterns = {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"};
        break;
    case Family::Gpt2:
        s.patterns = {kGpt2};
        break;
    case Family::Llama3:
        s.patterns = {kLlama3};
        s.ignore_merges = true;
        s.add_bos_default = 1;
        break;
    case Family::Llama3Regex:
        s.patterns = {kLlama3};
        break;
    case Family::DeepseekLlm:
        s.patterns = {R"([\r\n])", kDeepseekLetters,
                      R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)",
                      R"(\s+$)", kCjkHangul, R"(\p{N}+)"};
        break;
    case Family::DeepseekCoder:
        s.patterns = {R"([\r\n])", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kCjkHangul, R"(\p{N})"};
        break;
    case Family::Deepseek3:
        s.patterns = {R"(\p{N}{1,3})", R"([\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)",
                      R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+)"
                      R"(|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};
        break;
    case Family::Falcon:
        s.patterns = {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"};
        break;
    case Family::Starcoder:
        s.patterns = {R"(\p{N})", kGpt2};
        break;
    case Family::Qwen2:
        s.patterns = {kQwen2};
        break;
    case Family::Poro:
        s.patterns = {R"( ?[^(\s|.,!?…。，、।۔،)]+)"};
        break;
    case Family::Viking:
        s.patterns = {R"( ?[^(\s|.,!?…。，、।۔،)]+)", R"(\p{N})"};
        break;
    case Family::Tekken:
        s.patterns = {kTekken};
        s.ignore_merges = true;
        s.add_bos_default = 1;
        break;
    case Family::Chameleon:
        s.patterns = {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z",
                      "([\\t\\n]|    |  )", R"(\p{N})", R"([\p{P}!-/:-@\[-`{-~])", kGpt2};
        s.add_bos_default = 1;
        break;
    case Family::Gpt4o:
        s.patterns = {kGpt4o};
        break;
    case Family::SeedCoder:
        s.patterns = {std::string(kContractions) +
                      R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)"};
        break;
    }
    return s;
}

} // namespace

bool lookup_pre_tokenizer(std::string_view name, PreTokenizerSpec &spec) {
    if (name.empty()) name = "default";  // llama.cpp warns and falls back too
    for (const auto &e : kNames) {
        if (name == e.name) {
            spec = make_spec(e.family);
            return true;
        }
    }
    return false;
}

// ---------------------------------------------------------------------------
// PCRE2 matching
// ---------------------------------------------------------------------------

struct PreTokenizer::Code {
    pcre2_code *code = nullptr;
    ~Code() { pcre2_code_free(code); }
};

namespace {

// Per-thread match state: one match-data block (only the whole-match pair is
// read) and a JIT stack big enough for `\s+(?!\S)` over long runs of
// whitespace. Reused across calls, so a tokenize call allocates nothing here.
struct ThreadMatchState {
    pcre2_match_data *md = nullptr;
    pcre2_jit_stack *jit_stack = nullptr;
    pcre2_match_context *mctx = nullptr;

    ThreadMatchState() {
        md = pcre2_match_data_create(1, nullptr);
        jit_stack = pcre2_jit_stack_create(64 * 1024, 16 * 1024 * 1024, nullptr);
        mctx = pcre2_match_context_create(nullptr);
        if (!md || !jit_stack || !mctx) fail(VT_ERR_OUT_OF_MEMORY, "PCRE2 match state allocation failed");
        pcre2_jit_stack_assign(mctx, nullptr, jit_stack);
    }
    ~ThreadMatchState() {
        pcre2_match_context_free(mctx);
        pcre2_jit_stack_free(jit_stack);
        pcre2_match_data_free(md);
    }
};

ThreadMatchState &thread_state() {
    thread_local ThreadMatchState st;
    return st;
}

} // namespace

PreTokenizer::PreTokenizer(const std::vector<std::string> &patterns) {
    for (const auto &p : patterns) {
        int err = 0;
        PCRE2_SIZE off = 0;
        // DOLLAR_ENDONLY: `$` means the end of the piece, as in ECMAScript and
        // Rust regex, not "before a final newline".
        pcre2_code *c = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(p.data()), p.size(),
                                      PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK | PCRE2_DOLLAR_ENDONLY,
                                      &err, &off, nullptr);
        if (!c) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(err, msg, sizeof msg);
            fail(VT_ERR_FORMAT, "pre-tokenizer pattern does not compile at offset %zu: %s",
                 static_cast<size_t>(off), reinterpret_cast<const char *>(msg));
        }
        // JIT is an optimisation: when unavailable the interpreter runs.
        pcre2_jit_compile(c, PCRE2_JIT_COMPLETE);
        auto code = std::make_unique<Code>();
        code->code = c;
        codes_.push_back(std::move(code));
    }
}

PreTokenizer::~PreTokenizer() = default;

void PreTokenizer::split(std::string_view text, std::vector<Span> &out) const {
    if (text.empty()) return;
    std::vector<Span> cur{{0, static_cast<uint32_t>(text.size())}};
    std::vector<Span> next;
    ThreadMatchState &st = thread_state();

    for (const auto &code : codes_) {
        next.clear();
        next.reserve(cur.size() * 2);
        for (const Span &piece : cur) {
            const auto *subject = reinterpret_cast<PCRE2_SPTR>(text.data() + piece.begin);
            size_t pos = 0;   // search start within the piece
            size_t last = 0;  // end of what has been emitted
            while (pos < piece.len) {
                const int rc = pcre2_match(code->code, subject, piece.len, pos, PCRE2_NO_UTF_CHECK,
                                           st.md, st.mctx);
                if (rc == PCRE2_ERROR_NOMATCH) break;
                if (rc < 0) {
                    PCRE2_UCHAR msg[256];
                    pcre2_get_error_message(rc, msg, sizeof msg);
                    fail(VT_ERR_INTERNAL, "pre-tokenizer match failed: %s",
                         reinterpret_cast<const char *>(msg));
                }
                const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(st.md);
                const size_t ms = ov[0], me = ov[1];
                if (me == ms) {
                    // An empty match splits nothing; step over one character.
                    pos = ms + utf8_len(static_cast<uint8_t>(text[piece.begin + ms]));
                    continue;
                }
                if (ms > last) next.push_back({piece.begin + uint32_t(last), uint32_t(ms - last)});
                next.push_back({piece.begin + uint32_t(ms), uint32_t(me - ms)});
                last = pos = me;
            }
            if (last < piece.len) next.push_back({piece.begin + uint32_t(last), uint32_t(piece.len - last)});
        }
        cur.swap(next);
    }
    out.insert(out.end(), cur.begin(), cur.end());
}

} // namespace vt::tok
