/* memprof_trace_writer.h: the trace file of the 5.3.0+memprof tracer.

   One writer per process.  Domains encode into their own buffers
   (memprof_tracer.c) and hand whole chunks here; the writer compresses
   them into one LZ4 frame each (or not, uncompressed mode) and appends
   them to the file under a mutex, so the file is always a sequence of
   complete frames followed by at most one partial one. */

#ifndef CAML_MEMPROF_TRACE_WRITER_H
#define CAML_MEMPROF_TRACE_WRITER_H

#ifdef CAML_INTERNALS
#include <stdint.h>
#include "memprof_trace_codec.h"

/* Expand %p (pid), %e (executable basename), %t (Unix time at start: a trace
   restarted by the toggle signal gets a new file) and %% in [template], create
   the file and write the trace header.  On failure print one line on
   stderr and return -1; the program goes on untraced.  The time unit of
   the process's first trace ([info]->time_unit_ns) is its clock's for
   good: later traces' headers say that one. */
int caml_trace_writer_open(const char *template, const mpt_trace_info *info);
/* That unit, in ns (1000 before the first open). */
uint32_t caml_trace_writer_time_unit_ns(void);

/* Time since the trace started, in the trace's time units. */
uint64_t caml_trace_writer_now(void);
/* Where the TSC is not read (CAML_TSC_OFF: the kernel keeps time with
   another clock source, as kvm-clock does in most virtual machines, or
   the TSC was refused), the trap's clock is CLOCK_MONOTONIC read without
   the C library: the vDSO's clock_gettime called directly, which the
   kernel compiles without vector, MMX or x87 instructions (its build
   flags: what the trap asks of what it calls), or, without a vDSO (under
   valgrind), the system call itself.  glibc's clock_gettime in front of
   the vDSO is compiled for the user's machine and promises nothing.
   [start_ns] and [unit_ns] are the writer's: caml_trace_mono_units. */
#include <stdatomic.h>
#include <time.h>
struct caml_trace_mono {
  int (*vdso_gettime)(clockid_t, struct timespec *); /* x86-64; NULL:
                                   none found                        */
  _Atomic uint64_t start_ns;    /* the trace's start, CLOCK_MONOTONIC */
  uint32_t unit_ns;             /* the time unit, in ns              */
};
extern struct caml_trace_mono caml_trace_mono;

/* A CLOCK_MONOTONIC time [ns] in time units since the trace started. */
static inline uint64_t caml_trace_mono_units(uint64_t ns)
{
  uint64_t start = atomic_load_explicit(&caml_trace_mono.start_ns,
                                        memory_order_relaxed);
  return ns > start ? (ns - start) / caml_trace_mono.unit_ns : 0;
}

/* caml_trace_writer_now when it reads the TSC, and only then (1, the time
   in [*now]; else 0): the sample trap's clock, inline (a call cost the
   trap 6 of its instructions), which calls nothing and uses the general
   registers only (memprof_trap.h).  The clock's state is the writer's
   (memprof_trace_writer.c says how it is calibrated and published):
   [state] is CAML_TSC_READY, with release/acquire, once the rest is
   written; then time = base + (tsc - tsc0) * scale / 2^40, in time
   units, and [base] alone changes (at each open), read relaxed. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CAML_TRACE_TSC_CLOCK
#include <x86intrin.h>
enum { CAML_TSC_UNUSED, CAML_TSC_CALIBRATING, CAML_TSC_PUBLISHING,
       CAML_TSC_READY, CAML_TSC_OFF };
struct caml_trace_tsc {
  atomic_int state;             /* CAML_TSC_UNUSED until the first open */
  uint64_t tsc0, scale;
  _Atomic int64_t base;
};
extern struct caml_trace_tsc caml_trace_tsc;

static inline uint64_t caml_trace_tsc_units(int64_t ticks)
{
  return (uint64_t)(((unsigned __int128)(uint64_t)ticks
                     * caml_trace_tsc.scale) >> 40);
}

static inline __attribute__((always_inline)) int
caml_trace_writer_now_tsc(uint64_t *now)
{
  if (__builtin_expect(atomic_load_explicit(&caml_trace_tsc.state,
                                            memory_order_acquire)
                       == CAML_TSC_READY, 1)) {
    int64_t d = (int64_t)(__rdtsc() - caml_trace_tsc.tsc0);
    if (__builtin_expect(d >= 0, 1)) {
      int64_t t = atomic_load_explicit(&caml_trace_tsc.base,
                                       memory_order_relaxed)
                  + (int64_t)caml_trace_tsc_units(d);
      *now = t > 0 ? (uint64_t)t : 0;
      return 1;
    }
  }
  return 0;
}

