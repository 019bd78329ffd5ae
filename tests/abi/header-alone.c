/* Compiled once per public header (meson passes VT_ABI_HEADER and
 * VT_ABI_TAG): each header must compile alone, as strict C99, with nothing
 * included before it. */
#include VT_ABI_HEADER

#define VT_ABI_CAT2_(a, b) a##b
#define VT_ABI_CAT_(a, b) VT_ABI_CAT2_(a, b)

int VT_ABI_CAT_(vt_abi_header_, VT_ABI_TAG)(void);
int VT_ABI_CAT_(vt_abi_header_, VT_ABI_TAG)(void) { return VT_ABI_MAJOR; }
