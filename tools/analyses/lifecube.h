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

   Cells live in one array, in the order their keys first came (the
   report's output order), found through an open-addressing table of
   32-bit indices kept at most 3/4 full.  A cell is 32 bytes (it was 48:
   the report's 1.74 M cells on a trace of 3.67 M live samples held more
   memory than the live table they came from):
   - the key is the node and one 64-bit word: allocation and death bins
     (13 bits each, so at most LIFECUBE_MAXBINS bins), domain (8), size
     class (5), lifetime class (5) and process (16);
   - samples, blocks and promoted samples are 32-bit counts; a count that
     wraps adds one to its carry in a map by cell and count, so sums stay
     exact past 2^32 (no trace of the test suite comes near);
   - objects stays a double, summed in the same order as before, so that
     the report's rounding of it does not change. */

#ifndef OCAML_MEMPROF_LIFECUBE_H
#define OCAML_MEMPROF_LIFECUBE_H

#include <stddef.h>
#include <stdint.h>

#include "analysis.h"
#include "util.h"

#define LIFECUBE_NLIFE 29    /* 1-2-5 bounds from 1 us to 1000 s */
#define LIFECUBE_NSIZE 32
#define LIFECUBE_MAXDOM 255    /* domains above are counted as this one */
#define LIFECUBE_MAXBINS 4096  /* and one more bin index: "never" */

/* The key word's fields: bit offset and width. */
enum { LC_ABIN = 0, LC_DBIN = 13, LC_DOM = 26, LC_SIZE = 34, LC_LIFE = 39, LC_PROC = 44 };
enum { LC_BINBITS = 13 };

typedef struct {
  uint64_t key;                /* abin, dbin (nbins: never collected), dom, size, life, proc */
  double objects;              /* sum of nsamples / (wosize + 1) */
  uint32_t node;
  uint32_t count[3];           /* low 32 bits of samples, blocks, promoted samples */
} lifecube_cell;

enum { LC_SAMPLES, LC_BLOCKS, LC_PROMOTED };

typedef struct {
  lifecube_cell *v;
  size_t n, cap;
  uint32_t *slot;              /* 0 empty, else 1 + index in v */
  size_t nslots;               /* power of two */
  u64map carry;                /* 3 * cell index + count -> times it wrapped */
  uint32_t nbins;
  uint64_t width;              /* ns per bin */
} lifecube;

static inline uint32_t lifecube_field(const lifecube_cell *c, unsigned off, unsigned bits)
{ return (uint32_t)(c->key >> off) & ((1u << bits) - 1); }
static inline uint32_t lifecube_abin(const lifecube_cell *c) { return lifecube_field(c, LC_ABIN, LC_BINBITS); }
static inline uint32_t lifecube_dbin(const lifecube_cell *c) { return lifecube_field(c, LC_DBIN, LC_BINBITS); }
static inline uint32_t lifecube_dom(const lifecube_cell *c) { return lifecube_field(c, LC_DOM, 8); }
static inline uint32_t lifecube_size(const lifecube_cell *c) { return lifecube_field(c, LC_SIZE, 5); }
static inline uint32_t lifecube_life(const lifecube_cell *c) { return lifecube_field(c, LC_LIFE, 5); }
static inline uint32_t lifecube_proc(const lifecube_cell *c) { return lifecube_field(c, LC_PROC, 16); }
/* Count [k] (LC_SAMPLES, ...) of cell [i], carries included. */
uint64_t lifecube_count(const lifecube *q, size_t i, unsigned k);

/* [nbins] bins of [width] ns to start with (both > 0, nbins <= LIFECUBE_MAXBINS). */
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
