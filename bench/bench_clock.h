/* bench/bench_clock.h — what every benchmark program measures the same way, in C so that the
 * llama.cpp peer (bench/llama_bench.c) shares it with headlab's (bench/engine_bench.cpp):
 * wall and CPU clocks, resident memory, the median of the timed repeats, the token ids every
 * side is fed, and the dump of the last position's logits that the scripts compare.
 *
 *   double t0 = bench_wall_ms();  ...;  times[r] = bench_wall_ms() - t0;
 *   printf("median_ms=%.1f peak_rss_mb=%.0f\n", bench_median(times, n), bench_peak_rss_mb());
 *
 * The Python peers (bench/bench_common.py) print the same fields from the same definitions.
 */
#ifndef HEADLAB_BENCH_CLOCK_H
#define HEADLAB_BENCH_CLOCK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double bench_clock_ms(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}
static inline double bench_wall_ms(void) { return bench_clock_ms(CLOCK_MONOTONIC); }
/* every thread's CPU time: tells the work apart from waiting on a busy machine */
static inline double bench_cpu_ms(void) { return bench_clock_ms(CLOCK_PROCESS_CPUTIME_ID); }

/* A field of /proc/self/status in MB ("VmHWM:" the peak resident set, "VmRSS:" the current one). */
static inline double bench_status_mb(const char* field) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  double mb = -1;
  if (!f) return -1;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, field, strlen(field)) == 0) mb = atof(line + strlen(field)) / 1024.0;
  fclose(f);
  return mb;
}
static inline double bench_peak_rss_mb(void) { return bench_status_mb("VmHWM:"); }
static inline double bench_rss_mb(void) { return bench_status_mb("VmRSS:"); }

/* The id of position t among V: 13, 7932, ... spread over the vocabulary, the same on every side. */
static inline int bench_token_id(int t, int V) { return (int)(((uint64_t)t * 7919u + 13u) % (uint64_t)V); }

static inline int bench_compare_doubles(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}
/* Sorts v (n >= 1) and returns its median (the upper one of an even count). */
static inline double bench_median(double* v, int n) {
  qsort(v, (size_t)n, sizeof v[0], bench_compare_doubles);
  return v[n / 2];
}

static inline int bench_argmax(const float* x, int n) {
  int best = 0;
  for (int i = 1; i < n; i++)
    if (x[i] > x[best]) best = i;
  return best;
}

/* Writes n float32 (little-endian, no header) to path; 0 on success. */
static inline int bench_write_floats(const char* path, const float* x, int n) {
  FILE* f = fopen(path, "wb");
  if (!f) return -1;
  const size_t wrote = fwrite(x, sizeof x[0], (size_t)n, f);
  return (fclose(f) == 0 && wrote == (size_t)n) ? 0 : -1;
}

#endif /* HEADLAB_BENCH_CLOCK_H */
