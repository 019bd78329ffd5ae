#include "model/json-file.h"

#include <fstream>
#include <sstream>

#include "core/error.h"

namespace vt {

nlohmann::json read_json_file(const std::filesystem::path &p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) fail(VT_ERR_IO, "%s: cannot be read", p.c_str());
    std::stringstream ss;
    ss << in.rdbuf();
    nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) fail(VT_ERR_FORMAT, "%s: malformed JSON", p.c_str());
    return j;
}

} // namespace vt
