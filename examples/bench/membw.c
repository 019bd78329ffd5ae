/* vt-membw: STREAM-like memory read bandwidth, the roofline of CPU decode.
 *
 *   vt-membw [-t THREADS] [-s MIB] [-r REPS] [--sweep] [--json]
 *
 * Sums a buffer much larger than the last-level cache (default 1024 MiB) with
 * THREADS threads (default: all online CPUs), each reading its own contiguous
 * share, which it also wrote first (so its pages are really backed, and local
 * to it on NUMA machines). One repetition = all threads read their share once;
 * time from a common start to the last thread's end. Prints the best (highest)
 * GB/s (1 GB = 1e9 bytes) of REPS repetitions (default 5), like STREAM, plus
 * the median. --sweep measures 1..THREADS threads. --json prints one object
 * per thread count, one per line.
 *
 * The kernel adds 64-bit integers into 8 independent accumulators: no
 * floating-point reassociation is needed for the compiler to vectorize it,
 * and the dependency chains never limit a core below its load bandwidth.
 * It runs twice, plainly and asking for every line 8 KiB ahead (software
 * prefetch, as vt's decode tiles do): on the Zen 5 VM of issue 23 the
 * hardware prefetchers alone read 31-35 GB/s on 1 thread, with the requests
 * 37-39. A roofline must bound what a kernel can read, so the reader with
 * the higher best figure is the one reported (both with --json).
 *
 * The buffer is 2 MiB-aligned and advised to transparent huge pages, as vt's
 * repacked weights are (core/pages.h), so the roofline is read the way the
 * engine reads; $VT_HUGE_PAGES=0 leaves out the advice for both.
 */
#define _DEFAULT_SOURCE /* MADV_HUGEPAGE */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <sys/mman.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench-threads.h"

typedef struct {
    uint64_t *buf;
    size_t begin, end; /* in uint64_t elements */
    int reps;
    int prefetch;
    int id;
    barrier_t *bar;
    double *secs; /* per repetition, written by thread 0 */
    uint64_t sink;
} worker_t;

enum { PREFETCH_AHEAD = 1024 }; /* elements: 8 KiB (16 and 32 KiB read the same, 4 KiB less, 2 KiB less than none) */

static uint64_t sum_u64(const uint64_t *p, size_t n, int prefetch) {
    uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        if (prefetch) __builtin_prefetch(p + i + PREFETCH_AHEAD); /* past the end: a hint, never a fault */
        a0 += p[i + 0];
        a1 += p[i + 1];
        a2 += p[i + 2];
        a3 += p[i + 3];
        a4 += p[i + 4];
        a5 += p[i + 5];
        a6 += p[i + 6];
        a7 += p[i + 7];
    }
    for (; i < n; ++i) a0 += p[i];
    return a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}

static void *work(void *arg) {
    worker_t *w = (worker_t *)arg;
    for (size_t i = w->begin; i < w->end; ++i) w->buf[i] = (uint64_t)i * 0x9E3779B97F4A7C15ull;
    uint64_t sink = 0;
    barrier_wait(w->bar);                      /* all pages written */
    sink += sum_u64(w->buf + w->begin, w->end - w->begin, w->prefetch); /* warm: TLB, frequency */
    for (int r = 0; r < w->reps; ++r) {
        barrier_wait(w->bar);
        double t0 = w->id == 0 ? now_s() : 0.0;
        sink += sum_u64(w->buf + w->begin, w->end - w->begin, w->prefetch);
        barrier_wait(w->bar);
        if (w->id == 0) w->secs[r] = now_s() - t0;
    }
    w->sink = sink;
    return NULL;
}

