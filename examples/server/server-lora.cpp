#include "server-lora.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>

#include "server-errors.h"

namespace vts {

using json = nlohmann::json;

LoraRegistry::LoraRegistry(const vt_model *model, std::string base_name)
    : model_(model), base_name_(std::move(base_name)) {}

void LoraRegistry::check_name(const std::string &name) const {
    if (name.empty()) throw bad_param("lora_name", "a LoRA adapter's name must not be empty");
    if (name.find('=') != std::string::npos)
        throw bad_param("lora_name", "a LoRA adapter's name must not hold '=': '" + name + "'");
    if (name == base_name_)
        throw bad_param("lora_name", "'" + name + "' is the base model's name; a LoRA adapter needs another");
    for (const auto &a : adapters_)
        if (a->name == name) throw bad_param("lora_name", "the LoRA adapter '" + name + "' has already been loaded");
}

LoraRef LoraRegistry::load(const std::string &name, const std::string &path) {
    {
        // Refuse a taken name before reading any file; checked again below,
        // as another load may take it meanwhile.
        std::lock_guard<std::mutex> lock(mu_);
        check_name(name);
    }
    if (path.empty()) throw bad_param("lora_path", "a LoRA adapter's path must not be empty");
    const auto t0 = std::chrono::steady_clock::now();
    vt_lora *raw = nullptr;
    const vt_status s = vt_lora_load(model_, path.c_str(), &raw);
    if (s != VT_OK) {
        const char *m = vt_last_error();
        // vt's message names the path.
        throw bad_param("lora_path", "cannot load the LoRA adapter '" + name + "': " +
                                         (m && *m ? m : path + ": " + vt_status_str(s)));
    }
    auto adapter = std::make_shared<LoraAdapter>(
        LoraAdapter{name, path, (int64_t)std::time(nullptr), {raw, vt_lora_destroy}});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    {
        std::lock_guard<std::mutex> lock(mu_);
        check_name(name);  // on failure the adapter just loaded is destroyed
        adapters_.push_back(adapter);
    }
    vt_lora_info info{};
    info.struct_size = sizeof info;
    if (vt_lora_get_info(raw, &info) == VT_OK)
        std::fprintf(stderr, "vt-server: LoRA adapter '%s' from %s (%s, rank %u, scale %g, %u weights: %s), %.2f s\n",
                     name.c_str(), path.c_str(), info.format, info.rank, info.scale, info.n_weights, info.targets,
                     seconds);
    return adapter;
}

void LoraRegistry::unload(const std::string &name) {
    LoraRef dropped;  // released after the lock: the vt_lora may be destroyed then
    {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = std::find_if(adapters_.begin(), adapters_.end(), [&](const LoraRef &a) { return a->name == name; });
        if (it == adapters_.end())
            throw ApiError(404, "the LoRA adapter '" + name + "' cannot be found", "invalid_request_error",
                           "lora_name", "model_not_found");
        dropped = std::move(*it);
        adapters_.erase(it);
    }
    std::fprintf(stderr, "vt-server: LoRA adapter '%s' unloaded (requests running with it finish with it)\n",
                 name.c_str());
}

LoraRef LoraRegistry::find(const std::string &name) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto &a : adapters_)
        if (a->name == name) return a;
    return nullptr;
}

std::vector<LoraRef> LoraRegistry::list() const {
    std::lock_guard<std::mutex> lock(mu_);
    return adapters_;
}

namespace {

// The body's JSON object, or a 400.
json parse_object(const std::string &text) {
    json body;
    try {
        body = json::parse(text);
    } catch (const json::exception &e) {  // parse_error, and out_of_range for 1e400
        throw ApiError(400, std::string("the request body is not valid JSON: ") + e.what());
    }
    if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object");
    return body;
}

// A required string field: absent, null or empty answers 400 with vLLM's message.
std::string required_string(const json &body, const char *key, const char *message) {
    auto it = body.find(key);
    if (it == body.end() || it->is_null()) throw bad_param(key, message);
    if (!it->is_string()) throw bad_param(key, std::string("'") + key + "' must be a string");
    std::string s = it->get<std::string>();
    if (s.empty()) throw bad_param(key, message);
    return s;
}

template <typename F>
void answer(httplib::Response &res, F &&body) {
    try {
        res.set_content(body(), "text/plain; charset=utf-8");
    } catch (const ApiError &e) {
        res.status = e.status;
        res.set_content(dump_json(error_body(e)), "application/json");
    } catch (const std::exception &e) {  // bad_alloc
        res.status = 500;
        res.set_content(dump_json(error_body(ApiError(500, e.what(), "server_error"))), "application/json");
    }
}

} // namespace

void handle_load_lora(ServerState &st, const std::string &text, httplib::Response &res) {
    answer(res, [&] {
        const json body = parse_object(text);
        const char *both = "both 'lora_name' and 'lora_path' must be given";
        const std::string name = required_string(body, "lora_name", both);
        const std::string path = required_string(body, "lora_path", both);
        st.loras->load(name, path);
        return "Success: LoRA adapter '" + name + "' added successfully.";
    });
}

void handle_unload_lora(ServerState &st, const std::string &text, httplib::Response &res) {
    answer(res, [&] {
        const json body = parse_object(text);
        const std::string name = required_string(body, "lora_name", "'lora_name' must be given");
        st.loras->unload(name);
        return "Success: LoRA adapter '" + name + "' removed successfully.";
    });
}

} // namespace vts
