/* aggregate.h: reusable accumulators over completed samples.

   - nodeagg: per call-tree node sums (allocated, live at a chosen time,
     promoted), kept only for the nodes that have samples, found through a
     4-byte index per node, so it costs O(1) per sample; reports
     map nodes to keys (function, location, module, caller...) afterwards.
   - tcurve: a time series kept as a difference array of a fixed number of
     bins whose width doubles (adjacent bins merged) whenever a time beyond
     the covered range arrives.  This gives bounded memory without knowing
     the trace's duration in advance, and merging is exact for differences:
     a +v at fine bin i is a +v at coarse bin i/2.
   - peak finding: a first pass with a tcurve of total live bytes.
   - nodeagg_run: the whole pass that the per-node reports (top, folded,
     flamegraph, pprof) start with, so they resolve --live-at, open the
     trace and clean up after a failed read in one way. */

#ifndef OCAML_MEMPROF_AGGREGATE_H
#define OCAML_MEMPROF_AGGREGATE_H

#include <stdint.h>

#include "analysis.h"

typedef struct {
  double alloc_samples, alloc_objects;  /* objects: sum of n/(wosize+1) */
  double live_samples, live_objects;
  double promoted_samples;
  uint64_t blocks, live_blocks;
} nstat;

typedef struct {
  uint32_t *idx;               /* per node: 1 + index in v, 0 = no sample */
  size_t idx_cap;
  nstat *v;                    /* only the nodes with samples (most call-tree
                                  nodes are inner frames without any) */
  size_t n, cap;
  uint64_t live_at;            /* AN_NEVER = at the end of the trace */
} nodeagg;

void nodeagg_init(nodeagg *a, uint64_t live_at);
void nodeagg_add(nodeagg *a, const an_sample *s);
/* [dst] (uninitialised) becomes a copy of [src]. */
void nodeagg_copy(nodeagg *dst, const nodeagg *src);
/* Stats of node i (zeroes when never touched). */
nstat nodeagg_get(const nodeagg *a, uint32_t i);
void nodeagg_free(nodeagg *a);
/* What a report shows of a node: estimated bytes allocated or live at
   live_at, samples, or estimated objects. */
typedef enum { VALUE_ALLOC, VALUE_LIVE, VALUE_SAMPLES, VALUE_OBJECTS } value_kind;
double nstat_value(const an_ctx *c, const nstat *s, value_kind v);
/* Is sample s live at time t (AN_NEVER: at the end)? */
int sample_live_at(const an_sample *s, uint64_t t);

typedef struct {
  double *d;
  uint32_t n;
  uint64_t width;              /* ns per bin */
} tcurve;

void tcurve_init(tcurve *c, uint32_t nbins, uint64_t width);
void tcurve_free(tcurve *c);
void tcurve_add(tcurve *c, uint64_t t, double v);
/* Coarsen to [width] (a power-of-two multiple of the current width). */
void tcurve_coarsen(tcurve *c, uint64_t width);
/* Make the bins wide enough to cover time t. */
void tcurve_cover(tcurve *c, uint64_t t);
/* out[i] = sum of d[0..i]: the level at the end of bin i. */
void tcurve_levels(const tcurve *c, double *out);

/* Time (ns) at which the estimated live heap of the samples kept by [f]
   peaks, to within one bin (1/2048 of the trace); run as a separate pass
   over the traces [paths] (merged, times from each one's start).  Returns
   0 or 1 after printing an error.  *peak_bytes gets the estimated live
   bytes at that time. */
int find_peak(const char *const *paths, size_t n, const an_filter *f, uint64_t *t_peak,
              double *peak_bytes);

/* Parse "end", "peak" or a time for --live-at; peak is resolved by a
   first pass. */
int resolve_live_at(const char *arg, const char *const *paths, size_t n, const an_filter *f,
                    uint64_t *t);

/* Resolve [live_arg] as resolve_live_at does, open [paths] with filter [f]
   and add every kept sample to [agg] (initialised here; live at the
   resolved time, also left in agg->live_at).  Returns 0 with *ctx open:
   the caller then frees [agg] and closes *ctx.  Otherwise returns the exit
   status (1) after printing the error, with nothing left to free. */
int nodeagg_run(const char *const *paths, size_t n, const an_filter *f, const char *live_arg,
                nodeagg *agg, an_ctx **ctx);

#endif