/* Returns 0 on success; fills best and median GB/s and the samples. */
static int measure(uint64_t *buf, size_t n, int threads, int reps, int prefetch, double *gbs) {
    worker_t *w = calloc((size_t)threads, sizeof *w);
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    double *secs = calloc((size_t)reps, sizeof *secs);
    barrier_t bar;
    if (!w || !tid || !secs) return -1;
    barrier_init(&bar, threads);
    for (int i = 0; i < threads; ++i) {
        w[i].buf = buf;
        /* shares aligned to 8 elements (one 64-byte line) */
        w[i].begin = (n / 8 * (size_t)i / (size_t)threads) * 8;
        w[i].end = i + 1 == threads ? n : (n / 8 * (size_t)(i + 1) / (size_t)threads) * 8;
        w[i].reps = reps;
        w[i].prefetch = prefetch;
        w[i].id = i;
        w[i].bar = &bar;
        w[i].secs = secs;
    }
    for (int i = 1; i < threads; ++i) {
        if (pthread_create(&tid[i], NULL, work, &w[i]) != 0) {
            fprintf(stderr, "vt-membw: pthread_create failed\n");
            exit(1);
        }
    }
    work(&w[0]);
    uint64_t sink = w[0].sink;
    for (int i = 1; i < threads; ++i) {
        pthread_join(tid[i], NULL);
        sink += w[i].sink;
    }
    const double bytes = (double)n * sizeof(uint64_t);
    for (int r = 0; r < reps; ++r) gbs[r] = bytes / secs[r] / 1e9;
    if (sink == 0x123) fprintf(stderr, " "); /* keep the sums alive */
    free(w);
    free(tid);
    free(secs);
    return 0;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: vt-membw [-t THREADS] [-s MIB] [-r REPS] [--sweep] [--json]\n"
            "  -t N     threads (default: online CPUs)\n"
            "  -s MIB   buffer size in MiB (default 1024; make it >> last-level cache)\n"
            "  -r N     repetitions, best and median reported (default 5)\n"
            "  --sweep  measure 1..N threads\n"
            "  --json   one JSON object per thread count\n");
}

int main(int argc, char **argv) {
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = ncpu > 0 ? (int)ncpu : 1;
    long mib = 1024;
    int reps = 5, sweep = 0, json = 0;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if ((!strcmp(a, "-t") || !strcmp(a, "--threads")) && i + 1 < argc) threads = atoi(argv[++i]);
        else if ((!strcmp(a, "-s") || !strcmp(a, "--size-mib")) && i + 1 < argc) mib = atol(argv[++i]);
        else if ((!strcmp(a, "-r") || !strcmp(a, "--reps")) && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(a, "--sweep")) sweep = 1;
        else if (!strcmp(a, "--json")) json = 1;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (threads < 1 || threads > 4096 || mib < 1 || reps < 1 || reps > 10000) {
        usage(stderr);
        return 2;
    }
    const size_t bytes = (size_t)mib << 20;
    const size_t n = bytes / sizeof(uint64_t);
    uint64_t *buf = NULL;
    if (posix_memalign((void **)&buf, (size_t)2 << 20, bytes) != 0 || !buf) {
        fprintf(stderr, "vt-membw: cannot allocate %ld MiB\n", mib);
        return 1;
    }
#ifdef MADV_HUGEPAGE
    const char *huge = getenv("VT_HUGE_PAGES");
    if (!huge || strcmp(huge, "0") != 0) madvise(buf, bytes, MADV_HUGEPAGE); /* advice: failure changes nothing */
#endif
    double *gbs[2] = {calloc((size_t)reps, sizeof(double)), calloc((size_t)reps, sizeof(double))};
    double *sorted = calloc((size_t)reps, sizeof *sorted);
    if (!gbs[0] || !gbs[1] || !sorted) return 1;
    static const char *const reader[2] = {"plain", "prefetch"};
    for (int t = sweep ? 1 : threads; t <= threads; ++t) {
        double best[2], median[2];
        for (int p = 0; p < 2; ++p) {
            if (measure(buf, n, t, reps, p, gbs[p]) != 0) {
                fprintf(stderr, "vt-membw: out of memory\n");
                return 1;
            }
            memcpy(sorted, gbs[p], (size_t)reps * sizeof *sorted);
            qsort(sorted, (size_t)reps, sizeof *sorted, cmp_double);
            best[p] = sorted[reps - 1];
            median[p] = reps % 2 ? sorted[reps / 2] : 0.5 * (sorted[reps / 2 - 1] + sorted[reps / 2]);
        }
        const int p = best[1] > best[0];
        if (json) {
            printf("{\"threads\": %d, \"size_bytes\": %zu, \"reps\": %d, \"reader\": \"%s\", \"best_gbs\": %.3f, "
                   "\"median_gbs\": %.3f, \"samples_gbs\": [",
                   t, bytes, reps, reader[p], best[p], median[p]);
            for (int r = 0; r < reps; ++r) printf("%s%.3f", r ? ", " : "", gbs[p][r]);
            printf("], \"%s_best_gbs\": %.3f, \"%s_median_gbs\": %.3f}\n", reader[!p], best[!p], reader[!p],
                   median[!p]);
        } else {
            printf("read bandwidth, %d thread%s, %ld MiB: best %.2f GB/s, median %.2f GB/s (%d reps, %s reader; "
                   "%s: best %.2f)\n",
                   t, t == 1 ? "" : "s", mib, best[p], median[p], reps, reader[p], reader[!p], best[!p]);
        }
        fflush(stdout);
    }
    free(gbs[0]);
    free(gbs[1]);
    free(sorted);
    free(buf);
    return 0;
}
