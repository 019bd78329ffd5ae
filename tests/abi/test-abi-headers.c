/* The public headers as C99 (-std=c99 -pedantic -Werror -Wall -Wextra):
 * vt/vt.h here, every header alone in header-alone.c, and as C++ in
 * header-cxx.cpp. At run time: the library's ABI and version strings match
 * the headers this program was built with. */
#include "vt/vt.h"

#include <stdio.h>
#include <string.h>

int vt_abi_cxx_cxx11(void);
int vt_abi_cxx_cxx20(void);

#include "abi-check.h"

int main(void) {
    uint32_t v = vt_abi_version();
    CHECK((v >> 16) == VT_ABI_MAJOR);
    CHECK((int32_t)(v & 0xffffu) >= (int32_t)VT_ABI_MINOR); /* signed: VT_ABI_MINOR may be 0 */
    CHECK(VT_ABI_VERSION == ((VT_ABI_MAJOR << 16) | VT_ABI_MINOR));
    CHECK(vt_version() != NULL && strcmp(vt_version(), VT_VERSION_STRING) == 0);
    CHECK(vt_abi_cxx_cxx11() == 0);
    CHECK(vt_abi_cxx_cxx20() == 0);
    if (failures) return 1;
    printf("libvt %s, ABI %u.%u\n", vt_version(), (unsigned)(v >> 16), (unsigned)(v & 0xffffu));
    return 0;
}
