/* CHECK for the C ABI tests: counts failures in `failures` (each test
 * returns it as its exit status) instead of stopping at the first one. C, so
 * that the tests use nothing but the public headers and the C library. */
#ifndef VT_TEST_ABI_CHECK_H
#define VT_TEST_ABI_CHECK_H

#include <stdio.h>

static int failures = 0;

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__,  \
                    #cond);                                                  \
            ++failures;                                                      \
        }                                                                    \
    } while (0)

#endif /* VT_TEST_ABI_CHECK_H */
