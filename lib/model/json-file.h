// A JSON file of a model or adapter folder (config.json, adapter_config.json...).
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>

namespace vt {

// Parses path. Throws vt::Error: VT_ERR_IO (missing, unreadable),
// VT_ERR_FORMAT (malformed JSON, naming the file).
nlohmann::json read_json_file(const std::filesystem::path &path);

} // namespace vt
