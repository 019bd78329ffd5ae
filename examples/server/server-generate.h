// POST /v1/chat/completions and /v1/completions: parse, tokenize, submit
// one engine request per choice, then answer streamed (SSE) or whole.
#pragma once

#include <httplib.h>

#include <string>

#include "server-state.h"

namespace vts {

// Answers one generation request whose body was read into `body` (already
// within --max-body-bytes). Errors before the first byte of the answer get
// their HTTP status and an OpenAI error object; the answer itself is
// written by a chunked content provider that stops waiting and cancels the
// engine requests when the client goes away. Never throws.
void handle_generation(ServerState &st, const std::string &body, bool chat, httplib::Response &res);

} // namespace vts
