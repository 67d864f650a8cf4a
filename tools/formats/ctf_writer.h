/* ctf_writer.h: memtrace CTF writer, version 2 (one stream) or 3 (one
   stream per domain).

   Implements the reference writer policy of the spec (sections 9.7, 9.8,
   13): same backtrace-cache hashing and bucket choice, cache verifiers,
   packet splitting and location packets, and in version 3 ranges of
   10,000 ids per domain, so re-encoding the events of a file reproduces
   it byte for byte.  Version 2 is what both the released and the master
   memtrace tools accept; version 3 only the master ones.

   Contracts
   - Times are us since the epoch and must be non-decreasing per stream
     (the writer clamps a smaller time to the previous one, as the spec
     advises; version 2 has one stream for all domains).
   - Backtraces are location codes, outermost frame first (an empty one,
     ncodes = 0, may have codes == NULL); codes must be
     non-zero, distinct in their low 63 bits and below 2^62.  The first
     time a code is written the writer asks [lookup] for its location
     (entries innermost first, as in the event model).
   - Allocation ids are assigned by the writer: 0, 1, 2... in call order
     in version 2; from per-domain ranges in version 3.  promote/collect
     take such an id and the domain it was allocated in (the caller
     guarantees each id is promoted/collected at most once, promotions
     only of minor blocks).  Version 2 ignores the domain.
   - Domains are 16-bit in the file (version 3).
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
  int version;                  /* 2 or 3 */
  uint16_t initial_domain;      /* version 3: packet 0's domain */
} ctf_winfo;

typedef const mpt_location *(*ctf_loc_lookup)(void *u, uint64_t code);
typedef struct ctf_writer ctf_writer;

ctf_writer *ctf_writer_open(FILE *out, const ctf_winfo *info,
                            ctf_loc_lookup lookup, void *u);
/* source: 0 minor, 1 major, 2 external.  Returns the allocation's id. */
uint64_t ctf_writer_alloc(ctf_writer *w, uint32_t domain, uint64_t t_us, uint64_t length,
                          uint32_t nsamples, int source,
                          const uint64_t *codes, uint32_t ncodes);
void ctf_writer_promote(ctf_writer *w, uint32_t domain, uint64_t t_us, uint64_t id);
void ctf_writer_collect(ctf_writer *w, uint32_t domain, uint64_t t_us, uint64_t id);
/* Flush the last packets (the stream with the latest event last) and free
   the writer; 0 on success, -1 if any write failed.  Does not close
   [out]. */
int ctf_writer_close(ctf_writer *w);

#endif
