/* vt-flops: peak arithmetic throughput, the rooflines of F16/BF16 and
 * quantized prefill.
 *
 *   vt-flops [-t THREADS] [-r REPS] [--json] [--cpu-time]
 *
 * Each of THREADS threads (default: all online CPUs) runs independent chains
 * (12 accumulators: enough to cover the latency of 2 units on current x86
 * cores) of one instruction on registers only. One repetition = every thread
 * runs its chains once; time from a common start to the last thread's end.
 * Prints the best of REPS (default 5) and the median for each peak the CPU
 * has (cpuid, at run time):
 *   - f32 FMA, with the widest vectors: 512-bit with AVX-512F, else 256-bit
 *     with AVX2 and FMA (an FMA is 2 flops). F16 weights are multiplied as
 *     f32 on these CPUs (Zen 4/5 and most Intel cores have no f16
 *     arithmetic), so F16 prefill cannot pass this peak.
 *   - bf16 dot (vdpbf16ps zmm, AVX512_BF16): 32 multiply-adds per
 *     instruction, 64 flops; BF16_X16 prefill's roofline.
 *   - int8 dot (vpdpbusd, VNNI): zmm (AVX512_VNNI) 64 u8 x s8 multiply-adds,
 *     128 ops; ymm (AVX512_VNNI + VL, or AVX-VNNI) 64 ops. The roofline of
 *     quantized prefill with int8 activations (GOP/s, 2 ops per weight per
 *     token).
 * $VT_CPU_ISA=avx2 caps it at 256 bits, as it caps vt's kernels: the f32
 * peak is AVX2's, bf16 and zmm VNNI are not measured, ymm VNNI only with
 * AVX-VNNI.
 *
 * --cpu-time divides by each thread's CPU time instead (the slowest
 * thread's): a per-CPU-second peak, as perf-matmul reports its rates, which
 * a loaded machine (other processes sharing the cores) lowers far less.
 *
 * --json prints one object: threads, isa, reps, best_gflops and
 * median_gflops (f32 FMA), and bf16_best_gflops, bf16_median_gflops,
 * vnni512_best_gops, vnni512_median_gops, vnni256_best_gops,
 * vnni256_median_gops (null where the CPU lacks the instruction).
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

/* vdpbf16ps: acc += a.even * b.even + a.odd * b.odd per f32 lane. Small
 * constant inputs keep the sums finite and normal over every iteration. */
__attribute__((target("avx512f,avx512bf16"))) static float chains_bf16(int64_t n) {
    __m512 acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps((float)i);
    const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3a83), b = (__m512bh)_mm512_set1_epi16(0x3a83); /* ~1e-3 */
    for (int64_t k = 0; k < n; ++k)
        for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
    float s = 0;
    for (int i = 0; i < kChains; ++i) s += _mm512_reduce_add_ps(acc[i]);
    return s;
}

/* vpdpbusd: acc += 4 products u8 x s8 per i32 lane (wraps; never read but
 * for the sink). */
__attribute__((target("avx512f,avx512vnni"))) static float chains_vnni512(int64_t n) {
    __m512i acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_epi32(i);
    const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-5);
    for (int64_t k = 0; k < n; ++k)
        for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
    int s = 0;
    for (int i = 0; i < kChains; ++i) s += _mm512_reduce_add_epi32(acc[i]);
    return (float)s;
}

#define VNNI256_BODY(DP)                                                    \
    __m256i acc[kChains];                                                   \
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_epi32(i);       \
    const __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-5);        \
    for (int64_t k = 0; k < n; ++k)                                         \
        for (int i = 0; i < kChains; ++i) acc[i] = DP(acc[i], a, b);        \
    int out[8], s = 0;                                                      \
    for (int i = 0; i < kChains; ++i) {                                     \
        _mm256_storeu_si256((__m256i *)out, acc[i]);                        \
        for (int j = 0; j < 8; ++j) s += out[j];                            \
    }                                                                       \
    return (float)s;

