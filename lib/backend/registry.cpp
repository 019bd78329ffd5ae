// The device list: the built-in CPU backend, then backend modules found on
// disk (vt/vt_device.h gives the search order). Loaded once per process.
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/backend.h"
#include "core/error.h"
#include "core/log.h"
#include "core/pages.h"  // available_memory_bytes

extern "C" vt_backend_reg *vt_backend_cpu_reg(void);

namespace vt {
namespace {

// Modules built in this tree (found at backends/<name>/ beside libvt when
// run from the build directory). Adding a backend = one entry here, its
// folder under backends/ and its meson option.
const char *const kModules[] = {"vulkan"};

void host_log(vt_log_level level, const char *text) { log(level, "%s", text); }

const vt_backend_host kHost = {VT_BACKEND_API_VERSION, host_log};

// The directory libvt was loaded from ("" when it cannot be told).
std::string library_dir() {
    Dl_info info{};
    if (!dladdr(reinterpret_cast<void *>(&library_dir), &info) || !info.dli_fname) return "";
    std::string path = info.dli_fname;
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? "." : path.substr(0, slash);
}

bool is_module_name(const std::string &f) {
    static const std::string prefix = "libvt-backend-", suffix = ".so";
    return f.size() > prefix.size() + suffix.size() && f.compare(0, prefix.size(), prefix) == 0 &&
           f.compare(f.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Every module file of a directory, in name order.
std::vector<std::string> modules_in(const std::string &dir) {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto &e : std::filesystem::directory_iterator(dir, ec))
        if (is_module_name(e.path().filename().string())) out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    return out;
}

// Where modules are looked for (vt/vt_device.h): every module in each
// $VT_BACKEND_PATH directory, in vt/ beside libvt and beside libvt itself
// (the Python package's copy of libvt sits with its modules), then the
// known modules at their place in the build tree.
std::vector<std::string> module_paths() {
    std::vector<std::string> paths;
    auto add = [&](const std::vector<std::string> &more) { paths.insert(paths.end(), more.begin(), more.end()); };
    if (const char *env = std::getenv("VT_BACKEND_PATH")) {
        const std::string dirs = env;
        size_t at = 0;
        while (at <= dirs.size()) {
            size_t end = dirs.find(':', at);
            if (end == std::string::npos) end = dirs.size();
            if (end > at) add(modules_in(dirs.substr(at, end - at)));
            at = end + 1;
        }
    }
    const std::string dir = library_dir();
    if (!dir.empty()) {
        add(modules_in(dir + "/vt"));
        add(modules_in(dir));
        for (const char *m : kModules) {
            const std::string p = dir + "/backends/" + m + "/libvt-backend-" + m + ".so";
            if (std::filesystem::exists(p)) paths.push_back(p);
        }
    }
    return paths;
}

// The registry of the module at path, or null (logged) when it cannot be
// used. A module that loads stays loaded for the life of the process.
vt_backend_reg *load_module(const std::string &path) {
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        // E.g. the Vulkan module on a machine without libvulkan.
        const char *err = dlerror();
        VT_LOG_WARN("backend module %s cannot be loaded: %s", path.c_str(), err ? err : "?");
        return nullptr;
    }
    auto init = reinterpret_cast<vt_backend_init_fn>(dlsym(handle, VT_BACKEND_INIT_SYMBOL));
    if (!init) {
        VT_LOG_WARN("backend module %s has no %s: skipped", path.c_str(), VT_BACKEND_INIT_SYMBOL);
        dlclose(handle);
        return nullptr;
    }
    vt_backend_reg *reg = init(&kHost);
    if (!reg) {
        VT_LOG_INFO("backend module %s: no usable device", path.c_str());
        dlclose(handle);
        return nullptr;
    }
    if (reg->iface->api_version != VT_BACKEND_API_VERSION) {
        // Its other entries may not match our layout: touch nothing more,
        // and keep it mapped (its objects may still be referenced).
        VT_LOG_WARN("backend module %s implements backend interface %u, libvt %u: skipped", path.c_str(),
                    reg->iface->api_version, (unsigned)VT_BACKEND_API_VERSION);
        return nullptr;
    }
    VT_LOG_INFO("backend module %s: loaded", path.c_str());
    return reg;
}

std::vector<vt_device *> load_devices() {
    std::vector<vt_device *> out;
    std::vector<vt_backend_reg *> regs{vt_backend_cpu_reg()};
    std::vector<std::string> names{"cpu"};
    for (const std::string &path : module_paths()) {
        // The first module of a backend wins ($VT_BACKEND_PATH over the
        // installed one); a second of the same name is not even opened.
        const std::string file = path.substr(path.rfind('/') + 1);
        const std::string name = file.substr(14, file.size() - 14 - 3);  // libvt-backend-<name>.so
        if (std::find(names.begin(), names.end(), name) != names.end()) continue;
        if (vt_backend_reg *r = load_module(path)) {
            regs.push_back(r);
            names.push_back(name);
        }
    }
    for (vt_backend_reg *r : regs) {
        const size_t n = r->iface->device_count(r);
        for (size_t i = 0; i < n; ++i)
            if (vt_device *d = r->iface->device_get(r, i)) out.push_back(d);
    }
    return out;
}

} // namespace

const std::vector<vt_device *> &devices() {
    static const std::vector<vt_device *> list = load_devices();  // thread-safe init
    return list;
}

vt_device *cpu_device() { return devices().front(); }

vt_device_props device_props(vt_device *dev) {
    vt_device_props p{};
    dev->iface->get_props(dev, &p);
    return p;
}

std::string device_name(vt_device *dev) { return device_props(dev).name; }

const char *device_backend(vt_device *dev) { return dev->reg->iface->get_name(dev->reg); }

bool device_is_host(vt_device *dev) {
    vt_buffer_type *bt = dev->iface->get_buffer_type(dev);
    return bt->iface->is_host(bt);
}

vt_device *find_device(const char *name) {
    if (name == nullptr || *name == '\0') return cpu_device();
    std::string known;
    for (vt_device *d : devices()) {
        const std::string n = device_name(d);
        if (n == name) return d;
        known += known.empty() ? n : ", " + n;
    }
    fail(VT_ERR_NOT_FOUND, "no device named '%s' (available: %s)", name, known.c_str());
}

namespace {
// The buffers buffer_alloc made and the bytes they hold per device. Buffers
// come and go at load and start-up, not per step: one lock is enough.
struct InUse {
    std::mutex mu;
    std::unordered_map<const vt_buffer *, vt_device *> buffers;
    std::unordered_map<const vt_device *, uint64_t> bytes;
};
InUse &in_use() {
    static InUse *u = new InUse();  // never destroyed: buffers may be freed at exit
    return *u;
}
} // namespace

BufferPtr buffer_alloc(vt_device *dev, size_t size, const char *what) {
    vt_buffer_type *bt = dev->iface->get_buffer_type(dev);
    vt_buffer *b = bt->iface->alloc(bt, size ? size : 1);
    if (!b)
        fail(VT_ERR_OUT_OF_MEMORY, "%s: cannot allocate %.2f MiB on %s (%.2f MiB free)", what,
             (double)size / (1 << 20), device_name(dev).c_str(), (double)device_memory_room(dev) / (1 << 20));
    InUse &u = in_use();
    std::lock_guard<std::mutex> lk(u.mu);
    u.buffers[b] = dev;
    u.bytes[dev] += b->size;
    return BufferPtr(b);
}

void buffer_free(vt_buffer *b) {
    if (!b) return;
    {
        InUse &u = in_use();
        std::lock_guard<std::mutex> lk(u.mu);
        auto it = u.buffers.find(b);
        if (it != u.buffers.end()) {
            u.bytes[it->second] -= b->size;
            u.buffers.erase(it);
        }
    }
    b->iface->free(b);
}

uint64_t device_bytes_in_use(vt_device *dev) {
    InUse &u = in_use();
    std::lock_guard<std::mutex> lk(u.mu);
    auto it = u.bytes.find(dev);
    return it == u.bytes.end() ? 0 : it->second;
}

uint64_t device_memory_room(vt_device *dev) {
    if (device_is_host(dev)) return available_memory_bytes();
    const vt_device_props p = device_props(dev);
    const uint64_t held = device_bytes_in_use(dev);
    const uint64_t unheld = p.memory_total > held ? p.memory_total - held : 0;
    return std::min(p.memory_free, unheld);
}

StreamPtr stream_create(vt_device *dev, uint32_t n_threads) {
    vt_stream_params p{n_threads};
    vt_stream *s = dev->iface->stream_create(dev, &p);
    if (!s) fail(VT_ERR_INTERNAL, "device %s: cannot create a stream", device_name(dev).c_str());
    return StreamPtr(s);
}

bool tensor_is_host(const Tensor &t) { return !t.buffer || t.buffer->buft->iface->is_host(t.buffer->buft); }

namespace {
size_t offset_in(const Tensor &t, size_t offset, size_t n) {
    vt_buffer *b = t.buffer;
    const size_t at = (size_t)(static_cast<const uint8_t *>(t.data) -
                               static_cast<const uint8_t *>(b->iface->get_base(b))) + offset;
    if (at + n > b->size) fail(VT_ERR_INTERNAL, "tensor copy of %zu bytes at %zu past a buffer of %zu", n, at, b->size);
    return at;
}
} // namespace

void tensor_set(const Tensor &t, const void *src, size_t offset, size_t n) {
    if (n == 0) return;
    if (tensor_is_host(t)) {
        std::memcpy(static_cast<uint8_t *>(t.data) + offset, src, n);
        return;
    }
    vt_status st = t.buffer->iface->set(t.buffer, src, offset_in(t, offset, n), n);
    if (st != VT_OK) fail(st, "cannot write %zu bytes of tensor %s to its device", n, t.name ? t.name : "?");
}

void tensor_get(const Tensor &t, void *dst, size_t offset, size_t n) {
    if (n == 0) return;
    if (tensor_is_host(t)) {
        std::memcpy(dst, static_cast<const uint8_t *>(t.data) + offset, n);
        return;
    }
    vt_status st = t.buffer->iface->get(t.buffer, dst, offset_in(t, offset, n), n);
    if (st != VT_OK) fail(st, "cannot read %zu bytes of tensor %s from its device", n, t.name ? t.name : "?");
}

} // namespace vt
