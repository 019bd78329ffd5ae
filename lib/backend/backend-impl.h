// The backend interface: C vtables, so that backends built as separate
// modules (by other compilers, e.g. nvcc, or loaded with dlopen) plug in
// without C++ ABI coupling. The shape is ggml-backend's:
//
//   registry -> device -> buffer type -> buffer (memory holding tensors)
//                      -> stream (executes graphs on the device)
//
// Each object is {iface; context} plus its parent. Memory and objects are
// freed by the module that made them, through their own iface->free.
// Tensors cross the vtable as vt::Tensor (plain C layout, core/tensor.h):
// t.buffer names the buffer holding t, and t.data is
// iface->get_base(buffer) + offset. For a host buffer that is a host pointer;
// for device memory it is an address only that device's module interprets
// (nothing above lib/backend dereferences it).
//
// Threading: a buffer's set/get and a stream's graph_compute are called from
// one thread at a time per stream; objects of different streams may be used
// concurrently. Entries marked (optional) may be NULL.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"
#include "vt/vt_common.h"
#include "vt/vt_device.h"  // vt_device_type

// Bumped on any change of the structs below; a module built for another
// version is refused at load. 4: Node holds 8 sources (kMaxSrc), and the op
// list grew the linear-attention ops (UNARY onwards in core/ops.def).
#define VT_BACKEND_API_VERSION 4

