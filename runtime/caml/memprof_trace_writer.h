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
   stderr and return -1; the program goes on untraced. */
int caml_trace_writer_open(const char *template, const mpt_trace_info *info);

/* Time since the trace started, in the trace's time units. */
uint64_t caml_trace_writer_now(void);
#define CAML_TRACE_TIME_UNIT_NS 1000
/* caml_trace_writer_now when it reads the TSC, and only then (1, the time
   in [*now]; else 0): the sample trap's clock, which calls nothing else
   and uses the general registers only (memprof_trap.h). */
int caml_trace_writer_now_tsc(uint64_t *now);
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
#endif
#endif
