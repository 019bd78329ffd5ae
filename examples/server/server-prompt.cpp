#include "server-prompt.h"

#include <cstdio>
#include <cstring>

#include "server-errors.h"

namespace vts {

namespace {

std::string last_error(vt_status s) {
    const char *msg = vt_last_error();
    return msg && *msg ? msg : vt_status_str(s);
}

} // namespace

Prompter::Prompter(const vt_model *model, const std::string &template_source, bool parse_special_in_content)
    : model_(model), parse_special_in_content_(parse_special_in_content) {
    vt_model_tokenizer(model, &tok_);
    const vt_status s =
        vt_chat_template_create(template_source.empty() ? nullptr : template_source.c_str(), model, &tmpl_);
    if (s != VT_OK) {
        tmpl_ = nullptr;
        const std::string which = template_source.empty() ? "the model's chat template" : "the chat template";
        tmpl_error_ = s == VT_ERR_NOT_FOUND ? "the model has no chat template: use /v1/completions"
                                            : which + " cannot be used: " + last_error(s);
        if (template_source.empty()) std::fprintf(stderr, "vt-server: %s\n", tmpl_error_.c_str());
    } else {
        vt_chat_template_tool_call_format(tmpl_, &tool_format_);
    }
    if (tool_format_ == VT_TOOL_CALL_FORMAT_HARMONY)
        for (const char *end : {"<|return|>", "<|call|>"}) {
            vt_token t[2];
            size_t n = 0;
            if (vt_tokenize(tok_, end, std::strlen(end), VT_TOKENIZE_PARSE_SPECIAL, t, 2, &n) == VT_OK && n == 1)
                harmony_stops_.push_back(t[0]);
        }
    const vt_token bos = vt_token_bos(tok_);
    if (bos != VT_TOKEN_NULL) bos_text_ = piece(bos);
}

Prompter::~Prompter() { vt_chat_template_destroy(tmpl_); }

std::vector<vt_token> Prompter::tokenize(const std::string &text, uint32_t flags) const {
    std::vector<vt_token> out(text.size() / 2 + 16);
    size_t n = 0;
    vt_status s = vt_tokenize(tok_, text.data(), text.size(), flags, out.data(), out.size(), &n);
    if (s == VT_ERR_BUFFER_TOO_SMALL) {
        out.resize(n);
        s = vt_tokenize(tok_, text.data(), text.size(), flags, out.data(), out.size(), &n);
    }
    if (s != VT_OK) throw ApiError(400, "cannot tokenize the prompt: " + last_error(s));
    out.resize(n);
    return out;
}

std::vector<vt_token> Prompter::tokenize_text(const std::string &text) const {
    return tokenize(text, VT_TOKENIZE_ADD_SPECIAL | VT_TOKENIZE_PARSE_SPECIAL);
}

std::vector<vt_token> Prompter::tokenize_chat(const nlohmann::ordered_json &messages, const nlohmann::ordered_json &extra,
                                              bool add_generation_prompt) const {
    if (tmpl_ == nullptr) throw ApiError(400, tmpl_error_);
    const std::string msgs = dump_json(messages);
    std::string extra_text;
    vt_chat_params cp;
    vt_chat_params_init(&cp);
    cp.add_generation_prompt = add_generation_prompt;
    if (extra.is_object() && !extra.empty()) {
        extra_text = dump_json(extra);
        cp.extra_json = extra_text.c_str();
    }
    // ADD_SPECIAL adds no BOS to a prompt the template starts with one.
    uint32_t flags = VT_TOKENIZE_ADD_SPECIAL;
    if (parse_special_in_content_) flags |= VT_TOKENIZE_PARSE_SPECIAL;
    std::vector<vt_token> out(msgs.size() / 2 + 256);
    size_t n = 0;
    vt_status s = vt_chat_template_tokenize_json(tmpl_, tok_, msgs.c_str(), &cp, flags, out.data(), out.size(), &n);
    // A template may read the clock: its size can change between two calls.
    for (int tries = 0; s == VT_ERR_BUFFER_TOO_SMALL && tries < 3; ++tries) {
        out.resize(n + 64);
        s = vt_chat_template_tokenize_json(tmpl_, tok_, msgs.c_str(), &cp, flags, out.data(), out.size(), &n);
    }
    if (s == VT_ERR_INVALID_UTF8) throw ApiError(400, "cannot tokenize the prompt: " + last_error(s));
    if (s != VT_OK) throw ApiError(400, "the chat template refused the messages: " + last_error(s), "invalid_request_error", "messages");
    out.resize(n);
    return out;
}

std::string Prompter::piece(vt_token token) const {
    char buf[128];
    size_t n = 0;
    vt_status s = vt_token_to_piece(tok_, token, true, buf, sizeof buf, &n);
    if (s == VT_ERR_BUFFER_TOO_SMALL) {
        std::string big(n + 1, '\0');
        if (vt_token_to_piece(tok_, token, true, big.data(), big.size(), &n) != VT_OK) return {};
        big.resize(n);
        return big;
    }
    if (s != VT_OK) return {};
    return std::string(buf, n);
}

std::string Prompter::detokenize(const std::vector<vt_token> &tokens) const {
    std::string text(tokens.size() * 4 + 16, '\0');
    size_t n = 0;
    vt_status s = vt_detokenize(tok_, tokens.data(), tokens.size(), true, text.data(), text.size(), &n);
    if (s == VT_ERR_BUFFER_TOO_SMALL) {
        text.resize(n + 1);
        s = vt_detokenize(tok_, tokens.data(), tokens.size(), true, text.data(), text.size(), &n);
    }
    if (s != VT_OK) return {};
    text.resize(n);
    return text;
}

} // namespace vts
