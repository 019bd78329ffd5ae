// vt.Model: loading a GGUF model and reading its metadata (vt_model.h).
#include <cstdio>
#include <optional>

#include "vt_py.h"

namespace vt_py {

namespace {

// Load progress forwarded to a Python callable, called on the loading thread
// (which runs without the GIL). An exception in the callable cancels the
// load and is re-raised after it.
struct ProgressCall {
    py::object fn;
    std::optional<py::error_already_set> error;  // what the callable raised
};

bool on_progress(float p, void *ud) {
    auto *pc = static_cast<ProgressCall *>(ud);
    py::gil_scoped_acquire gil;
    try {
        py::object r = pc->fn(p);
        return r.is_none() || r.cast<bool>();
    } catch (py::error_already_set &e) {
        pc->error = std::move(e);
        return false;
    }
}

vt_model_info info_of(const Model &m) {
    vt_model_info info{};
    info.struct_size = sizeof info;
    check(vt_model_get_info(m.handle, &info));
    return info;
}

std::shared_ptr<Model> load(const std::filesystem::path &path, bool use_mmap, py::object progress,
                            std::optional<std::string> quantize, std::optional<std::string> device,
                            int32_t n_gpu_layers, uint64_t weights_memory) {
    auto model = std::make_shared<Model>();
    model->path = path.string();
    vt_model_params mp;
    vt_model_params_init_v2(&mp, sizeof mp);  // quantize is ABI 1.3
    mp.use_mmap = use_mmap;
    vt_quant_type q = VT_QUANT_NONE;
    if (quantize) check(vt_quant_type_from_name(quantize->c_str(), &q));
    mp.quantize = q;
    mp.device = device ? device->c_str() : nullptr;
    mp.n_gpu_layers = n_gpu_layers;
    mp.weights_memory_bytes = weights_memory;
    ProgressCall pc{progress, std::nullopt};
    if (!progress.is_none()) {
        mp.progress = on_progress;
        mp.progress_user_data = &pc;
    }
    Failure f;
    {
        py::gil_scoped_release nogil;
        f.set(vt_model_load(model->path.c_str(), &mp, &model->handle));
    }
    if (pc.error) throw std::move(*pc.error);
    f.raise_if_failed();
    return model;
}

// vt.ModelMeta: read-only mapping of GGUF metadata keys to their text.
struct Meta {
    std::shared_ptr<Model> model;

