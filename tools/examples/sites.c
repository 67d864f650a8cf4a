/* sites.c: example of the ocaml-memprof reader API (trace_input.h).

   Prints the ten functions that allocate the most, estimated from the
   samples of any trace the tools read (5.3.0+memprof or memtrace CTF).
   It shows the whole contract in a few lines: open, read the header for
   the sampling rate, iterate events, resolve the innermost stack frame
   through the location table, check for errors and truncation.

   Build: cc sites.c -I$PREFIX/include/ocaml-memprof \
            $PREFIX/lib/libocaml-memprof-reader.a -llz4 -lz -lm
   Data structure: a plain array indexed by location id (ids are dense,
   1..ti_location_count), summed per function name at the end. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_input.h"

typedef struct { const char *fn; double samples; } row;

static int by_samples(const void *a, const void *b)
{
  double x = ((const row *)a)->samples, y = ((const row *)b)->samples;
  return x < y ? 1 : x > y ? -1 : 0;
}

int main(int argc, char **argv)
{
  if (argc != 2) { fprintf(stderr, "usage: sites TRACE\n"); return 2; }
  char err[256];
  ti_trace *t = ti_open(argv[1], err, sizeof err);
  if (!t) { fprintf(stderr, "sites: %s\n", err); return 1; }
  const ti_header *h = ti_get_header(t);
  double *per_loc = NULL;
  size_t cap = 0;
  mpt_event ev;
  int rc;
  while ((rc = ti_next(t, &ev)) == TI_OK) {
    if (ev.kind != MPT_EV_ALLOC || ev.stack_len == 0) continue;
    uint32_t site = ev.stack[0];                 /* innermost frame */
    if (site >= cap) {
      size_t ncap = (site + 1) * 2;
      per_loc = realloc(per_loc, ncap * sizeof *per_loc);
      if (!per_loc) { fprintf(stderr, "sites: out of memory\n"); return 1; }
      memset(per_loc + cap, 0, (ncap - cap) * sizeof *per_loc);
      cap = ncap;
    }
    per_loc[site] += ev.nsamples;
  }
  if (rc == TI_ERR) { fprintf(stderr, "sites: %s\n", ti_error(t)); return 1; }
  if (ti_truncated(t)) fprintf(stderr, "sites: warning: trace is truncated\n");
  /* Sum per function name (several locations may share one). */
  row *rows = calloc(cap + 1, sizeof *rows);
  size_t n = 0;
  for (uint32_t id = 1; id < cap; id++) {
    if (!per_loc[id]) continue;
    const mpt_location *l = ti_location(t, id);
    const char *fn = l && l->n ? l->entries[0].function : "<unknown>";
    size_t k = 0;
    while (k < n && strcmp(rows[k].fn, fn)) k++;
    if (k == n) rows[n++].fn = fn;
    rows[k].samples += per_loc[id];
  }
  if (n) qsort(rows, n, sizeof *rows, by_samples);
  for (size_t k = 0; k < n && k < 10; k++)
    printf("%12.0f bytes  %s\n", rows[k].samples / h->sampling_rate * h->word_bytes, rows[k].fn);
  free(rows);
  free(per_loc);
  ti_close(t);
  return 0;
}