/* caml_trace_writer_now for the trap: the TSC, or where it is off the
   monotonic clock as said above (1, the time in [*now]); 0 while the
   TSC is calibrated (which clock_gettime takes part in), or when the
   clock failed. */
static inline __attribute__((always_inline)) int
caml_trace_writer_now_direct(uint64_t *now)
{
  if (__builtin_expect(caml_trace_writer_now_tsc(now), 1)) return 1;
  /* acquire: the vDSO's address was written before the state, at the
     first open (pthread_once, then tsc_open) */
  if (atomic_load_explicit(&caml_trace_tsc.state, memory_order_acquire)
      != CAML_TSC_OFF)
    return 0;
  struct timespec ts;
  long rc;
  if (caml_trace_mono.vdso_gettime != NULL) {
    rc = caml_trace_mono.vdso_gettime(CLOCK_MONOTONIC, &ts);
  } else {
    __asm__ volatile ("syscall" : "=a" (rc)
                      : "0" (228L /* SYS_clock_gettime */),
                        "D" ((long)CLOCK_MONOTONIC), "S" (&ts)
                      : "rcx", "r11", "memory");
  }
  if (rc != 0) return 0;
  *now = caml_trace_mono_units((uint64_t)ts.tv_sec * 1000000000u
                               + (uint64_t)ts.tv_nsec);
  return 1;
}
#else
static inline int caml_trace_writer_now_tsc(uint64_t *now)
{
  (void)now;
  return 0;
}
static inline int caml_trace_writer_now_direct(uint64_t *now)
{
  (void)now;
  return 0;
}
#endif
/* Whether caml_trace_writer_now reads the TSC now (for the tests). */
int caml_trace_writer_uses_tsc(void);

/* Append the chunk whose 8-byte header slot starts at [chunk] and whose
   body is [body_len] bytes.  [zbuf] (of [zcap] bytes, at least
   mpt_frame_bound(8 + body_len)) is the caller's compression buffer, and
   [zstate] its compression state (or NULL, see mpt_frame_compress).
   Returns 0, or -1 if the trace had to stop (the error was reported once
   and the writer closed). */
int caml_trace_writer_chunk(uint16_t stream, uint8_t *chunk, size_t body_len,
                            mpt_frame_state *zstate,
                            uint8_t *zbuf, size_t zcap);

/* The same for a chunk of another type (MPT_CHUNK_SNAPSHOT). */
int caml_trace_writer_typed_chunk(enum mpt_chunk_type type, uint16_t stream,
                                  uint8_t *chunk, size_t body_len,
                                  mpt_frame_state *zstate,
                                  uint8_t *zbuf, size_t zcap);

/* Write the END chunk and close; idempotent. */
void caml_trace_writer_close(uint64_t total_samples, uint64_t lost_samples);

/* In a child after fork: forget the parent's file without writing to it.
   Returns 1 if the path template has %p (the child may trace into a file
   of its own), else 0. */
int caml_trace_writer_forget_after_fork(void);

int caml_trace_writer_is_open(void);
int caml_trace_writer_compressed(void);

/* The companion file of a forked heap snapshot (memprof_heap_snapshot.c):
   TRACE.snapshot, next to the trace, written by the snapshot's child
   process only, then appended whole to the trace by the parent once the
   child is reaped, and removed.  Open (create or empty) it: a descriptor,
   or -1 (no trace, or it cannot be created). */
int caml_trace_writer_companion_open(void);
/* Append a chunk to the companion [fd] as caml_trace_writer_typed_chunk
   does to the trace, without a lock, malloc or stdio (a forked child
   calls it).  Returns 0 or -1. */
int caml_trace_writer_companion_chunk(int fd, enum mpt_chunk_type type,
                                      uint16_t stream, uint8_t *chunk,
                                      size_t body_len, uint8_t *zbuf,
                                      size_t zcap);
/* Append the companion's first [len] bytes (whole frames) to the trace,
   then close and remove it; [len] 0 only removes it.  Returns 0, or -1
   if the trace had to stop. */
int caml_trace_writer_companion_merge(int fd, uint64_t len);
#endif
#endif
