/* vt-flops: peak f32 FMA throughput, the roofline of F16 prefill.
 *
 *   vt-flops [-t THREADS] [-r REPS] [--json]
 *
 * Each of THREADS threads (default: all online CPUs) runs independent chains
 * of vector FMAs (12 accumulators: enough to cover the FMA latency of 2 units
 * on current x86 cores) on registers only, with the widest vectors the CPU
 * has: 512-bit with AVX-512F, else 256-bit with AVX2 and FMA. $VT_CPU_ISA=avx2
 * caps it at 256 bits, as it caps vt's kernels. One repetition = every thread
 * runs its chains once; time from a common start to the last thread's end.
 * Prints the best GFLOP/s (an FMA is 2 flops) of REPS (default 5) and the
 * median.
 *
 * An F16 matrix product on these CPUs converts the weights to f32 and runs
 * f32 FMAs (Zen 4 and most Intel cores have no f16 arithmetic), so prefill
 * tokens/s cannot pass this peak / (2 x multiply-adds per token):
 * compare-llama-bench.py prints that bound for F16 files.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if !defined(__x86_64__)
int main(void) {
    fprintf(stderr, "vt-flops: only x86-64 is measured so far\n");
    return 2;
}
#else
#include <immintrin.h>

#include "bench-threads.h"

enum { kChains = 12 };
static const int64_t kIters = 20 * 1000 * 1000; /* ~0.1-0.3 s per repetition */

__attribute__((target("avx512f"))) static float chains_avx512(int64_t n) {
    __m512 acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps((float)i);
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
    for (int64_t k = 0; k < n; ++k)
        for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
    float s = 0;
    for (int i = 0; i < kChains; ++i) s += _mm512_reduce_add_ps(acc[i]);
    return s;
}

__attribute__((target("avx2,fma"))) static float chains_avx2(int64_t n) {
    __m256 acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps((float)i);
    const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    for (int64_t k = 0; k < n; ++k)
        for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
    float out[8], s = 0;
    for (int i = 0; i < kChains; ++i) {
        _mm256_storeu_ps(out, acc[i]);
        for (int j = 0; j < 8; ++j) s += out[j];
    }
    return s;
}

typedef struct {
    int id, reps, wide;
    barrier_t *bar;
    double *secs; /* per repetition, written by thread 0 */
    float sink;
} worker_t;

static float chains(int wide, int64_t n) { return wide ? chains_avx512(n) : chains_avx2(n); }

static void *work(void *arg) {
    worker_t *w = (worker_t *)arg;
    w->sink = chains(w->wide, kIters / 4); /* warm: frequency */
    for (int r = 0; r < w->reps; ++r) {
        barrier_wait(w->bar);
        double t0 = w->id == 0 ? now_s() : 0.0;
        w->sink += chains(w->wide, kIters);
        barrier_wait(w->bar);
        if (w->id == 0) w->secs[r] = now_s() - t0;
    }
    return NULL;
}

static void usage(FILE *f) {
    fprintf(f, "usage: vt-flops [-t THREADS] [-r REPS] [--json]\n"
               "  -t N    threads (default: online CPUs)\n"
               "  -r N    repetitions, best and median reported (default 5)\n"
               "  --json  one JSON object\n");
}

int main(int argc, char **argv) {
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = ncpu > 0 ? (int)ncpu : 1, reps = 5, json = 0;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if ((!strcmp(a, "-t") || !strcmp(a, "--threads")) && i + 1 < argc) threads = atoi(argv[++i]);
        else if ((!strcmp(a, "-r") || !strcmp(a, "--reps")) && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(a, "--json")) json = 1;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (threads < 1 || threads > 4096 || reps < 1 || reps > 10000) {
        usage(stderr);
        return 2;
    }
    __builtin_cpu_init();
    const char *cap = getenv("VT_CPU_ISA");
    const int capped = cap && !strcmp(cap, "avx2");
    const int wide = !capped && __builtin_cpu_supports("avx512f");
    if (!wide && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) {
        fprintf(stderr, "vt-flops: this CPU has neither AVX-512F nor AVX2 with FMA\n");
        return 2;
    }
    worker_t *w = calloc((size_t)threads, sizeof *w);
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    double *secs = calloc((size_t)reps, sizeof *secs), *gf = calloc((size_t)reps, sizeof *gf);
    if (!w || !tid || !secs || !gf) return 1;
    barrier_t bar;
    barrier_init(&bar, threads);
    for (int i = 0; i < threads; ++i) w[i] = (worker_t){i, reps, wide, &bar, secs, 0.0f};
    for (int i = 1; i < threads; ++i)
        if (pthread_create(&tid[i], NULL, work, &w[i]) != 0) {
            fprintf(stderr, "vt-flops: pthread_create failed\n");
            return 1;
        }
    work(&w[0]);
    float sink = w[0].sink;
    for (int i = 1; i < threads; ++i) {
        pthread_join(tid[i], NULL);
        sink += w[i].sink;
    }
    const double flops = 2.0 * (wide ? 16 : 8) * kChains * (double)kIters * threads;
    for (int r = 0; r < reps; ++r) gf[r] = flops / secs[r] / 1e9;
    qsort(gf, (size_t)reps, sizeof *gf, cmp_double);
    const double best = gf[reps - 1], median = reps % 2 ? gf[reps / 2] : 0.5 * (gf[reps / 2 - 1] + gf[reps / 2]);
    const char *isa = wide ? "avx512" : "avx2";
    if (json)
        printf("{\"threads\": %d, \"isa\": \"%s\", \"reps\": %d, \"best_gflops\": %.2f, \"median_gflops\": %.2f}\n",
               threads, isa, reps, best, median);
    else
        printf("f32 FMA peak, %d thread%s, %s: best %.1f GFLOP/s, median %.1f GFLOP/s (%d reps)\n", threads,
               threads == 1 ? "" : "s", isa, best, median, reps);
    if (sink == 12345.0f) fprintf(stderr, " "); /* keep the chains alive */
    free(w);
    free(tid);
    free(secs);
    free(gf);
    return 0;
}
#endif
