// Errors: each vt_status becomes a subclass of vt.VtError carrying the status
// code and vt_last_error()'s message; library versions and the log level.
#include <array>

#include "vt_py.h"

namespace vt_py {

namespace {

struct ErrorClass {
    vt_status status;
    const char *name;     // Python class name
    const char *builtin;  // an extra builtin base (or nullptr)
    const char *doc;
};

// One class per status; the extra builtin base lets callers catch vt errors
// with the exception they would expect from Python (ValueError for a bad
// argument, MemoryError, OSError for I/O).
constexpr std::array<ErrorClass, 12> kClasses{{
    {VT_ERR_INVALID_ARGUMENT, "VtInvalidArgument", "ValueError",
     "An argument is out of range or malformed (VT_ERR_INVALID_ARGUMENT)."},
    {VT_ERR_IO, "VtIOError", "OSError",
     "A file is missing, unreadable or a directory (VT_ERR_IO)."},
    {VT_ERR_FORMAT, "VtFormatError", nullptr,
     "A file is not GGUF or is corrupt; the message names the byte offset (VT_ERR_FORMAT)."},
    {VT_ERR_UNSUPPORTED, "VtUnsupportedError", nullptr,
     "Unknown architecture, tensor type or tokenizer (VT_ERR_UNSUPPORTED)."},
    {VT_ERR_OUT_OF_MEMORY, "VtOutOfMemory", "MemoryError", "Out of memory (VT_ERR_OUT_OF_MEMORY)."},
    {VT_ERR_CANCELLED, "VtCancelled", nullptr,
     "The operation was cancelled, e.g. a load progress callback returned False (VT_ERR_CANCELLED)."},
    {VT_ERR_CONTEXT_FULL, "VtContextFull", nullptr,
     "The tokens do not fit the sequence's context window (VT_ERR_CONTEXT_FULL)."},
    {VT_ERR_BUFFER_TOO_SMALL, "VtBufferTooSmall", nullptr,
     "A caller buffer is too small (VT_ERR_BUFFER_TOO_SMALL); the bindings size buffers themselves."},
    {VT_ERR_INVALID_UTF8, "VtInvalidUTF8", "UnicodeError",
     "Text is not valid UTF-8; the message names the byte offset (VT_ERR_INVALID_UTF8)."},
    {VT_ERR_NOT_FOUND, "VtNotFound", "LookupError",
     "No such item, e.g. an unknown backend name (VT_ERR_NOT_FOUND)."},
    {VT_ERR_INVALID_STATE, "VtInvalidState", "RuntimeError",
     "The call is not valid in the object's state, e.g. step() with nothing fed (VT_ERR_INVALID_STATE)."},
    {VT_ERR_INTERNAL, "VtInternalError", "RuntimeError", "A bug in libvt (VT_ERR_INTERNAL)."},
}};

// Classes by status, kept alive by the module (interpreter lifetime).
PyObject *g_base = nullptr;
std::array<PyObject *, kClasses.size()> g_classes{};

const char *status_name(vt_status s) {
    switch (s) {
#define VT_PY_STATUS_NAME_(name, value, desc) \
    case name:                                \
        return #name;
        VT_STATUS_LIST(VT_PY_STATUS_NAME_)
#undef VT_PY_STATUS_NAME_
    }
    return "VT_ERR_UNKNOWN";
}

PyObject *class_of(vt_status s) {
    for (size_t i = 0; i < kClasses.size(); ++i)
        if (kClasses[i].status == s) return g_classes[i];
    return g_base;
}

} // namespace

void raise_status(vt_status status, const std::string &message) {
    PyObject *cls = class_of(status);
    std::string msg = message.empty() ? vt_status_str(status) : message;
    py::object exc = py::reinterpret_borrow<py::object>(cls)(utf8_replace(msg));
    exc.attr("status") = (int)status;
    exc.attr("status_name") = status_name(status);
    PyErr_SetObject(cls, exc.ptr());
    throw py::error_already_set();
}

void raise_last(vt_status status) {
    const char *m = vt_last_error();
    raise_status(status, m ? m : "");
}

py::str utf8_replace(const std::string &bytes) {
    PyObject *s = PyUnicode_DecodeUTF8(bytes.data(), (Py_ssize_t)bytes.size(), "replace");
    if (!s) throw py::error_already_set();
    return py::reinterpret_steal<py::str>(s);
}

void init_errors(py::module_ &m) {
    py::module_ builtins = py::module_::import("builtins");
    g_base = PyErr_NewExceptionWithDoc(
        "vt.VtError",
        "Base class of every error libvt reports.\n\n"
        "Attributes:\n"
        "    status: the vt_status code (a negative int, e.g. -2 for VT_ERR_IO).\n"
        "    status_name: its name (\"VT_ERR_IO\").\n"
        "str(error) is vt_last_error()'s message for the failed call.",
        nullptr, nullptr);
    if (!g_base) throw py::error_already_set();
    m.add_object("VtError", py::reinterpret_borrow<py::object>(g_base));
    for (size_t i = 0; i < kClasses.size(); ++i) {
        const ErrorClass &c = kClasses[i];
        py::object base = py::reinterpret_borrow<py::object>(g_base);
        py::tuple bases = c.builtin ? py::tuple(py::make_tuple(base, builtins.attr(c.builtin)))
                                    : py::tuple(py::make_tuple(base));
        std::string qualified = std::string("vt.") + c.name;
        g_classes[i] = PyErr_NewExceptionWithDoc(qualified.c_str(), c.doc, bases.ptr(), nullptr);
        if (!g_classes[i]) throw py::error_already_set();
        m.add_object(c.name, py::reinterpret_borrow<py::object>(g_classes[i]));
    }

    py::dict codes;
#define VT_PY_STATUS_CODE_(name, value, desc) codes[#name] = value;
    VT_STATUS_LIST(VT_PY_STATUS_CODE_)
#undef VT_PY_STATUS_CODE_
    m.attr("STATUS_CODES") = codes;
    m.def("status_str", [](int s) { return std::string(vt_status_str((vt_status)s)); }, py::arg("status"),
          "Static description of a status code (\"invalid argument\").");

    // Versions and logging live here too: they are part of vt_common.h.
    m.def("version", [] { return std::string(vt_version()); },
          "Version string of the loaded libvt (\"0.1.0\").");
    m.def("abi_version", [] { return vt_abi_version(); },
          "ABI version of the loaded libvt: (major << 16) | minor.");
    m.attr("ABI_VERSION") = (uint32_t)VT_ABI_VERSION;
    m.def("set_log_level", [](int level) {
            if (level < VT_LOG_LEVEL_DEBUG || level > VT_LOG_LEVEL_NONE)
                raise_status(VT_ERR_INVALID_ARGUMENT, "set_log_level: level must be 0 (debug) .. 4 (none)");
            vt_log_set(nullptr, nullptr, (vt_log_level)level);
        },
        py::arg("level"),
        "Sets the minimum level of libvt's log messages on stderr: LOG_DEBUG, LOG_INFO,\n"
        "LOG_WARN (the default), LOG_ERROR or LOG_NONE. Process-wide; thread-safe.");
    m.attr("LOG_DEBUG") = (int)VT_LOG_LEVEL_DEBUG;
    m.attr("LOG_INFO") = (int)VT_LOG_LEVEL_INFO;
    m.attr("LOG_WARN") = (int)VT_LOG_LEVEL_WARN;
    m.attr("LOG_ERROR") = (int)VT_LOG_LEVEL_ERROR;
    m.attr("LOG_NONE") = (int)VT_LOG_LEVEL_NONE;
}

} // namespace vt_py
