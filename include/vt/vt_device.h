/* vt_device.h - compute devices: what this process can run models on.
 *
 * libvt always has the CPU ("cpu"). Backend modules (libvt-backend-<name>.so)
 * add devices when they load: at first use libvt loads every such file in
 * each directory of $VT_BACKEND_PATH (':'-separated), then in "vt/" beside
 * libvt itself (where they are installed), then beside libvt (the Python
 * package), then the modules of its build tree ("backends/<name>/" beside
 * libvt); the first module of a backend name
 * wins. A module that cannot be loaded (e.g. no libvulkan on the machine),
 * was built for another backend interface, or finds no device is skipped
 * with a log line; the CPU remains.
 *
 * A model's weights are placed on one device at load (vt_model_params.device)
 * and its contexts compute there; ops a device lacks run on the CPU, with the
 * copies in between logged. Since ABI 1.4. */
#ifndef VT_DEVICE_H
#define VT_DEVICE_H

#include "vt_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum vt_device_type {
    VT_DEVICE_TYPE_CPU = 0,
    VT_DEVICE_TYPE_GPU = 1,   /* a discrete GPU */
    VT_DEVICE_TYPE_IGPU = 2,  /* an integrated GPU (memory shared with the host) */
    VT_DEVICE_TYPE_OTHER = 3  /* e.g. a software implementation such as Mesa's lavapipe */
} vt_device_type;

typedef struct vt_device_info {
    uint32_t struct_size;     /* sizeof(vt_device_info), set by the caller */
    const char *name;         /* unique: "cpu", "vulkan0", ...; pass it as vt_model_params.device */
    const char *backend;      /* "cpu", "vulkan" */
    const char *description;  /* the hardware or driver's name */
    vt_device_type type;
    uint64_t memory_total;    /* bytes the device can allocate */
    uint64_t memory_free;     /* bytes free now (memory_total when not known) */
} vt_device_info;

/* Number of devices (>= 1: index 0 is "cpu"). Loads the backend modules on
 * the first call. Thread-safe. */
VT_API size_t vt_device_count(void);

/* Fills *info (info->struct_size set by the caller; fields beyond it are
 * not written) for device index < vt_device_count(). Strings stay valid for
 * the life of the process. Errors: VT_ERR_INVALID_ARGUMENT (NULL info, a
 * struct_size too small for the 1.4 fields), VT_ERR_NOT_FOUND (index out
 * of range). Thread-safe. */
VT_API vt_status vt_device_get_info(size_t index, vt_device_info *info);

#ifdef __cplusplus
}
#endif

#endif /* VT_DEVICE_H */
