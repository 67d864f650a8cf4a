/* trace_input.h: the ocaml-memprof reader API (libocaml-memprof-reader.a).

   One way to read any trace the tools understand: the 5.3.0+memprof format
   (through the shared codec, runtime/memprof_trace_codec.c) and memtrace
   CTF versions 1-3 (tools/ctf_reader.c).  The format is detected from the
   file's first bytes:
     04 22 4D 18 (an LZ4 frame) or "OCMPTRCE"  -> 5.3.0+memprof format
     C1 1F FC C1                               -> memtrace CTF
   Both yield the event model of memprof_trace_codec.h: mpt_event (times in
   ns since the trace start, stacks of location ids innermost first) and
   mpt_location (ids 1..ti_location_count, entries innermost first).

   Contracts
   - ti_next returns TI_OK with *ev filled (ev->stack valid until the next
     call), TI_END, or TI_ERR (ti_error gives a one-line message).
   - A file cut short yields its complete prefix, then TI_END, and
     ti_truncated() != 0: callers should warn, not fail.
   - A location id appearing in a stack is <= ti_location_count() at the
     time the event is returned; location pointers stay valid until
     ti_close.
   - Memory is bounded by the locations and decoder state, not by the size
     of the file.  Not thread-safe; use one ti_trace per thread.

   Example: tools/examples/sites.c. */

#ifndef OCAML_MEMPROF_TRACE_INPUT_H
#define OCAML_MEMPROF_TRACE_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "memprof_trace_codec.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { TI_END = 0, TI_OK = 1, TI_ERR = -1 };

typedef enum { TI_FORMAT_MEMPROF = 1, TI_FORMAT_CTF = 2 } ti_format;

typedef struct {
  ti_format format;
  int version;                  /* format version of the file */
  double sampling_rate;         /* lambda: probability per word, > 0 */
  uint32_t word_bytes;          /* 8 on 64-bit targets */
  uint32_t flags;               /* MPT_FLAG_* (memprof format only) */
  uint64_t pid, ppid;           /* ppid 0 when unknown */
  uint64_t start_wall_ns;       /* trace start, ns since the Unix epoch */
  const char *executable, *hostname;
  const char *ocaml_version;    /* "" when unknown (CTF) */
  const char *command_line;     /* "" when unknown (CTF) */
  const char *runtime_params;   /* CTF: OCAMLRUNPARAM summary, else "" */
  const char *context;          /* CTF v2+: context string, else "" */
  uint32_t initial_domain;      /* CTF v3: packet 0's domain, else 0 */
} ti_header;

typedef struct ti_trace ti_trace;

ti_trace *ti_open(const char *path, char *err, size_t errlen);
/* [data] must outlive the trace (used by the fuzzers). */
ti_trace *ti_open_mem(const uint8_t *data, size_t len, char *err, size_t errlen);
const ti_header *ti_get_header(const ti_trace *t);
int ti_next(ti_trace *t, mpt_event *ev);
uint32_t ti_location_count(const ti_trace *t);
const mpt_location *ti_location(const ti_trace *t, uint32_t id);
const char *ti_error(const ti_trace *t);
int ti_truncated(const ti_trace *t);
/* From the trace's end record when it has one (memprof format): returns 1
   and fills the values, else 0. */
int ti_end_info(const ti_trace *t, uint64_t *end_time_ns,
                uint64_t *total_samples, uint64_t *lost_samples);
/* Bytes consumed / total file size at open (0 when unknown), for progress
   lines. */
void ti_progress(ti_trace *t, uint64_t *done, uint64_t *total);
/* Bytes of the file consumed so far. */
uint64_t ti_bytes_read(const ti_trace *t);
/* Following a file while it is written (top --follow): with [on], the
   current end of the file is not the end of the trace; ti_next returns
   TI_END meaning "nothing more yet" and a later call returns only the
   events appended since (a record cut by the end of the file waits for
   its rest).  Set [on] to 0 once the writer has gone: the next calls read
   to the end, a cut there being truncation as usual. */
void ti_follow(ti_trace *t, int on);
/* What became of the file at the trace's path since ti_open read it:
   still the same file; deleted (ENOENT); replaced (another file there,
   renamed over it); truncated below the bytes already read.  The reader
   keeps reading the file it opened in every case.  SAME for a trace in
   memory, or when the path cannot be checked. */
typedef enum {
  TI_FILE_SAME, TI_FILE_DELETED, TI_FILE_REPLACED, TI_FILE_TRUNCATED
} ti_file_change_kind;
ti_file_change_kind ti_file_change(const ti_trace *t);
/* Format-specific statistics for `info`: a const ctf_stats * (ctf_reader.h)
   for CTF input, NULL otherwise. */
const void *ti_ctf_stats(const ti_trace *t);
void ti_close(ti_trace *t);

/* Short names, for messages and `info`. */
const char *ti_format_name(ti_format f);
const char *ti_source_name(enum mpt_source s);
const char *ti_kind_name(enum mpt_event_kind k);

#ifdef __cplusplus
}
#endif
#endif
