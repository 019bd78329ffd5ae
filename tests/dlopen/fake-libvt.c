/* A stand-in for libvt that the dlopen consumers must refuse cleanly:
 * built with FAKE_ABI_VERSION = (VT_ABI_MAJOR + 1) << 16 it is a library of a
 * future, incompatible ABI; built with VT_ABI_VERSION it passes the version
 * check but lacks every other vt_ function ("no symbol vt_last_error"). */
#include <stdint.h>

#include "vt_version.h"

#ifndef FAKE_ABI_VERSION
#error "define FAKE_ABI_VERSION"
#endif

__attribute__((visibility("default"))) uint32_t vt_abi_version(void);
__attribute__((visibility("default"))) const char *vt_version(void);

uint32_t vt_abi_version(void) { return (uint32_t)(FAKE_ABI_VERSION); }
const char *vt_version(void) { return "fake"; }