    std::vector<std::string> keys() const {
        size_t n = 0;
        check(vt_model_meta_count(model->handle, &n));
        std::vector<std::string> out;
        out.reserve(n);
        for (size_t i = 0; i < n; ++i)
            out.push_back(read_string([&](char *b, size_t s, size_t *need) {
                return vt_model_meta_key(model->handle, i, b, s, need);
            }));
        return out;
    }
    // The value, or nullopt when the key is absent.
    std::optional<py::str> get(const std::string &key) const {
        bool missing = false;
        std::string v = read_string(
            [&](char *b, size_t s, size_t *need) { return vt_model_meta_get(model->handle, key.c_str(), b, s, need); },
            &missing);
        if (missing) return std::nullopt;
        return utf8_replace(v);
    }
};

} // namespace

void init_model(py::module_ &m) {
    m.def("devices", [] {
            static const char *const kTypes[] = {"cpu", "gpu", "igpu", "other"};
            py::list out;
            const size_t n = vt_device_count();
            for (size_t i = 0; i < n; ++i) {
                vt_device_info d{};
                d.struct_size = sizeof d;
                check(vt_device_get_info(i, &d));
                py::dict e;
                e["name"] = d.name;
                e["backend"] = d.backend;
                e["type"] = (unsigned)d.type < 4 ? kTypes[d.type] : "other";
                e["description"] = utf8_replace(d.description);
                e["memory_total"] = d.memory_total;
                e["memory_free"] = d.memory_free;
                out.append(std::move(e));
            }
            return out;
        },
        "The devices models can be loaded on, as dicts (name, backend, type, description,\n"
        "memory_total, memory_free); the first is always \"cpu\". Backend modules (Vulkan)\n"
        "are looked for at the first call (see vt_device.h for where).");
    py::class_<Meta>(m, "ModelMeta",
        "Read-only mapping of a model's GGUF metadata: key -> value rendered as text\n"
        "(numbers in decimal, booleans as true/false, strings as they are, arrays as a JSON\n"
        "array). Values are read on access; it is registered as a collections.abc.Mapping.")
        .def("__getitem__", [](const Meta &self, const std::string &key) {
            auto v = self.get(key);
            if (!v) throw py::key_error(key);
            return *v;
        })
        .def("get", [](const Meta &self, const std::string &key, py::object dflt) -> py::object {
                auto v = self.get(key);
                return v ? py::object(*v) : dflt;
            },
            py::arg("key"), py::arg("default") = py::none(), "The value of key, or default if absent.")
        .def("__contains__", [](const Meta &self, const std::string &key) { return self.get(key).has_value(); })
        .def("__len__", [](const Meta &self) {
            size_t n = 0;
            check(vt_model_meta_count(self.model->handle, &n));
            return n;
        })
        .def("keys", &Meta::keys, "Every metadata key, in file order.")
        .def("__iter__", [](const Meta &self) { return py::iter(py::cast(self.keys())); })
        .def("items", [](const Meta &self) {
                py::list out;
                for (const auto &k : self.keys()) out.append(py::make_tuple(k, *self.get(k)));
                return out;
            },
            "(key, value) pairs of every entry (renders every value: arrays can be large).")
        .def("values", [](const Meta &self) {
                py::list out;
                for (const auto &k : self.keys()) out.append(*self.get(k));
                return out;
            })
        .def("__repr__", [](const Meta &self) {
            size_t n = 0;
            check(vt_model_meta_count(self.model->handle, &n));
            return "<vt.ModelMeta with " + std::to_string(n) + " keys>";
        });

    py::class_<Model, std::shared_ptr<Model>>(m, "Model",
        "A loaded GGUF model: immutable weights, metadata and tokenizer.\n\n"
        "Thread-safety: a Model is immutable and may be shared by any number of threads,\n"
        "Contexts and LLMs at once. It stays alive while any object made from it does.\n\n"
        "    model = vt.Model(\"SmolLM2-135M-Instruct.Q4_1.gguf\")\n"
        "    model.arch, model.n_params, model.meta[\"general.name\"]")
        .def(py::init(&load), py::arg("path"), py::arg("use_mmap") = true, py::arg("progress") = py::none(),
             py::arg("quantize") = py::none(), py::arg("device") = py::none(), py::arg("n_gpu_layers") = -1,
             py::arg("weights_memory") = 0,
             "Loads a GGUF model file or a Hugging Face model folder (the GIL is released while it loads).\n\n"
             "Args:\n"
             "    path: the .gguf file or the folder (str or os.PathLike).\n"
             "    use_mmap: map the file read-only and use the weights in place (default);\n"
             "        False reads them into memory.\n"
             "    progress: optional callable(fraction: float) -> bool | None, called on the\n"
             "        loading thread; returning False cancels the load (VtCancelled). An\n"
             "        exception it raises cancels the load and propagates.\n"
             "    quantize: None (keep the file's types), or a type name (\"Q8_0\", \"Q6_K\",\n"
             "        \"Q5_0\", \"Q5_1\", \"Q4_K\", \"Q4_0\", \"Q4_1\", \"MXFP4\"): every F32/F16/BF16/FP8 matmul\n"
             "        weight is quantized to it at load, byte for byte as llama.cpp's quantizer\n"
             "        would (see vt_model_params.quantize); Model.quantization tells what was.\n"
             "    device: a name from vt.devices() (\"cpu\", \"vulkan0\"); None = \"cpu\". The\n"
             "        weights are uploaded to it at load, and contexts of the model compute there.\n"
             "    n_gpu_layers: with a device other than the CPU, how many layers (the last ones)\n"
             "        it holds; the rest, and the embedding and output unless all layers are\n"
             "        there, stay on the CPU. -1 = every layer.\n"
             "    weights_memory: the most bytes of weight copies in memory (repacked layouts,\n"
             "        quantized copies); mixture-of-experts weights past it are read from the file\n"
             "        mapping. 0 = 3/4 of the memory available at load (vt_model_params.\n"
             "        weights_memory_bytes); Model.weights tells where the bytes are.\n\n"
             "Raises:\n"
             "    VtIOError: missing or unreadable file, or a directory.\n"
             "    VtFormatError: not GGUF, or corrupt (the message names the byte offset).\n"
             "    VtUnsupportedError: unknown architecture or tensor type.\n"
             "    VtNotFound: no device of that name.\n"
             "    VtCancelled, VtOutOfMemory.")
        .def_readonly("path", &Model::path, "The file the model was loaded from.")
        .def_property_readonly("arch", [](const Model &self) {
                return read_string([&](char *b, size_t s, size_t *need) { return vt_model_arch(self.handle, b, s, need); });
            },
            "Architecture name, as GGUF general.architecture (\"llama\").")
        .def_property_readonly("n_params", [](const Model &self) { return info_of(self).n_params; },
                               "Number of weights (elements of all tensors).")
        .def_property_readonly("size_bytes", [](const Model &self) { return info_of(self).size_bytes; },
                               "Bytes of all tensor data.")
        .def_property_readonly("n_ctx_train", [](const Model &self) { return info_of(self).n_ctx_train; },
                               "Training context length in tokens.")
        .def_property_readonly("n_vocab", [](const Model &self) { return info_of(self).n_vocab; },
                               "Vocabulary size: the length of a logits vector.")
        .def_property_readonly("n_embd", [](const Model &self) { return info_of(self).n_embd; }, "Hidden size.")
        .def_property_readonly("n_layer", [](const Model &self) { return info_of(self).n_layer; },
                               "Number of transformer blocks.")
        .def_property_readonly("n_head", [](const Model &self) { return info_of(self).n_head; }, "Query heads.")
        .def_property_readonly("n_head_kv", [](const Model &self) { return info_of(self).n_head_kv; },
                               "Key/value heads.")
        .def_property_readonly("device", [](const Model &self) { return std::string(info_of(self).device); },
                               "The device holding the weights (\"cpu\", \"vulkan0\").")
        .def_property_readonly("uploaded_bytes", [](const Model &self) { return info_of(self).uploaded_bytes; },
                               "Weight bytes copied into the device's memory at load (0 on the CPU).")
        .def_property_readonly("n_device_layers", [](const Model &self) { return info_of(self).n_device_layers; },
                               "Layers whose weights and KV are on Model.device.")
        .def_property_readonly("weights", [](const Model &self) {
                const vt_model_info info = info_of(self);
                py::dict d;
                d["resident_bytes"] = info.resident_weight_bytes;
                d["mapped_bytes"] = info.mapped_weight_bytes;
                d["bytes_per_token"] = info.weight_bytes_per_token;
                d["n_expert"] = info.n_expert;
                d["n_expert_used"] = info.n_expert_used;
                d["n_expert_tensors_mapped"] = info.n_expert_tensors_mapped;
                return d;
            },
            "Where the weights are in host memory, as a dict: resident_bytes (copies),\n"
            "mapped_bytes (read from the file mapping), bytes_per_token (what one decode\n"
            "token reads: the bandwidth roofline), n_expert, n_expert_used (0 for a dense\n"
            "model), n_expert_tensors_mapped.")
        .def_property_readonly("quantization", [](const Model &self) -> py::object {
                const vt_model_info info = info_of(self);
                if (info.quantize == VT_QUANT_NONE) return py::none();
                py::dict d;
                d["type"] = vt_quant_type_name((vt_quant_type)info.quantize);
                d["n_quantized"] = info.n_quantized;
                d["n_fallback"] = info.n_quantize_fallback;
                d["n_kept"] = info.n_quantize_kept;
                d["bytes"] = info.quantized_bytes;
                d["seconds"] = info.quantize_seconds;
                return d;
            },
            "What quantization at load did, as a dict (type, n_quantized, n_fallback, n_kept, bytes,\n"
            "seconds), or None when the model was loaded without it.")
        .def_property_readonly("chat_template", [](const Model &self) -> py::object {
                bool missing = false;
                std::string t = read_string(
                    [&](char *b, size_t s, size_t *need) { return vt_model_chat_template(self.handle, b, s, need); },
                    &missing);
                if (missing) return py::none();
                return utf8_replace(t);
            },
            "The chat template (tokenizer.chat_template, Jinja source), or None if the model has none.")
        .def_property_readonly("tokenizer", [](std::shared_ptr<Model> self) {
                auto t = std::make_shared<Tokenizer>();
                check(vt_model_tokenizer(self->handle, &t->handle));
                t->model = std::move(self);
                return t;
            },
            "The model's own tokenizer (vt.Tokenizer), which keeps the model alive.")
        .def_property_readonly("meta", [](std::shared_ptr<Model> self) { return Meta{std::move(self)}; },
                               "GGUF metadata as a read-only mapping (vt.ModelMeta).")
        .def("__repr__", [](const Model &self) {
            vt_model_info info = info_of(self);
            std::string arch =
                read_string([&](char *b, size_t s, size_t *need) { return vt_model_arch(self.handle, b, s, need); });
            char n[64];
            std::snprintf(n, sizeof n, "%.1fM", info.n_params / 1e6);
            return "<vt.Model " + arch + ", " + n + " params, '" + self.path + "'>";
        });
}

} // namespace vt_py