/* The EVEX form (AVX512_VNNI + VL) and the VEX one (AVX-VNNI): the same
 * operation, AVX-VNNI being the one an AVX2-only build can use. */
__attribute__((target("avx512f,avx512vl,avx512vnni"))) static float chains_vnni256_evex(int64_t n) {
    VNNI256_BODY(_mm256_dpbusd_epi32)
}
__attribute__((target("avx2,avxvnni"))) static float chains_vnni256_vex(int64_t n) {
    VNNI256_BODY(_mm256_dpbusd_avx_epi32)
}

/* What a run measures: kind and the ops one chains() call of n iterations
 * counts per thread. */
enum { kF32 = 0, kBf16, kVnni512, kVnni256Evex, kVnni256Vex };

typedef struct {
    int id, reps, wide, kind, cpu_clock;
    barrier_t *bar;
    double *secs; /* per repetition: thread 0's wall time, or every thread's CPU time (threads x reps) */
    float sink;
} worker_t;

static double thread_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static float chains(int wide, int kind, int64_t n) {
    switch (kind) {
    case kBf16: return chains_bf16(n);
    case kVnni512: return chains_vnni512(n);
    case kVnni256Evex: return chains_vnni256_evex(n);
    case kVnni256Vex: return chains_vnni256_vex(n);
    default: return wide ? chains_avx512(n) : chains_avx2(n);
    }
}

/* Operations per instruction: an FMA lane 2, a vdpbf16ps lane 4, a
 * vpdpbusd lane 8. */
static double ops_per_instr(int wide, int kind) {
    switch (kind) {
    case kBf16: return 64.0;
    case kVnni512: return 128.0;
    case kVnni256Evex:
    case kVnni256Vex: return 64.0;
    default: return 2.0 * (wide ? 16 : 8);
    }
}

static void *work(void *arg) {
    worker_t *w = (worker_t *)arg;
    w->sink = chains(w->wide, w->kind, kIters / 4); /* warm: frequency */
    for (int r = 0; r < w->reps; ++r) {
        barrier_wait(w->bar);
        const double t0 = w->cpu_clock ? thread_cpu_s() : w->id == 0 ? now_s() : 0.0;
        w->sink += chains(w->wide, w->kind, kIters);
        barrier_wait(w->bar);
        if (w->cpu_clock) w->secs[(size_t)w->id * w->reps + r] = thread_cpu_s() - t0;
        else if (w->id == 0) w->secs[r] = now_s() - t0;
    }
    return NULL;
}

static void usage(FILE *f) {
    fprintf(f, "usage: vt-flops [-t THREADS] [-r REPS] [--json] [--cpu-time]\n"
               "  -t N    threads (default: online CPUs)\n"
               "  -r N    repetitions, best and median reported (default 5)\n"
               "  --json  one JSON object\n"
               "  --cpu-time  rates per CPU-second of each thread, not per wall second: the\n"
               "          peak of a core this process gets, on a machine others load\n");
}

typedef struct {
    double best, median;
} peak_t;

/* One peak: every thread runs `kind` REPS times; best and median in G ops/s. */
static int measure(int threads, int reps, int wide, int kind, int cpu_clock, peak_t *out) {
    worker_t *w = calloc((size_t)threads, sizeof *w);
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    double *secs = calloc((size_t)reps * threads, sizeof *secs), *gf = calloc((size_t)reps, sizeof *gf);
    if (!w || !tid || !secs || !gf) return 1;
    barrier_t bar;
    barrier_init(&bar, threads);
    for (int i = 0; i < threads; ++i) w[i] = (worker_t){i, reps, wide, kind, cpu_clock, &bar, secs, 0.0f};
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
    const double ops = ops_per_instr(wide, kind) * kChains * (double)kIters * threads;
    for (int r = 0; r < reps; ++r) {
        double t = secs[r]; /* with --cpu-time: the slowest thread's CPU seconds */
        for (int i = 1; cpu_clock && i < threads; ++i) t = secs[(size_t)i * reps + r] > t ? secs[(size_t)i * reps + r] : t;
        gf[r] = ops / t / 1e9;
    }
    qsort(gf, (size_t)reps, sizeof *gf, cmp_double);
    out->best = gf[reps - 1];
    out->median = reps % 2 ? gf[reps / 2] : 0.5 * (gf[reps / 2 - 1] + gf[reps / 2]);
    if (sink == 12345.0f) fprintf(stderr, " "); /* keep the chains alive */
    free(w);
    free(tid);
    free(secs);
    free(gf);
    return 0;
}

