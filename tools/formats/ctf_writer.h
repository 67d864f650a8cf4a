/* ctf_writer.h: memtrace CTF version 2 writer (single stream).

   Implements the reference writer policy of the spec (sections 9.7, 9.8,
   13): same backtrace-cache hashing and bucket choice, cache verifiers,
   packet splitting and location packets, so re-encoding the events of a
   version-2 file reproduces it byte for byte.  Version 2 with one stream is
   what both the released and the master memtrace tools accept.

   Contracts
   - Times are us since the epoch and must be non-decreasing (the writer
     clamps a smaller time to the previous one, as the spec advises).
   - Backtraces are location codes, outermost frame first (an empty one,
     ncodes = 0, may have codes == NULL); codes must be
     non-zero, distinct in their low 63 bits and below 2^62.  The first
     time a code is written the writer asks [lookup] for its location
     (entries innermost first, as in the event model).
   - Allocation ids are assigned by the writer: 0, 1, 2... in call order;
     promote/collect take such ids (the caller guarantees each id is
     promoted/collected at most once, promotions only of minor blocks).
   - Output errors are remembered and reported by ctf_writer_close. */

#ifndef OCAML_MEMPROF_CTF_WRITER_H
#define OCAML_MEMPROF_CTF_WRITER_H

#include <stdint.h>
#include <stdio.h>

#include "memprof_trace_codec.h"

typedef struct {
  double sample_rate;
  uint32_t word_size_bits;
  uint64_t pid;
  uint64_t start_us;
  const char *executable, *host, *runtime_params, *context;
} ctf_winfo;

typedef const mpt_location *(*ctf_loc_lookup)(void *u, uint64_t code);
typedef struct ctf_writer ctf_writer;

ctf_writer *ctf_writer_open(FILE *out, const ctf_winfo *info,
                            ctf_loc_lookup lookup, void *u);
/* source: 0 minor, 1 major, 2 external.  Returns the allocation's id. */
uint64_t ctf_writer_alloc(ctf_writer *w, uint64_t t_us, uint64_t length,
                          uint32_t nsamples, int source,
                          const uint64_t *codes, uint32_t ncodes);
void ctf_writer_promote(ctf_writer *w, uint64_t t_us, uint64_t id);
void ctf_writer_collect(ctf_writer *w, uint64_t t_us, uint64_t id);
/* Flush the last packet and free the writer; 0 on success, -1 if any
   write failed.  Does not close [out]. */
int ctf_writer_close(ctf_writer *w);

#endif
