// The architecture table: the only place that maps a name to an
// architecture. Adding one = a file in lib/models/ + one line here (and one
// in kHfArchitectures for the Hugging Face names it loads from a folder).
#include <cstring>

#include "core/error.h"
#include "model/hf-folder.h"
#include "model/model.h"

namespace vt {

std::unique_ptr<Architecture> make_llama_architecture();
std::unique_ptr<Architecture> make_qwen2_architecture();
std::unique_ptr<Architecture> make_qwen3_architecture();
std::unique_ptr<Architecture> make_gemma3_architecture();
std::unique_ptr<Architecture> make_phi3_architecture();
std::unique_ptr<Architecture> make_qwen3moe_architecture();
std::unique_ptr<Architecture> make_olmoe_architecture();
std::unique_ptr<Architecture> make_deepseek2_architecture();
std::unique_ptr<Architecture> make_qwen35_architecture();
std::unique_ptr<Architecture> make_qwen35moe_architecture();
std::unique_ptr<Architecture> make_qwen3next_architecture();
std::unique_ptr<Architecture> make_kimi_linear_architecture();
std::unique_ptr<Architecture> make_lfm2_architecture();
std::unique_ptr<Architecture> make_lfm2moe_architecture();
std::unique_ptr<Architecture> make_nemotron_h_architecture();
std::unique_ptr<Architecture> make_granite_hybrid_architecture();
std::unique_ptr<Architecture> make_falcon_h1_architecture();
std::unique_ptr<Architecture> make_gpt_oss_architecture();

namespace {
struct ArchEntry {
    const char *name;
    std::unique_ptr<Architecture> (*make)();
};

const ArchEntry kArchitectures[] = {
    {"llama", make_llama_architecture},
    {"qwen2", make_qwen2_architecture},
    {"qwen3", make_qwen3_architecture},
    {"gemma3", make_gemma3_architecture},
    {"phi3", make_phi3_architecture},
    {"qwen3moe", make_qwen3moe_architecture},
    {"olmoe", make_olmoe_architecture},
    {"deepseek2", make_deepseek2_architecture},
    {"qwen35", make_qwen35_architecture},
    {"qwen35moe", make_qwen35moe_architecture},
    {"qwen3next", make_qwen3next_architecture},
    {"kimi-linear", make_kimi_linear_architecture},
    {"lfm2", make_lfm2_architecture},
    {"lfm2moe", make_lfm2moe_architecture},
    {"nemotron_h", make_nemotron_h_architecture},
    {"nemotron_h_moe", make_nemotron_h_architecture},
    {"granitehybrid", make_granite_hybrid_architecture},
    {"falcon-h1", make_falcon_h1_architecture},
    {"gpt-oss", make_gpt_oss_architecture},
};

struct HfEntry {
    const char *hf_name;  // config.json "architectures"
    HfArchitecture arch;
};

const HfEntry kHfArchitectures[] = {
    {"LlamaForCausalLM", {"llama", HfNorms::plain}},
    {"MistralForCausalLM", {"llama", HfNorms::plain}},
    {"Qwen2ForCausalLM", {"qwen2", HfNorms::plain}},
    {"Qwen3ForCausalLM", {"qwen3", HfNorms::plain}},
    {"Gemma3ForCausalLM", {"gemma3", HfNorms::gemma}},
    {"Gemma3ForConditionalGeneration", {"gemma3", HfNorms::gemma}},  // its text model
    {"Phi3ForCausalLM", {"phi3", HfNorms::plain}},
    {"MixtralForCausalLM", {"llama", HfNorms::plain}},
    {"Qwen3MoeForCausalLM", {"qwen3moe", HfNorms::plain}},
    {"OlmoeForCausalLM", {"olmoe", HfNorms::plain}},
    {"DeepseekV2ForCausalLM", {"deepseek2", HfNorms::plain}},
    {"DeepseekV3ForCausalLM", {"deepseek2", HfNorms::plain}},
    {"Qwen3NextForCausalLM", {"qwen3next", HfNorms::zero_centred}},
    {"Qwen3_5ForCausalLM", {"qwen35", HfNorms::zero_centred}},
    {"Qwen3_5ForConditionalGeneration", {"qwen35", HfNorms::zero_centred}},  // its text model
    {"Qwen3_5MoeForCausalLM", {"qwen35moe", HfNorms::zero_centred}},
    {"Qwen3_5MoeForConditionalGeneration", {"qwen35moe", HfNorms::zero_centred}},
    {"KimiLinearForCausalLM", {"kimi-linear", HfNorms::kimi}},
    {"Lfm2ForCausalLM", {"lfm2", HfNorms::lfm2}},
    {"Lfm2MoeForCausalLM", {"lfm2moe", HfNorms::lfm2}},
    {"NemotronHForCausalLM", {"nemotron_h", HfNorms::nemotron_h}},
    {"GraniteMoeHybridForCausalLM", {"granitehybrid", HfNorms::granite_hybrid}},
    {"FalconH1ForCausalLM", {"falcon-h1", HfNorms::falcon_h1}},
    {"GptOssForCausalLM", {"gpt-oss", HfNorms::gpt_oss}},
};
} // namespace

std::vector<std::string> architecture_names() {
    std::vector<std::string> out;
    for (const ArchEntry &e : kArchitectures) out.push_back(e.name);
    return out;
}

std::vector<std::string> hf_names_of(const std::string &arch) {
    std::vector<std::string> out;
    for (const HfEntry &e : kHfArchitectures)
        if (arch == e.arch.gguf_arch) out.push_back(e.hf_name);
    return out;
}

const HfArchitecture *find_hf_architecture(const std::string &hf_name) {
    for (const HfEntry &e : kHfArchitectures)
        if (hf_name == e.hf_name) return &e.arch;
    return nullptr;
}

std::string hf_architecture_names() {
    std::string known;
    for (const HfEntry &e : kHfArchitectures) known += known.empty() ? e.hf_name : std::string(", ") + e.hf_name;
    return known;
}

std::unique_ptr<Architecture> make_architecture(const std::string &name) {
    std::string known;
    for (const ArchEntry &e : kArchitectures) {
        if (name == e.name) return e.make();
        known += known.empty() ? e.name : std::string(", ") + e.name;
    }
    fail(VT_ERR_UNSUPPORTED, "unsupported model architecture '%s' (supported: %s)", name.c_str(), known.c_str());
}

} // namespace vt
