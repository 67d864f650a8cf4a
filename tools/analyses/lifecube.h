/* lifecube.h: completed samples aggregated by stack and by the classes the
   HTML report filters on, so that the report embeds a few records per
   stack instead of one per sample.

   A cell is (call-tree node, allocation-time bin, death-time bin or
   "never", domain, size class, lifetime class, process: an index the
   caller gives, so that a report of several processes filters them as
   `--pid` and `--exe` do); it sums samples, blocks,
   objects and promoted samples.  The classes are chosen so that a filter
   drawn on class boundaries selects exactly what the CLI filters select
   with the bounds lifecube_* give:
   - time bins: bin k holds times [k*width, (k+1)*width - 1] ns, so
     --allocated/--collected A,B and --live A,B with A, B on bin bounds
     are unions of bins; "never" (live at the end) is bin nbins;
   - size classes: class 0 holds blocks of 0..15 bytes, class c >= 1 holds
     [2^(c+3), 2^(c+4) - 1] bytes;
   - lifetime classes (time from allocation to collection, or to the end of
     the trace for blocks live at the end, as --min/--max-lifetime measure
     it): [lifecube_life_lo(c), lifecube_life_lo(c + 1) - 1] ns, bounds on
     a 1-2-5 scale from 1 us to 1000 s.
   The bins have a fixed count and a width that doubles (merging cells)
   whenever a time beyond the covered range arrives, as tcurve does, so
   the trace's duration need not be known in advance and memory is bounded
   by the distinct cells, not by the samples.

   Cells live in one array, found through an open-addressing table of
   indices keyed by the whole cell key. */

#ifndef OCAML_MEMPROF_LIFECUBE_H
#define OCAML_MEMPROF_LIFECUBE_H

#include <stddef.h>
#include <stdint.h>

#include "analysis.h"

#define LIFECUBE_NLIFE 29    /* 1-2-5 bounds from 1 us to 1000 s */
#define LIFECUBE_NSIZE 32
#define LIFECUBE_MAXDOM 255    /* domains above are counted as this one */

typedef struct {
  uint32_t node;
  uint16_t abin, dbin;         /* dbin == nbins: never collected */
  uint8_t dom, size, life;
  uint16_t proc;
  uint64_t samples, blocks, promoted;
  double objects;              /* sum of nsamples / (wosize + 1) */
} lifecube_cell;

typedef struct {
  lifecube_cell *v;
  size_t n, cap;
  uint32_t *slot;              /* 0 empty, else 1 + index in v */
  size_t nslots;               /* power of two */
  uint32_t nbins;
  uint64_t width;              /* ns per bin */
} lifecube;

/* [nbins] bins of [width] ns to start with (both > 0, nbins < 65535). */
void lifecube_init(lifecube *q, uint32_t nbins, uint64_t width);
void lifecube_free(lifecube *q);
/* Add a completed sample of process [proc]; [end] is the trace's end time
   used as the death time of blocks live at the end (for their lifetime
   class). */
void lifecube_add(lifecube *q, const an_sample *s, uint32_t word_bytes, uint64_t end, uint16_t proc);
/* Make the bins cover time t (doubling the width). */
void lifecube_cover(lifecube *q, uint64_t t);
uint32_t lifecube_size_class(uint64_t bytes);
uint32_t lifecube_life_class(uint64_t ns);
/* Lower bound (ns) of lifetime class c, c <= LIFECUBE_NLIFE (the last is
   UINT64_MAX: no upper bound). */
uint64_t lifecube_life_lo(uint32_t c);

#endif
