/* What vt-membw and vt-flops share: a barrier for their threads, a
 * monotonic clock in seconds and a qsort comparison for doubles. Plain C99
 * with POSIX threads; each tool includes it once. */
#ifndef VT_BENCH_THREADS_H
#define VT_BENCH_THREADS_H

#include <pthread.h>
#include <time.h>

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int count, n, phase;
} barrier_t; /* pthread_barrier_t is optional in POSIX (absent on macOS) */

static void barrier_init(barrier_t *b, int n) {
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    b->count = 0;
    b->n = n;
    b->phase = 0;
}

static void barrier_wait(barrier_t *b) {
    pthread_mutex_lock(&b->mu);
    int phase = b->phase;
    if (++b->count == b->n) {
        b->count = 0;
        b->phase++;
        pthread_cond_broadcast(&b->cv);
    } else {
        while (phase == b->phase) pthread_cond_wait(&b->cv, &b->mu);
    }
    pthread_mutex_unlock(&b->mu);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#endif
