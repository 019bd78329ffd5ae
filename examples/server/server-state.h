// What every route handler of vt-server shares. Built once in main before
// the server listens; the pointers outlive the HTTP server.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "server-flags.h"

namespace vts {

class Engine;
class GrammarCache;
class LoraRegistry;
class Metrics;
class Prompter;

struct ServerState {
    ServerOptions opts;
    std::string model_name;   // the id clients name in "model"
    int64_t created = 0;      // Unix time the server started (the model's "created")
    uint32_t n_vocab = 0;
    Engine *engine = nullptr;
    Prompter *prompter = nullptr;
    Metrics *metrics = nullptr;
    LoraRegistry *loras = nullptr;        // --lora and run-time adapters (server-lora.h)
    GrammarCache *grammars = nullptr;     // compiled output constraints (server-structured.h)
    std::atomic<bool> draining{false};    // SIGTERM came: refuse new requests
    std::atomic<bool> pool_logged{false}; // the KV pool's size was logged
};

// Logs the KV pool (blocks, tokens, bytes, max_model_len) once, as soon as
// the engine reports it. Thread-safe.
void log_kv_pool_once(ServerState &st);

} // namespace vts
