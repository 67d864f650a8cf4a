/* aggregate.c: node accumulators, adaptive time curves, peak search, and
   the per-node pass shared by the reports.
   See aggregate.h for the design; the only subtle point is that curve bins
   hold differences, so coarsening sums pairs and levels are prefix sums. */

#include "aggregate.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

void nodeagg_init(nodeagg *a, uint64_t live_at)
{
  memset(a, 0, sizeof *a);
  a->live_at = live_at;
}

int sample_live_at(const an_sample *s, uint64_t t)
{
  if (t == AN_NEVER) return s->t_collect == AN_NEVER;
  return s->t_alloc <= t && s->t_collect > t;
}

void nodeagg_add(nodeagg *a, const an_sample *s)
{
  if (s->node >= a->idx_cap) {
    size_t old = a->idx_cap;
    grow_array((void **)&a->idx, &a->idx_cap, (size_t)s->node + 1, sizeof *a->idx);
    memset(a->idx + old, 0, (a->idx_cap - old) * sizeof *a->idx);
  }
  if (!a->idx[s->node]) {       /* first sample of this node */
    grow_array((void **)&a->v, &a->cap, a->n + 1, sizeof *a->v);
    memset(&a->v[a->n], 0, sizeof a->v[a->n]);
    a->idx[s->node] = (uint32_t)++a->n;
  }
  nstat *n = &a->v[a->idx[s->node] - 1];
  double obj = (double)s->nsamples / (double)(s->wosize + 1);
  n->alloc_samples += s->nsamples;
  n->alloc_objects += obj;
  n->blocks++;
  if (sample_live_at(s, a->live_at)) {
    n->live_samples += s->nsamples;
    n->live_objects += obj;
    n->live_blocks++;
  }
  if (s->promoted) n->promoted_samples += s->nsamples;
}

void nodeagg_copy(nodeagg *dst, const nodeagg *src)
{
  *dst = *src;
  dst->idx = src->idx_cap ? xmalloc(src->idx_cap * sizeof *src->idx) : NULL;
  dst->v = src->cap ? xmalloc(src->cap * sizeof *src->v) : NULL;
  if (src->idx_cap) memcpy(dst->idx, src->idx, src->idx_cap * sizeof *src->idx);
  if (src->n) memcpy(dst->v, src->v, src->n * sizeof *src->v);
}

nstat nodeagg_get(const nodeagg *a, uint32_t i)
{
  nstat z;
  if (i < a->idx_cap && a->idx[i]) return a->v[a->idx[i] - 1];
  memset(&z, 0, sizeof z);
  return z;
}

double nstat_value(const an_ctx *c, const nstat *s, value_kind v)
{
  switch (v) {
  case VALUE_LIVE: return an_bytes(c, s->live_samples);
  case VALUE_SAMPLES: return s->alloc_samples;
  case VALUE_OBJECTS: return an_per_rate(c, s->alloc_objects);
  default: return an_bytes(c, s->alloc_samples);
  }
}

void nodeagg_free(nodeagg *a)
{
  free(a->v);
  free(a->idx);
  memset(a, 0, sizeof *a);
}

/* ---- tcurve ---- */

void tcurve_init(tcurve *c, uint32_t nbins, uint64_t width)
{
  c->n = nbins;
  c->width = width ? width : 1;
  c->d = xcalloc(nbins, sizeof *c->d);
}

void tcurve_free(tcurve *c)
{
  free(c->d);
  c->d = NULL;
}

static void coarsen_once(tcurve *c)
{
  uint32_t half = c->n / 2;
  for (uint32_t i = 0; i < half; i++) c->d[i] = c->d[2 * i] + c->d[2 * i + 1];
  if (c->n & 1) {             /* odd count: last bin joins the last pair */
    c->d[half - 1] += c->d[c->n - 1];
  }
  memset(c->d + half, 0, (c->n - half) * sizeof *c->d);
  c->width *= 2;
}

void tcurve_cover(tcurve *c, uint64_t t)
{
  while (t / c->width >= c->n && c->width < (UINT64_MAX >> 2)) coarsen_once(c);
}

void tcurve_coarsen(tcurve *c, uint64_t width)
{
  while (c->width < width) coarsen_once(c);
}

void tcurve_add(tcurve *c, uint64_t t, double v)
{
  tcurve_cover(c, t);
  uint64_t i = t / c->width;
  if (i >= c->n) i = c->n - 1;
  c->d[i] += v;
}

void tcurve_levels(const tcurve *c, double *out)
{
  double acc = 0;
  for (uint32_t i = 0; i < c->n; i++) { acc += c->d[i]; out[i] = acc; }
}

/* ---- peak ---- */

#define PEAK_BINS 2048

static void peak_sample(void *u, an_ctx *c, const an_sample *s)
{
  tcurve *tc = u;
  double b = an_bytes(c, s->nsamples);
  tcurve_add(tc, s->t_alloc, b);
  if (s->t_collect != AN_NEVER) tcurve_add(tc, s->t_collect, -b);
}

int find_peak(const char *const *paths, size_t n, const an_filter *f, uint64_t *t_peak,
              double *peak_bytes)
{
  an_ctx *c = an_open(paths, n, f);
  if (!c) return 1;
  tcurve tc;
  tcurve_init(&tc, PEAK_BINS, 1000);
  an_callbacks cb = { &tc, NULL, peak_sample };
  int rc = an_run(c, &cb);
  if (!rc) {
    uint64_t end = an_get_stats(c)->max_end_time;
    double *lv = xmalloc(tc.n * sizeof *lv);
    tcurve_levels(&tc, lv);
    uint32_t best = 0;
    for (uint32_t i = 1; i < tc.n; i++) if (lv[i] > lv[best]) best = i;
    uint64_t t = (best + 1) * tc.width - 1;   /* last instant of the bin */
    *t_peak = t > end ? end : t;
    *peak_bytes = lv[best];
    free(lv);
  }
  tcurve_free(&tc);
  an_close(c);
  return rc;
}

int resolve_live_at(const char *arg, const char *const *paths, size_t n, const an_filter *f,
                    uint64_t *t)
{
  if (!arg || !strcmp(arg, "end")) { *t = AN_NEVER; return 0; }
  if (!strcmp(arg, "peak")) {
    double b;
    return find_peak(paths, n, f, t, &b);
  }
  if (parse_time(arg, t) < 0) {        /* checked by the option parsers */
    msg("bad value '%s' for --live-at (end, peak or a time)\n", arg);
    return 2;
  }
  return 0;
}

/* ---- the per-node pass ---- */

static void nodeagg_sample(void *u, an_ctx *c, const an_sample *s)
{
  (void)c;
  nodeagg_add(u, s);
}

int nodeagg_run(const char *const *paths, size_t n, const an_filter *f, const char *live_arg,
                nodeagg *agg, an_ctx **ctx)
{
  uint64_t live_at;
  int rc = resolve_live_at(live_arg, paths, n, f, &live_at);
  if (rc) return rc;
  an_ctx *c = an_open(paths, n, f);
  if (!c) return 1;
  nodeagg_init(agg, live_at);
  an_callbacks cb = { agg, NULL, nodeagg_sample };
  rc = an_run(c, &cb);
  if (rc) { nodeagg_free(agg); an_close(c); return rc; }
  an_print_hints(c);
  *ctx = c;
  return 0;
}
