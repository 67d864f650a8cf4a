/* cmd_leaks.c: `ocaml-memprof leaks`: sites whose live volume grows
   steadily ("allocation races": allocation outpacing collection), and
   blocks allocated in a window that are still live at the end.

   Per site (key = function, location or module of the allocation site,
   or with --by type the OCaml type of the allocated value, types.h),
   found through a map keyed by the interned key pointer:
   - a tcurve of live-bytes differences (+b at allocation, -b at
     collection), so levels are the site's estimated live bytes over time;
   - tcurves of survivors by allocation time (+bytes and +samples at the
     allocation of blocks live at the end), so any window can be evaluated
     after the run, to the resolution of one bin;
   - counts and first/last allocation time of surviving samples.
   All curves are brought to one bin width at the end.

   Scoring: least-squares line through the site's live-bytes levels at the
   bin ends over the run.  slope s (bytes/s) and r^2 measure steady growth;
   score = max(s, 0) * duration * r^2 is the growth in bytes explained by a
   straight line, so a one-off allocation kept forever (flat) or noisy
   churn (r^2 ~ 0) scores low while a leak scores its leaked volume. */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"
#include "cli.h"
#include "commands.h"
#include "presets.h"
#include "report.h"
#include "types.h"
#include "util.h"

#define LEAK_BINS 128          /* also stated in the usage text */
#define WIDTH0 1000

typedef struct {
  const char *key;
  uint32_t loc;                     /* the first sample's site location */
  tcurve live, surv, survn;
  double alloc_samples, live_end_samples;
  uint64_t first_surv, last_surv;   /* allocation times of survivors */
  double slope, r2, score, window_bytes, window_samples, end_bytes;
  uint64_t window_first, window_last;  /* bin bounds of window survivors */
} site;

typedef struct {
  an_keykind by;
  types_map *types;                 /* --by type */
  site *s;
  size_t n, cap;
  u64map idx;
} leaks_acc;

static void on_sample(void *u, an_ctx *c, const an_sample *smp)
{
  leaks_acc *a = u;
  if (!smp->node) return;           /* no backtrace: no site */
  const char *key = a->types ? types_of_node(a->types, smp->node)
                              : an_loc_key(c, an_nodes(c)[smp->node].loc, a->by);
  uint32_t *ix = u64map_get(&a->idx, (uint64_t)(uintptr_t)key);
  site *s;
  if (ix) s = &a->s[*ix];
  else {
    grow_array((void **)&a->s, &a->cap, a->n + 1, sizeof *a->s);
    s = &a->s[a->n];
    memset(s, 0, sizeof *s);
    s->key = key;
    s->loc = an_nodes(c)[smp->node].loc;
    s->first_surv = AN_NEVER;
    tcurve_init(&s->live, LEAK_BINS, WIDTH0);
    tcurve_init(&s->surv, LEAK_BINS, WIDTH0);
    tcurve_init(&s->survn, LEAK_BINS, WIDTH0);
    u64map_put(&a->idx, (uint64_t)(uintptr_t)key, (uint32_t)a->n++);
  }
  double b = an_bytes(c, smp->nsamples);
  s->alloc_samples += smp->nsamples;
  tcurve_add(&s->live, smp->t_alloc, b);
  if (smp->t_collect != AN_NEVER) {
    tcurve_add(&s->live, smp->t_collect, -b);
  } else {
    s->live_end_samples += smp->nsamples;
    tcurve_add(&s->surv, smp->t_alloc, b);
    tcurve_add(&s->survn, smp->t_alloc, smp->nsamples);
    if (smp->t_alloc < s->first_surv) s->first_surv = smp->t_alloc;
    if (smp->t_alloc > s->last_surv || s->last_surv == 0) s->last_surv = smp->t_alloc;
  }
}

static void leaks_free(leaks_acc *a)
{
  for (size_t i = 0; i < a->n; i++) {
    tcurve_free(&a->s[i].live);
    tcurve_free(&a->s[i].surv);
    tcurve_free(&a->s[i].survn);
  }
  free(a->s);
  u64map_free(&a->idx);
  types_free(a->types);
}

static int by_score(const void *x, const void *y)
{
  const site *a = x, *b = y;
  if (a->score != b->score) return a->score < b->score ? 1 : -1;
  if (a->end_bytes != b->end_bytes) return a->end_bytes < b->end_bytes ? 1 : -1;
  return strcmp(a->key, b->key);
}

static int by_window(const void *x, const void *y)
{
  const site *a = x, *b = y;
  if (a->window_bytes != b->window_bytes) return a->window_bytes < b->window_bytes ? 1 : -1;
  return strcmp(a->key, b->key);
}

static const char usage[] =
  "usage: ocaml-memprof leaks [OPTIONS] TRACE...\n"
  "Rank allocation sites by steady growth of their estimated live bytes: a\n"
  "least-squares line through the live volume at 128 instants of the run gives\n"
  "slope (bytes/s) and r^2; score = max(slope,0) * duration * r^2 (bytes).\n"
  "Also lists, per site, bytes allocated in --window and still live at the end.\n"
  "  --by function|location|module|type   site grouping (function); type: the\n"
  "                    OCaml type of the allocated value, from the .cmt files\n"
  "  --cmt-path DIR    with --by type: also search DIR for .cmt files (repeatable)\n"
  "  --window A,B      allocation window for survivors (default: second half)\n"
  "  --min-score B     hide sites scoring below B bytes (1 sample's worth)\n"
  "  -n N              rows (10; 0 = all)\n"
  "  --json, --csv     machine-readable output;  -o FILE  write to FILE\n";