extern "C" {

typedef struct vt_backend_reg vt_backend_reg;
typedef struct vt_device vt_device;
typedef struct vt_buffer_type vt_buffer_type;
typedef struct vt_stream vt_stream;
// struct vt_buffer is declared in core/tensor.h (a tensor names its buffer).

// ---- buffer: one allocation of a buffer type -----------------------------

typedef struct vt_buffer_i {
    void (*free)(vt_buffer *buf);
    // Address of byte 0: tensors in the buffer have data = base + offset.
    void *(*get_base)(vt_buffer *buf);
    // Copies n bytes between host memory and [offset, offset + n) of the
    // buffer; done when they return. src may be a file mapping (weights are
    // uploaded straight from it). Return VT_OK or an error (logged).
    vt_status (*set)(vt_buffer *buf, const void *src, size_t offset, size_t n);
    vt_status (*get)(vt_buffer *buf, void *dst, size_t offset, size_t n);
    // Sets every byte to value.
    vt_status (*clear)(vt_buffer *buf, uint8_t value);
} vt_buffer_i;

struct vt_buffer {
    const vt_buffer_i *iface;
    vt_buffer_type *buft;
    void *context;
    size_t size;
};

// ---- buffer type: a kind of memory of a device ---------------------------

typedef struct vt_buffer_type_i {
    const char *(*get_name)(vt_buffer_type *buft);
    // A buffer of at least size bytes (contents undefined), or NULL when the
    // memory cannot be had (the caller reports VT_ERR_OUT_OF_MEMORY).
    vt_buffer *(*alloc)(vt_buffer_type *buft, size_t size);
    // Alignment of base + offset that tensors need.
    size_t (*get_alignment)(vt_buffer_type *buft);
    // The largest single allocation (callers split bigger sets of tensors
    // over several buffers; one tensor must fit in one).
    size_t (*get_max_size)(vt_buffer_type *buft);
    // Whether base + offset is host memory the CPU may read and write.
    bool (*is_host)(vt_buffer_type *buft);
    // (optional) Puts a weight into a layout of the device's own that its
    // kernels read faster (the CPU's _X16). t is a matrix the loader is
    // about to use (a MUL_MAT or GET_ROWS weight), in the file's row layout
    // (t->layout 0) at host memory: the file mapping or a copy the loader
    // made. Where the device has such a layout for t, writes the converted
    // copy into a new buffer of this type, points t at it (data, buffer,
    // layout; type and shape stay) and sets *out to that buffer, which the
    // caller then owns and frees. Otherwise sets *out to NULL and leaves t
    // alone. Returns VT_OK, or VT_ERR_OUT_OF_MEMORY when the copy's memory
    // cannot be had.
    vt_status (*prepare_weight)(vt_buffer_type *buft, vt::Tensor *t, vt_buffer **out);
} vt_buffer_type_i;

struct vt_buffer_type {
    const vt_buffer_type_i *iface;
    vt_device *device;
    void *context;
};

// ---- stream: executes graphs on a device ----------------------------------

typedef struct vt_stream_params {
    uint32_t n_threads;  // host threads the stream may use (0: the module's default)
} vt_stream_params;

typedef struct vt_stream_i {
    void (*free)(vt_stream *stream);
    // Computes nodes in order and returns when the results are in their
    // buffers. Every tensor a node reads or writes is in a buffer the device
    // supports (vt_device_i::supports_buft) and every node is one it supports
    // (supports_op); the graph splitter (lib/backend) guarantees both.
    // Returns VT_OK or an error status (with a message via the logger).
    vt_status (*graph_compute)(vt_stream *stream, const vt::Node *nodes, int n_nodes);
} vt_stream_i;

struct vt_stream {
    const vt_stream_i *iface;
    vt_device *device;
    void *context;
};

// ---- device ----------------------------------------------------------------


typedef struct vt_device_props {
    const char *name;         // unique among all devices: "cpu", "vulkan0"
    const char *description;  // the driver's words: "llvmpipe (LLVM 15.0.6, 256 bits)"
    vt_device_type type;      // vt/vt_device.h
    uint64_t memory_total;    // bytes the device can allocate
    uint64_t memory_free;     // bytes free now (memory_total when not known)
} vt_device_props;

typedef struct vt_device_i {
    // Strings stay valid as long as the device.
    void (*get_props)(vt_device *dev, vt_device_props *props);
    // Memory the device computes on.
    vt_buffer_type *(*get_buffer_type)(vt_device *dev);
    // Whether the device computes node (its op, types, shapes, params).
    bool (*supports_op)(vt_device *dev, const vt::Node *node);
    // Whether the device reads and writes tensors in buffers of type buft.
    bool (*supports_buft)(vt_device *dev, vt_buffer_type *buft);
    // (optional) A buffer over host memory the caller owns (a file mapping):
    // weights used in place. NULL when the device cannot use it.
    vt_buffer *(*buffer_from_host_ptr)(vt_device *dev, void *ptr, size_t size);
    // A stream for this device, or NULL (logged) when it cannot be made.
    vt_stream *(*stream_create)(vt_device *dev, const vt_stream_params *params);
} vt_device_i;

struct vt_device {
    const vt_device_i *iface;
    vt_backend_reg *reg;
    void *context;
};

// ---- registry: what a module exports --------------------------------------

typedef struct vt_backend_reg_i {
    uint32_t api_version;  // VT_BACKEND_API_VERSION the module was built with
    const char *(*get_name)(vt_backend_reg *reg);  // "cpu", "vulkan"
    size_t (*device_count)(vt_backend_reg *reg);
    vt_device *(*device_get)(vt_backend_reg *reg, size_t index);
    // (optional) Frees the registry and its devices (at library unload).
    void (*free)(vt_backend_reg *reg);
} vt_backend_reg_i;

struct vt_backend_reg {
    const vt_backend_reg_i *iface;
    void *context;
};

// What libvt hands a module at init: the module links its own copy of
// lib/core, so its log lines go through libvt's sink (vt_log_set) here.
typedef struct vt_backend_host {
    uint32_t api_version;  // VT_BACKEND_API_VERSION of libvt
    void (*log)(vt_log_level level, const char *text);
} vt_backend_host;

// The one symbol a backend module exports (VT_BACKEND_INIT_SYMBOL). Returns
// NULL, after logging why, when the module has no usable device (no driver,
// no GPU) or host->api_version is not its own; libvt then runs without it.
// Called once per process.
typedef vt_backend_reg *(*vt_backend_init_fn)(const vt_backend_host *host);
#define VT_BACKEND_INIT_SYMBOL "vt_backend_init"

} // extern "C"
