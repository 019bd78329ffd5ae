// The backend interface: a small C vtable, so that backends built as separate
// modules (by other compilers, e.g. nvcc) plug in without C++ ABI coupling.
// Shape as in ggml: {iface; context}. Entries marked (optional) may be NULL.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"
#include "vt/vt_common.h"

#define VT_BACKEND_API_VERSION 1

extern "C" {

typedef struct vt_backend_i {
    uint32_t api_version;  // VT_BACKEND_API_VERSION
    const char *(*get_name)(void *ctx);
    // Whether the backend computes node (its op, types and shapes).
    bool (*supports_op)(void *ctx, const vt::Node *node);
    // Computes nodes in order. Tensors' data are host pointers (weights in
    // the model mapping, intermediates in an arena from alloc_host).
    // Returns VT_OK or an error status (with a message via the logger).
    vt_status (*graph_compute)(void *ctx, const vt::Node *nodes, int n_nodes);
    // (optional) memory for intermediates; defaults to aligned host malloc.
    void *(*alloc_host)(void *ctx, size_t size);
    void (*free_host)(void *ctx, void *ptr);
    void (*free)(void *ctx);
} vt_backend_i;

typedef struct vt_backend {
    const vt_backend_i *iface;
    void *context;
} vt_backend;

typedef struct vt_backend_params {
    uint32_t n_threads;
} vt_backend_params;

} // extern "C"

namespace vt {

// Creates a backend by name ("cpu"). Throws vt::Error(VT_ERR_NOT_FOUND)
// for an unknown name. Free it with backend_free.
vt_backend *backend_create(const char *name, const vt_backend_params &params);
void backend_free(vt_backend *backend);

} // namespace vt
