// vt.LoRA: an adapter loaded for a model (vt_lora.h). Sequence.set_lora
// (context.cpp) and Context.submit(lora=...) (engine.cpp) hand its handle to
// libvt, which keeps its own reference for as long as they use it.
#include <cstdio>

#include "vt_py.h"

namespace vt_py {

namespace {

std::shared_ptr<LoRA> load(std::shared_ptr<Model> model, const std::filesystem::path &path) {
    if (!model) raise_status(VT_ERR_INVALID_ARGUMENT, "LoRA: model must be a vt.Model, not None");
    auto lora = std::make_shared<LoRA>();
    lora->model = std::move(model);
    lora->path = path.string();
    Failure f;
    {
        py::gil_scoped_release nogil;
        f.set(vt_lora_load(lora->model->handle, lora->path.c_str(), &lora->handle));
    }
    f.raise_if_failed();
    return lora;
}

vt_lora_info info_of(const LoRA &l) {
    vt_lora_info info{};
    info.struct_size = sizeof info;
    check(vt_lora_get_info(l.handle, &info));
    return info;
}

// "attn_q,attn_v" -> ["attn_q", "attn_v"]; "" -> [].
std::vector<std::string> split_targets(const char *s) {
    std::vector<std::string> out;
    std::string cur;
    for (const char *p = s ? s : ""; *p; ++p) {
        if (*p != ',') {
            cur += *p;
        } else if (!cur.empty()) {
            out.push_back(std::move(cur));
            cur.clear();
        }
    }
    if (!cur.empty()) out.push_back(std::move(cur));
    return out;
}

} // namespace

void init_lora(py::module_ &m) {
    py::class_<LoRA, std::shared_ptr<LoRA>>(m, "LoRA",
        "A LoRA adapter of a model: low-rank updates of some of its projections, applied\n"
        "per sequence (Sequence.set_lora) or per request (Context.submit(lora=...),\n"
        "LLM.generate(lora=...)) without changing the model's weights. Requests with\n"
        "different adapters, or none, run batched together.\n\n"
        "Thread-safety: immutable once loaded; any number of threads, sequences and\n"
        "requests may use it at once. It keeps its vt.Model alive. Sequences and requests\n"
        "given it hold it themselves, so dropping the object early is safe.\n\n"
        "    model = vt.Model(\"SmolLM2-135M-Instruct.Q4_1.gguf\")\n"
        "    lora = vt.LoRA(model, \"my-adapter.gguf\")    # or a PEFT folder\n"
        "    lora.rank, lora.scale, lora.targets")
        .def(py::init(&load), py::arg("model"), py::arg("path"),
             "Loads an adapter of model from path and checks it against the model (the GIL\n"
             "is released while it loads).\n\n"
             "Args:\n"
             "    model: the vt.Model the adapter was trained for (kept alive by the adapter).\n"
             "    path: a PEFT folder (adapter_config.json + adapter_model.safetensors) or a\n"
             "        GGUF LoRA file (llama.cpp's convert_lora_to_gguf.py); str or os.PathLike.\n\n"
             "Raises:\n"
             "    VtIOError: missing or unreadable path.\n"
             "    VtFormatError: a malformed config, safetensors or GGUF (an A without its B).\n"
             "    VtInvalidArgument: an adapter of another model (architecture, a target the\n"
             "        model lacks, shapes).\n"
             "    VtUnsupportedError: what vt cannot apply (modules_to_save, DoRA, LoRA biases,\n"
             "        per-module rank or alpha patterns, embedding or output targets, expert\n"
             "        weights, fused projections); the message names it.")
        .def_readonly("path", &LoRA::path, "The folder or file the adapter was loaded from.")
        .def_readonly("model", &LoRA::model, "The vt.Model the adapter belongs to.")
        .def_property_readonly("rank", [](const LoRA &self) { return info_of(self).rank; },
                               "The largest rank of its targets.")
        .def_property_readonly("alpha", [](const LoRA &self) { return info_of(self).alpha; },
                               "lora_alpha (a GGUF's adapter.lora.alpha; 0 there means the scale alone).")
        .def_property_readonly("scale", [](const LoRA &self) { return info_of(self).scale; },
                               "What B A is multiplied by at a request scale of 1: alpha / rank, or\n"
                               "alpha / sqrt(rank) with rsLoRA.")
        .def_property_readonly("n_weights", [](const LoRA &self) { return info_of(self).n_weights; },
                               "Model weights it updates.")
        .def_property_readonly("n_params", [](const LoRA &self) { return info_of(self).n_params; },
                               "Values in its A and B matrices.")
        .def_property_readonly("targets", [](const LoRA &self) { return split_targets(info_of(self).targets); },
                               "The kinds of weights it updates, GGUF names without the block\n"
                               "([\"attn_q\", \"attn_v\", \"ffn_up\"]).")
        .def_property_readonly("format", [](const LoRA &self) { return std::string(info_of(self).format); },
                               "\"peft\" or \"gguf\".")
        .def("__repr__", [](const LoRA &self) {
            const vt_lora_info info = info_of(self);
            char head[96];
            std::snprintf(head, sizeof head, "<vt.LoRA %s rank %u, scale %g, %u weights (", info.format,
                          info.rank, (double)info.scale, info.n_weights);
            return head + std::string(info.targets ? info.targets : "") + "), '" + self.path + "'>";
        });
}

} // namespace vt_py