static void print_json_peak(const char *name, const char *unit, int have, const peak_t *p) {
    if (have) printf(", \"%s_best_%s\": %.2f, \"%s_median_%s\": %.2f", name, unit, p->best, name, unit, p->median);
    else printf(", \"%s_best_%s\": null, \"%s_median_%s\": null", name, unit, name, unit);
}

int main(int argc, char **argv) {
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = ncpu > 0 ? (int)ncpu : 1, reps = 5, json = 0, cpu_clock = 0;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if ((!strcmp(a, "-t") || !strcmp(a, "--threads")) && i + 1 < argc) threads = atoi(argv[++i]);
        else if ((!strcmp(a, "-r") || !strcmp(a, "--reps")) && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(a, "--json")) json = 1;
        else if (!strcmp(a, "--cpu-time")) cpu_clock = 1;
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
    const int has_bf16 = wide && __builtin_cpu_supports("avx512bf16");
    const int has_vnni512 = wide && __builtin_cpu_supports("avx512vnni");
    const int vnni256 = has_vnni512 && __builtin_cpu_supports("avx512vl") ? kVnni256Evex
                        : __builtin_cpu_supports("avxvnni")               ? kVnni256Vex
                                                                          : -1;
    peak_t f32 = {0, 0}, bf16 = {0, 0}, v512 = {0, 0}, v256 = {0, 0};
    if (measure(threads, reps, wide, kF32, cpu_clock, &f32) || (has_bf16 && measure(threads, reps, wide, kBf16, cpu_clock, &bf16)) ||
        (has_vnni512 && measure(threads, reps, wide, kVnni512, cpu_clock, &v512)) ||
        (vnni256 >= 0 && measure(threads, reps, wide, vnni256, cpu_clock, &v256)))
        return 1;
    const char *isa = wide ? "avx512" : "avx2";
    const char *s = threads == 1 ? "" : "s";
    if (json) {
        printf("{\"threads\": %d, \"isa\": \"%s\", \"reps\": %d, \"best_gflops\": %.2f, \"median_gflops\": %.2f",
               threads, isa, reps, f32.best, f32.median);
        print_json_peak("bf16", "gflops", has_bf16, &bf16);
        print_json_peak("vnni512", "gops", has_vnni512, &v512);
        print_json_peak("vnni256", "gops", vnni256 >= 0, &v256);
        printf("}\n");
        return 0;
    }
    printf("f32 FMA peak, %d thread%s, %s: best %.1f GFLOP/s, median %.1f GFLOP/s (%d reps)\n", threads, s, isa,
           f32.best, f32.median, reps);
    if (has_bf16)
        printf("bf16 dot peak (vdpbf16ps zmm), %d thread%s: best %.1f GFLOP/s, median %.1f GFLOP/s\n", threads, s,
               bf16.best, bf16.median);
    if (has_vnni512)
        printf("int8 dot peak (vpdpbusd zmm), %d thread%s: best %.1f GOP/s, median %.1f GOP/s\n", threads, s, v512.best,
               v512.median);
    if (vnni256 >= 0)
        printf("int8 dot peak (vpdpbusd ymm, %s), %d thread%s: best %.1f GOP/s, median %.1f GOP/s\n",
               vnni256 == kVnni256Evex ? "EVEX" : "AVX-VNNI", threads, s, v256.best, v256.median);
    return 0;
}
#endif
