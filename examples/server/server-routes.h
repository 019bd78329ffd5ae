// The HTTP surface of vt-server: routes, authentication, body limits,
// OpenAI-shaped errors and the response counter of /metrics.
#pragma once

#include <httplib.h>

#include "server-state.h"

namespace vts {

// Registers every route and hook on svr. st must outlive svr's listening.
//   POST /v1/chat/completions, POST /v1/completions   (server-generate.h)
//   GET  /v1/models, /v1/models/{id}                  the base model and its LoRA adapters
//   POST /v1/load_lora_adapter, /v1/unload_lora_adapter (server-lora.h)
//   GET  /health     200 {"status":"ok"}; 503 {"status":"draining"} after SIGTERM
//   GET  /version    library, ABI and model
//   GET  /metrics    Prometheus text (server-metrics.h)
// With an API key, /v1/* answers 401 without "Authorization: Bearer KEY".
// Bodies over max_body_bytes are answered 413 and read into nothing.
void setup_routes(httplib::Server &svr, ServerState &st);

} // namespace vts