typedef struct {
  an_window win;
  double min_score;
} leaks_opts;

static int leaks_option(void *u, int argc, char **argv, int *i)
{
  leaks_opts *lo = u;
  const char *o = argv[*i], *v;
  if (!strcmp(o, "--window")) {
    if (!(v = cli_value(argc, argv, i))) return -1;
    if (parse_window(v, &lo->win) < 0)
      return cli_bad_value(o, v, "a time window A,B (1s,2s; 250ms,; ,3m)"), -1;
  } else if (!strcmp(o, "--min-score")) {
    uint64_t sc;
    if (!(v = cli_value(argc, argv, i))) return -1;
    if (parse_size(v, &sc) < 0) return cli_bad_value(o, v, "a size in bytes (64, 4k, 1M, 1MiB)"), -1;
    lo->min_score = (double)sc;
  } else return 0;
  return 1;
}

int cmd_leaks(int argc, char **argv)
{
  an_filter f;
  an_filter_init(&f);
  leaks_acc a;
  memset(&a, 0, sizeof a);
  leaks_opts lo = { { 0, 0, 0 }, -1 };
  table_opts t = { .mode = OUT_TEXT, .by = AN_BY_FUNCTION, .limit = 10 };
  cli_inputs in;
  cli_inputs_init(&in);
  int rc = report_parse(argc, argv, usage, &f, &in, &t,
                        TABLE_JSON | TABLE_CSV | TABLE_BY | TABLE_TYPE | TABLE_N | TABLE_O,
                        leaks_option, &lo);
  an_window win = lo.win;
  double min_score = lo.min_score;
  an_ctx *c = cli_open(&rc, &f, &in);
  if (!c) return rc;
  a.by = t.by;
  const char *out = t.out;
  long limit = t.limit;
  out_mode mode = t.mode;
  const char *path = in.npaths == 1 ? in.paths[0] : NULL;
  u64map_init(&a.idx, 256);
  if (t.by_type) a.types = types_open(c, t.cmt_paths, t.ncmt_paths);
  an_callbacks cb = { &a, NULL, on_sample };
  if ((rc = cli_run(c, &cb, &f, &in))) { leaks_free(&a); return rc; }
  if (a.types && types_close(a.types)) { rc = 1; goto done; }
  uint64_t end = an_get_stats(c)->max_end_time;
  uint64_t W = WIDTH0;
  while (end / W >= LEAK_BINS) W *= 2;
  uint32_t m = (uint32_t)(end / W) + 1;       /* bins within the run */
  if (!win.on) { win.lo = end / 2; win.hi = end; }
  if (min_score < 0) min_score = an_bytes(c, 1);
  double lv[LEAK_BINS], sv[LEAK_BINS];
  double dur = end / 1e9;
  for (size_t i = 0; i < a.n; i++) {
    site *s = &a.s[i];
    tcurve_coarsen(&s->live, W);
    tcurve_coarsen(&s->surv, W);
    tcurve_coarsen(&s->survn, W);
    tcurve_levels(&s->live, lv);
    double tm = 0, lm = 0;
    for (uint32_t j = 0; j < m; j++) { tm += (j + 1) * (double)W / 1e9; lm += lv[j]; }
    tm /= m; lm /= m;
    double stt = 0, stl = 0, sll = 0;
    for (uint32_t j = 0; j < m; j++) {
      double dt = (j + 1) * (double)W / 1e9 - tm, dl = lv[j] - lm;
      stt += dt * dt; stl += dt * dl; sll += dl * dl;
    }
    s->slope = stt > 0 ? stl / stt : 0;
    s->r2 = stt > 0 && sll > 0 ? (stl * stl) / (stt * sll) : 0;
    s->score = (s->slope > 0 ? s->slope : 0) * dur * s->r2;
    s->end_bytes = an_bytes(c, s->live_end_samples);
    /* Survivors allocated in the window, to bin resolution. */
    memcpy(sv, s->surv.d, sizeof sv);
    s->window_bytes = s->window_samples = 0;
    s->window_first = AN_NEVER;
    s->window_last = 0;
    for (uint32_t j = 0; j < LEAK_BINS; j++) {
      uint64_t b0 = j * W, b1 = (j + 1) * W - 1;
      if (b1 < win.lo || b0 > win.hi || sv[j] <= 0) continue;
      s->window_bytes += sv[j];
      s->window_samples += s->survn.d[j];
      if (s->window_first == AN_NEVER) s->window_first = b0 > win.lo ? b0 : win.lo;
      s->window_last = b1 < win.hi ? b1 : win.hi;
    }
  }
  if (a.n) qsort(a.s, a.n, sizeof *a.s, by_score);
  size_t shown = 0;
  for (size_t i = 0; i < a.n && (limit == 0 || (long)shown < limit); i++)
    if (a.s[i].score >= min_score) shown++;
  uint32_t hint_locs[HINT_ROWS];
  size_t nhint = 0;
  for (; nhint < shown && nhint < HINT_ROWS; nhint++) hint_locs[nhint] = a.s[nhint].loc;
  presets_hint(c, &f, hint_locs, nhint);

  FILE *o = out_open(out);
  if (!o) { rc = 1; goto done; }
  if (mode == OUT_JSON) {
    fprintf(o, "{\"file\": ");
    if (path) json_str(o, path); else fprintf(o, "null");
    fprintf(o, ", \"duration_s\": %.6f, \"window\": [%.6f, %.6f], \"sites\": [",
            dur, win.lo / 1e9, win.hi == UINT64_MAX ? dur : win.hi / 1e9);
    for (size_t i = 0; i < shown; i++) {
      site *s = &a.s[i];
      fprintf(o, "%s\n  {\"site\": ", i ? "," : "");
      json_str(o, s->key);
      fprintf(o, ", \"score\": %.0f, \"slope_bytes_per_s\": %.1f, \"r2\": %.4f, "
              "\"live_end_bytes\": %.0f, \"live_end_samples\": %.0f, \"alloc_samples\": %.0f, "
              "\"window_survivor_bytes\": %.0f, \"window_survivor_samples\": %.0f, \"first_survivor_s\": %.6f, \"last_survivor_s\": %.6f}",
              s->score, s->slope, s->r2, s->end_bytes, s->live_end_samples, s->alloc_samples,
              s->window_bytes, s->window_samples,
              s->first_surv == AN_NEVER ? 0 : s->first_surv / 1e9, s->last_surv / 1e9);
    }
    fprintf(o, "\n]}\n");
  } else if (mode == OUT_CSV) {
    fprintf(o, "site,score,slope_bytes_per_s,r2,live_end_bytes,live_end_samples,alloc_samples,"
               "window_survivor_bytes,window_survivor_samples,first_survivor_s,last_survivor_s\n");
    for (size_t i = 0; i < shown; i++) {
      site *s = &a.s[i];
      csv_str(o, s->key);
      fprintf(o, ",%.0f,%.1f,%.4f,%.0f,%.0f,%.0f,%.0f,%.0f,%.6f,%.6f\n", s->score, s->slope, s->r2,
              s->end_bytes, s->live_end_samples, s->alloc_samples, s->window_bytes, s->window_samples,
              s->first_surv == AN_NEVER ? 0 : s->first_surv / 1e9, s->last_surv / 1e9);
    }
  } else {
    char b1[32], b2[32], b3[32], b4[32];
    if (path) cli_put_safe(o, path);
    else fprintf(o, "%zu traces", in.npaths);
    fprintf(o, ": %zu sites, run of %.3f s; live volume sampled at %u instants\n", a.n, dur, m);
    const char *what = a.types ? "type" : "site";
    fprintf(o, "%10s %12s %6s %10s %14s %17s  %s\n", "score", "slope/s", "r2", "live@end",
            "survivors", "allocated (s)", what);
    for (size_t i = 0; i < shown; i++) {
      site *s = &a.s[i];
      char span[40];
      if (s->first_surv == AN_NEVER) snprintf(span, sizeof span, "-");
      else snprintf(span, sizeof span, "%.3f-%.3f", s->first_surv / 1e9, s->last_surv / 1e9);
      fprintf(o, "%10s %12s %6.3f %10s %5.0f/%-8.0f %17s  %s\n",
              human_bytes(s->score, b1, sizeof b1), human_bytes(s->slope, b2, sizeof b2),
              s->r2, human_bytes(s->end_bytes, b3, sizeof b3), s->live_end_samples,
              s->alloc_samples, span, s->key);
    }
    fprintf(o, "\nAllocated in [%.3f s, %.3f s] and still live at the end:\n",
            win.lo / 1e9, win.hi == UINT64_MAX ? dur : win.hi / 1e9);
    fprintf(o, "%10s %8s %17s  %s\n", "bytes", "samples", "allocated (s)", what);
    /* Largest survivors first; times to the resolution of one bin. */
    if (a.n) qsort(a.s, a.n, sizeof *a.s, by_window);
    size_t printed = 0;
    for (size_t i = 0; i < a.n && (limit == 0 || (long)printed < limit); i++) {
      site *s = &a.s[i];
      if (s->window_bytes <= 0) continue;
      char span[40];
      snprintf(span, sizeof span, "%.3f-%.3f", s->window_first / 1e9, s->window_last / 1e9);
      fprintf(o, "%10s %8.0f %17s  %s\n", human_bytes(s->window_bytes, b4, sizeof b4),
              s->window_samples, span, s->key);
      printed++;
    }
    if (!printed) fprintf(o, "  (none)\n");
  }
  rc = out_close(o, out);
  if (a.types) types_print_hints(a.types);
done:
  leaks_free(&a);
  an_filter_free(&f);
  an_close(c);
  cli_inputs_free(&in);
  return rc;
}
