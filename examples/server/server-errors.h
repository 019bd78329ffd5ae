// OpenAI-style API errors of vt-server: {"error": {message, type, param, code}}.
//
// Request parsing and validation throw ApiError; the route handlers catch it
// and answer with its status and JSON body, so no malformed input reaches
// the engine and none ends the process.
#pragma once

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>

namespace vts {

// what() is a C string: a NUL quoted from the request (a model name, a
// content part's type) would cut an error message short, so it is spelled.
inline std::string visible_nul(const std::string &s) {
    if (s.find('\0') == std::string::npos) return s;
    std::string out;
    for (char c : s) {
        if (c == '\0') out += "\\u0000";
        else out += c;
    }
    return out;
}

struct ApiError : std::runtime_error {
    int status;        // HTTP status
    std::string type;  // "invalid_request_error", "authentication_error", ...
    std::string param; // the offending request field, or ""
    std::string code;  // a machine-readable code, or ""

    ApiError(int status_, const std::string &message, std::string type_ = "invalid_request_error",
             std::string param_ = "", std::string code_ = "")
        : std::runtime_error(visible_nul(message)), status(status_), type(std::move(type_)),
          param(std::move(param_)), code(std::move(code_)) {}
};

// 400 invalid_request_error about one field.
inline ApiError bad_param(const std::string &param, const std::string &message) {
    return ApiError(400, message, "invalid_request_error", param);
}

// The JSON body of an error response. param and code are null when empty,
// as OpenAI sends them.
inline nlohmann::json error_body(const ApiError &e) {
    nlohmann::json err = {{"message", e.what()}, {"type", e.type}, {"param", nullptr}, {"code", nullptr}};
    if (!e.param.empty()) err["param"] = e.param;
    if (!e.code.empty()) err["code"] = e.code;
    return nlohmann::json{{"error", err}};
}

// JSON text for the wire: strings that are not valid UTF-8 (token pieces can
// be partial characters) get U+FFFD instead of making dump() throw.
inline std::string dump_json(const nlohmann::json &j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Request bodies keep their keys' order: a JSON Schema's properties come out
// in the schema's order, and templates print tools and messages as sent.
using Body = nlohmann::ordered_json;

inline std::string dump_json(const Body &j) { return j.dump(-1, ' ', false, Body::error_handler_t::replace); }

} // namespace vts
