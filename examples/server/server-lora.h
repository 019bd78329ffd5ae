// LoRA adapters of vt-server, served as vLLM serves them: each adapter has
// a name that a request gives as its "model", /v1/models lists it with the
// base model as its parent, --lora NAME=PATH loads it at start and
// POST /v1/load_lora_adapter and /v1/unload_lora_adapter at run time.
//
// Lifetime: the registry owns each adapter through a shared_ptr, and the
// last owner destroys its vt_lora. A request copies that pointer under the
// registry's lock and holds it until vt_context_submit has returned; from
// then on the engine holds its own reference (vt_request_params.lora). So
// unloading only drops the registry's reference: requests already running
// with the adapter finish with it, and new ones no longer find it.
#pragma once

#include <httplib.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "server-state.h"
#include "vt/vt.h"

namespace vts {

struct LoraAdapter {
    std::string name;   // what requests give as "model"
    std::string path;   // as given; /v1/models shows it as "root"
    int64_t created;    // Unix time it was loaded
    std::unique_ptr<vt_lora, void (*)(vt_lora *)> lora;
};

using LoraRef = std::shared_ptr<const LoraAdapter>;

// The adapters a server serves. Every method is thread-safe.
class LoraRegistry {
public:
    // model must outlive the registry (vt_lora_load's rule); base_name is
    // the base model's served name, which no adapter may take.
    LoraRegistry(const vt_model *model, std::string base_name);

    // Loads the adapter at path (a PEFT folder or a GGUF LoRA file) as
    // `name`. The files are read outside the lock: requests, and other
    // loads, go on meanwhile. Throws ApiError 400 for a bad name (empty,
    // holding '=', the base model's or an adapter's already) or an adapter
    // vt refuses (vt's message).
    LoraRef load(const std::string &name, const std::string &path);
    // Forgets the adapter `name`; requests already submitted with it keep
    // it. Throws ApiError 404 when no adapter has that name.
    void unload(const std::string &name);
    // The adapter called name, or null.
    LoraRef find(const std::string &name) const;
    // Every adapter, in the order they were loaded.
    std::vector<LoraRef> list() const;

private:
    void check_name(const std::string &name) const;  // with mu_ held

    const vt_model *model_;
    const std::string base_name_;
    mutable std::mutex mu_;
    std::vector<LoraRef> adapters_;  // load order; a handful, so searched in turn
};

// POST /v1/load_lora_adapter {"lora_name": ..., "lora_path": ...} and
// POST /v1/unload_lora_adapter {"lora_name": ...}, their bodies already
// read (and the API key checked). 200 with vLLM's plain-text answer, or an
// OpenAI error object. Never throw.
void handle_load_lora(ServerState &st, const std::string &body, httplib::Response &res);
void handle_unload_lora(ServerState &st, const std::string &body, httplib::Response &res);

} // namespace vts
