/* cmd_timeline.c: `ocaml-memprof timeline`: estimated live heap and
   allocation rate over time, with the runtime's own heap size from
   MAJOR_CYCLE events and marks for compactions and major cycles; as an
   SVG plot or CSV.

   Two tcurves (aggregate.h) over the kept samples: live-byte differences
   (levels = live heap) and allocated bytes per bin (rate = bin / width).
   GC events are few (one per major cycle), so they are kept as a list of
   points; compaction and cycle times likewise.  Several streams may record
   the same major cycle (docs/trace-format.md): cycles are counted once, by
   their major_collections number, through a small set.  The SVG is drawn by hand:
   one panel, two y axes (bytes on the left, bytes/s on the right).

   --by type (the evolution graph): one more live-bytes tcurve per OCaml
   type (types.h; a type is an interned string, so found through a map
   keyed by its pointer), summed as the samples complete; at the end the
   N types of largest peak are drawn stacked, the others summed as one
   band, and the CSV and JSON give each one's level per bin. */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"
#include "cli.h"
#include "commands.h"
#include "report.h"
#include "types.h"
#include "util.h"

typedef struct { uint64_t t; double heap, live; } gcpt;

/* One type's live bytes: a tcurve while reading; its levels after. */
typedef struct {
  const char *type;
  tcurve live;
  double *level;
  double peak;
} tl_type;

typedef struct {
  tcurve live, alloc;
  gcpt *gc;
  size_t ngc, gccap;
  uint64_t *compact;
  size_t ncompact, ccap;
  uint32_t word_bytes;
  u64map cycles_seen;          /* major_collections values already plotted */
  types_map *types;            /* --by type */
  tl_type *ty;
  size_t nty, tycap;
  u64map ty_idx;               /* type string pointer -> index in ty */
  uint32_t nbins;              /* of every curve */
} tl_acc;

static void on_event(void *u, an_ctx *c, const mpt_event *ev)
{
  (void)c;
  tl_acc *a = u;
  if (ev->kind == MPT_EV_MAJOR_CYCLE) {
    if (u64map_get(&a->cycles_seen, ev->heap.major_collections)) return;
    u64map_put(&a->cycles_seen, ev->heap.major_collections, 1);
    grow_array((void **)&a->gc, &a->gccap, a->ngc + 1, sizeof *a->gc);
    a->gc[a->ngc++] = (gcpt){ ev->time_ns, (double)ev->heap.heap_words * a->word_bytes,
                              (double)ev->heap.live_words * a->word_bytes };
  } else if (ev->kind == MPT_EV_COMPACT_BEGIN) {
    grow_array((void **)&a->compact, &a->ccap, a->ncompact + 1, sizeof *a->compact);
    a->compact[a->ncompact++] = ev->time_ns;
  }
}

static void on_sample(void *u, an_ctx *c, const an_sample *s)
{
  tl_acc *a = u;
  double b = an_bytes(c, s->nsamples);
  tcurve_add(&a->live, s->t_alloc, b);
  tcurve_add(&a->alloc, s->t_alloc, b);
  if (s->t_collect != AN_NEVER) tcurve_add(&a->live, s->t_collect, -b);
  if (!a->types) return;
  const char *key = types_of_node(a->types, s->node);
  uint32_t *ix = u64map_get(&a->ty_idx, (uint64_t)(uintptr_t)key);
  if (!ix) {
    grow_array((void **)&a->ty, &a->tycap, a->nty + 1, sizeof *a->ty);
    memset(&a->ty[a->nty], 0, sizeof *a->ty);
    a->ty[a->nty].type = key;
    tcurve_init(&a->ty[a->nty].live, a->nbins, 1000);
    u64map_put(&a->ty_idx, (uint64_t)(uintptr_t)key, (uint32_t)a->nty++);
    ix = u64map_get(&a->ty_idx, (uint64_t)(uintptr_t)key);
  }
  tl_type *t = &a->ty[*ix];
  tcurve_add(&t->live, s->t_alloc, b);
  if (s->t_collect != AN_NEVER) tcurve_add(&t->live, s->t_collect, -b);
}

/* Largest peak first. */
static int by_peak(const void *x, const void *y)
{
  const tl_type *a = x, *b = y;
  if (a->peak != b->peak) return a->peak < b->peak ? 1 : -1;
  return strcmp(a->type, b->type);
}

/* --by type, after the run: every type's levels at width [W] over [m]
   bins, sorted by peak; the types beyond the first [shown] summed into
   [other] (m levels). */
static void types_levels(tl_acc *a, uint64_t W, uint32_t m, size_t shown, double *other)
{
  for (size_t k = 0; k < a->nty; k++) {
    tl_type *t = &a->ty[k];
    tcurve_coarsen(&t->live, W);
    t->level = xmalloc(t->live.n * sizeof *t->level);
    tcurve_levels(&t->live, t->level);
    for (uint32_t i = 0; i < m; i++) if (t->level[i] > t->peak) t->peak = t->level[i];
  }
  if (a->nty) qsort(a->ty, a->nty, sizeof *a->ty, by_peak);
  memset(other, 0, m * sizeof *other);
  for (size_t k = shown; k < a->nty; k++)
    for (uint32_t i = 0; i < m; i++) other[i] += a->ty[k].level[i];
}

static void tl_free(tl_acc *a)
{
  free(a->gc);
  free(a->compact);
  u64map_free(&a->cycles_seen);
  tcurve_free(&a->live);
  tcurve_free(&a->alloc);
  for (size_t k = 0; k < a->nty; k++) {
    tcurve_free(&a->ty[k].live);
    free(a->ty[k].level);
  }
  free(a->ty);
  u64map_free(&a->ty_idx);
  types_free(a->types);
}

/* [s] as SVG text. */
static void xml_text(FILE *o, const char *s)
{
  for (const char *p = s; *p; p++) {
    if (*p == '<') fputs("&lt;", o);
    else if (*p == '&') fputs("&amp;", o);
    else if (*p == '>') fputs("&gt;", o);
    else putc(*p, o);
  }
}

/* A "nice" axis maximum: 1, 2 or 5 times a power of ten, >= v. */
static double nice_max(double v)
{
  if (v <= 0) return 1;
  double p = pow(10, floor(log10(v)));
  double m = v / p;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

/* Both charts' plot area (pixels), and its x (seconds, up to tend) and
   y (bytes, up to maxb) scales. */
static const double X0 = 80, Y0 = 40, PW = 820, PH = 320;
#define XS(t) (X0 + PW * (t) / tend)
#define YB(v) (Y0 + PH - PH * (v) / maxb)

/* The GC's major heap size, a step at each GC event. */
static void write_heap_line(FILE *o, const tl_acc *a, double tend, double maxb)
{
  if (!a->ngc) return;
  fprintf(o, "<polyline class=\"heap\" fill=\"none\" stroke=\"#393\" stroke-width=\"1.5\" points=\"");
  double prev = a->gc[0].heap;
  for (size_t i = 0; i < a->ngc; i++) {
    fprintf(o, "%.1f,%.1f %.1f,%.1f ", XS(a->gc[i].t / 1e9), YB(prev), XS(a->gc[i].t / 1e9),
            YB(a->gc[i].heap));
    prev = a->gc[i].heap;
  }
  fprintf(o, "%.1f,%.1f\"/>\n", XS(tend), YB(prev));
}

/* Both charts' start: the SVG [height] pixels high, its title ([path]:
   [what]), the plot's frame, the byte gridlines and their labels (left
   axis, up to [maxb]), each followed by its allocation-rate label (right
   axis, up to [maxr]) when [rate_axis], and the time labels up to
   [tend] seconds. */
static void write_svg_frame(FILE *o, const char *path, const char *what, double height,
                            double maxb, int rate_axis, double maxr, double tend)
{
  char b1[32];
  fprintf(o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
             "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"1000\" height=\"%g\" "
             "font-family=\"sans-serif\" font-size=\"12\">\n"
             "<rect width=\"1000\" height=\"%g\" fill=\"white\"/>\n<text x=\"%g\" y=\"22\" "
             "font-size=\"14\">", height, height, X0);
  xml_text(o, path);
  fprintf(o, ": %s</text>\n", what);
  fprintf(o, "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"none\" stroke=\"#888\"/>\n",
          X0, Y0, PW, PH);
  for (int k = 0; k <= 4; k++) {
    double v = maxb * k / 4, y = YB(v);
    fprintf(o, "<line x1=\"%g\" y1=\"%.1f\" x2=\"%g\" y2=\"%.1f\" stroke=\"#eee\"/>"
               "<text x=\"%g\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
            X0, y, X0 + PW, y, X0 - 4, y + 4, human_bytes(v, b1, sizeof b1));
    if (rate_axis)
      fprintf(o, "<text x=\"%g\" y=\"%.1f\" fill=\"#c80\">%s/s</text>\n", X0 + PW + 4, y + 4,
              human_bytes(maxr * k / 4, b1, sizeof b1));
  }
  for (int k = 0; k <= 5; k++) {
    double t = tend * k / 5;
    fprintf(o, "<text x=\"%.1f\" y=\"%g\" text-anchor=\"middle\">%.3g s</text>\n", XS(t),
            Y0 + PH + 16, t);
  }
}

static void write_svg(FILE *o, const char *path, const tl_acc *a, const double *live,
                      const double *rate, uint32_t m, uint64_t W, uint64_t end)
{
  double maxb = 0, maxr = 0;
  for (uint32_t i = 0; i < m; i++) {
    if (live[i] > maxb) maxb = live[i];
    if (rate[i] > maxr) maxr = rate[i];
  }
  for (size_t i = 0; i < a->ngc; i++) if (a->gc[i].heap > maxb) maxb = a->gc[i].heap;
  maxb = nice_max(maxb);
  maxr = nice_max(maxr);
  double tend = end ? end / 1e9 : 1;
  char b1[32];
#define YR(v) (Y0 + PH - PH * (v) / maxr)
  write_svg_frame(o, path, "memory over time", 420, maxb, 1, maxr, tend);
  /* Major cycle ticks and compaction marks. */
  for (size_t i = 0; i < a->ngc; i++)
    fprintf(o, "<line class=\"major\" x1=\"%.1f\" y1=\"%g\" x2=\"%.1f\" y2=\"%g\" stroke=\"#999\"/>\n",
            XS(a->gc[i].t / 1e9), Y0 + PH, XS(a->gc[i].t / 1e9), Y0 + PH - 6);
  for (size_t i = 0; i < a->ncompact; i++)
    fprintf(o, "<line class=\"compaction\" x1=\"%.1f\" y1=\"%g\" x2=\"%.1f\" y2=\"%g\" "
               "stroke=\"#d00\" stroke-dasharray=\"4,3\"><title>compaction at %.6f s</title></line>\n",
            XS(a->compact[i] / 1e9), Y0, XS(a->compact[i] / 1e9), Y0 + PH, a->compact[i] / 1e9);
  /* Allocation rate (right axis), live estimate, real heap. */
  fprintf(o, "<polyline class=\"rate\" fill=\"none\" stroke=\"#c80\" stroke-width=\"1\" points=\"");
  for (uint32_t i = 0; i < m; i++)
    fprintf(o, "%.1f,%.1f ", XS(((i + 0.5) * W) / 1e9), YR(rate[i]));
  fprintf(o, "\"/>\n<polyline class=\"live\" fill=\"none\" stroke=\"#06c\" stroke-width=\"2\" points=\"%.1f,%.1f ",
          XS(0), YB(0));
  for (uint32_t i = 0; i < m; i++) {
    double t = (double)((i + 1) * W) / 1e9;
    fprintf(o, "%.1f,%.1f ", XS(t > tend ? tend : t), YB(live[i]));
  }
  fprintf(o, "\"/>\n");
  /* Peak of the estimated live heap (end of its bin). */
  uint32_t pk = 0;
  for (uint32_t i = 1; i < m; i++) if (live[i] > live[pk]) pk = i;
  if (m && live[pk] > 0) {
    double tp = (double)((pk + 1) * W) / 1e9;
    if (tp > tend) tp = tend;
    int right = XS(tp) > X0 + 0.7 * PW;    /* keep the label inside */
    fprintf(o, "<circle class=\"peak\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#06c\"/>"
               "<text x=\"%.1f\" y=\"%.1f\" fill=\"#06c\" text-anchor=\"%s\">peak %s at %.3f s</text>\n",
            XS(tp), YB(live[pk]), XS(tp) + (right ? -6 : 6), YB(live[pk]) - 6,
            right ? "end" : "start", human_bytes(live[pk], b1, sizeof b1), tp);
  }
  write_heap_line(o, a, tend, maxb);
  double ly = Y0 + PH + 40;
  fprintf(o, "<g transform=\"translate(%g,%g)\">"
             "<line x1=\"0\" y1=\"-4\" x2=\"20\" y2=\"-4\" stroke=\"#06c\" stroke-width=\"2\"/>"
             "<text x=\"25\" y=\"0\">estimated live (sampled)</text>"
             "<line x1=\"190\" y1=\"-4\" x2=\"210\" y2=\"-4\" stroke=\"#393\" stroke-width=\"1.5\"/>"
             "<text x=\"215\" y=\"0\">major heap size (GC)</text>"
             "<line x1=\"370\" y1=\"-4\" x2=\"390\" y2=\"-4\" stroke=\"#c80\"/>"
             "<text x=\"395\" y=\"0\">allocation rate (right axis)</text>"
             "<line x1=\"580\" y1=\"-8\" x2=\"580\" y2=\"2\" stroke=\"#d00\" stroke-dasharray=\"4,3\"/>"
             "<text x=\"585\" y=\"0\">compaction</text>"
             "<line x1=\"670\" y1=\"-8\" x2=\"670\" y2=\"2\" stroke=\"#999\"/>"
             "<text x=\"675\" y=\"0\">major cycle</text></g>\n</svg>\n", X0, ly);
#undef YR
}


/* --by type: the live bytes of the [shown] largest types stacked (the
   largest at the bottom), the others as one grey band on top, and the
   GC's major heap size; a legend row per band below the plot. */
static void write_svg_types(FILE *o, const char *path, const tl_acc *a, size_t shown,
                            const double *other, uint32_t m, uint64_t W, uint64_t end)
{
  static const char *const colors[] = { "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                        "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#86bcb6" };
  size_t nbands = shown + (shown < a->nty);
  double maxb = 0, tend = end ? end / 1e9 : 1;
  double *low = xcalloc(m ? m : 1, sizeof *low), *high = xcalloc(m ? m : 1, sizeof *high);
  for (uint32_t i = 0; i < m; i++) {
    double sum = other[i];
    for (size_t k = 0; k < shown; k++) sum += a->ty[k].level[i];
    if (sum > maxb) maxb = sum;
  }
  for (size_t i = 0; i < a->ngc; i++) if (a->gc[i].heap > maxb) maxb = a->gc[i].heap;
  maxb = nice_max(maxb);
  double height = Y0 + PH + 60 + 18.0 * (double)nbands;
  char b1[32];
  write_svg_frame(o, path, "live memory by type", height, maxb, 0, 0, tend);
  for (size_t k = 0; k < nbands; k++) {
    const double *lv = k < shown ? a->ty[k].level : other;
    const char *color = k < shown ? colors[k % 10] : "#bbb";
    for (uint32_t i = 0; i < m; i++) high[i] = low[i] + lv[i];
    fprintf(o, "<polygon class=\"type\" fill=\"%s\" stroke=\"none\" points=\"%.1f,%.1f ", color,
            XS(0), YB(0));
    for (uint32_t i = 0; i < m; i++) {
      double t = (double)((i + 1) * W) / 1e9;
      fprintf(o, "%.1f,%.1f ", XS(t > tend ? tend : t), YB(high[i]));
    }
    for (uint32_t i = m; i-- > 0;) {
      double t = (double)((i + 1) * W) / 1e9;
      fprintf(o, "%.1f,%.1f ", XS(t > tend ? tend : t), YB(low[i]));
    }
    fprintf(o, "\"><title>");
    xml_text(o, k < shown ? a->ty[k].type : "other types");
    fprintf(o, "</title></polygon>\n");
    memcpy(low, high, m * sizeof *low);
  }
  write_heap_line(o, a, tend, maxb);
  /* Legend: the top band first, as stacked. */
  double ly = Y0 + PH + 40;
  fprintf(o, "<g transform=\"translate(%g,%g)\"><line x1=\"0\" y1=\"-4\" x2=\"20\" y2=\"-4\" "
             "stroke=\"#393\" stroke-width=\"1.5\"/><text x=\"25\" y=\"0\">major heap size (GC)"
             "</text></g>\n", X0, ly);
  for (size_t r = 0; r < nbands; r++) {
    size_t k = nbands - 1 - r;
    const char *color = k < shown ? colors[k % 10] : "#bbb";
    double peak = 0;
    if (k < shown) peak = a->ty[k].peak;
    else for (uint32_t i = 0; i < m; i++) if (other[i] > peak) peak = other[i];
    fprintf(o, "<g transform=\"translate(%g,%g)\"><rect x=\"0\" y=\"-10\" width=\"20\" "
               "height=\"12\" fill=\"%s\"/><text x=\"25\" y=\"0\">peak %s  ", X0,
            ly + 18.0 * (double)(r + 1), color, human_bytes(peak, b1, sizeof b1));
    if (k < shown) xml_text(o, a->ty[k].type);
    else fprintf(o, "%zu other types", a->nty - shown);
    fprintf(o, "</text></g>\n");
  }
  fprintf(o, "</svg>\n");
  free(low);
  free(high);
}
#undef XS
#undef YB

static const char usage[] =
  "usage: ocaml-memprof timeline [OPTIONS] TRACE...\n"
  "Plot the estimated live heap (from samples), the allocation rate, and the\n"
  "major heap size reported by the GC (memprof traces), marking compactions\n"
  "and major cycles.  A sampled block is live until its collection, or until\n"
  "a heap snapshot of the trace that does not hold it (it was dead then).\n"
  "  -o FILE      output file (default: stdout)\n"
  "  --csv        CSV instead of SVG: time_s,live_bytes,alloc_bytes_per_s,heap_bytes\n"
  "  --json       JSON instead of SVG: the same series as arrays\n"
  "  --bins N     resolution (200)\n"
  "  --by type    live bytes by OCaml type (read from the program's .cmt files):\n"
  "               the -n largest types by peak stacked, the others as one band;\n"
  "               CSV: time_s,live_bytes,one column per type,other_types\n"
  "  -n N         with --by type: types shown (8; 0 = all)\n"
  "  --cmt-path DIR  with --by type: also search DIR for .cmt files (repeatable)\n";

static int bins_option(void *u, int argc, char **argv, int *i)
{
  return cli_bins_option(u, 2, 100000, argc, argv, i);
}

/* A JSON array of [m] levels. */
static void json_levels(FILE *o, const double *v, uint32_t m)
{
  fputc('[', o);
  for (uint32_t i = 0; i < m; i++) fprintf(o, "%s%.0f", i ? "," : "", v[i]);
  fputc(']', o);
}

/* CSV and JSON: one row (or array element) per bin: its end time, the
   live bytes, the allocation rate, the GC's heap size (the last major
   cycle's before the bin's end; empty or null before the first one);
   with --by type, the levels of the [shown] largest types and of the
   others instead of the rate. */
static void write_series(FILE *o, int json, const char *path, const tl_acc *a, const double *live,
                         const double *rate, const double *other, size_t shown, uint32_t m,
                         uint64_t W, uint64_t end)
{
  double *heap = xmalloc((m ? m : 1) * sizeof *heap);
  size_t g = 0;
  double h = -1;
  for (uint32_t i = 0; i < m; i++) {
    while (g < a->ngc && a->gc[g].t <= (i + 1) * W) h = a->gc[g++].heap;
    heap[i] = h;
  }
  if (json) {
    fprintf(o, "{\"file\": ");
    json_str(o, path);
    fprintf(o, ", \"duration_s\": %.6f, \"bin_s\": %.9f, \"time_s\": [", end / 1e9, W / 1e9);
    for (uint32_t i = 0; i < m; i++)
      fprintf(o, "%s%.6f", i ? "," : "", ((i + 1) * W > end ? end : (i + 1) * W) / 1e9);
    fprintf(o, "],\n \"live_bytes\": ");
    json_levels(o, live, m);
    fprintf(o, ",\n \"heap_bytes\": [");
    for (uint32_t i = 0; i < m; i++) {
      if (heap[i] >= 0) fprintf(o, "%s%.0f", i ? "," : "", heap[i]);
      else fprintf(o, "%snull", i ? "," : "");
    }
    fputc(']', o);
    if (!a->types) {
      fprintf(o, ",\n \"alloc_bytes_per_s\": ");
      json_levels(o, rate, m);
    } else {
      fprintf(o, ",\n \"types\": [");
      for (size_t k = 0; k < shown; k++) {
        fprintf(o, "%s\n  {\"type\": ", k ? "," : "");
        json_str(o, a->ty[k].type);
        fprintf(o, ", \"peak_bytes\": %.0f, \"end_bytes\": %.0f, \"live_bytes\": ", a->ty[k].peak,
                m ? a->ty[k].level[m - 1] : 0);
        json_levels(o, a->ty[k].level, m);
        fputc('}', o);
      }
      fprintf(o, "],\n \"other_types\": {\"types\": %zu, \"live_bytes\": ", a->nty - shown);
      json_levels(o, other, m);
      fputc('}', o);
    }
    fprintf(o, "}\n");
  } else {
    fprintf(o, "time_s,live_bytes");
    if (!a->types) fprintf(o, ",alloc_bytes_per_s,heap_bytes");
    for (size_t k = 0; k < shown; k++) { fputc(',', o); csv_str(o, a->ty[k].type); }
    if (a->types) fprintf(o, ",other_types");
    fputc('\n', o);
    for (uint32_t i = 0; i < m; i++) {
      uint64_t t = (i + 1) * W;
      fprintf(o, "%.6f,%.0f", (t > end ? end : t) / 1e9, live[i]);
      if (!a->types) {
        fprintf(o, ",%.0f,", rate[i]);
        if (heap[i] >= 0) fprintf(o, "%.0f", heap[i]);
      }
      for (size_t k = 0; k < shown; k++) fprintf(o, ",%.0f", a->ty[k].level[i]);
      if (a->types) fprintf(o, ",%.0f", other[i]);
      fputc('\n', o);
    }
  }
  free(heap);
}

int cmd_timeline(int argc, char **argv)
{
  an_filter f;
  an_filter_init(&f);
  long bins = 200;
  table_opts t = { .mode = OUT_TEXT, .by = AN_BY_FUNCTION, .limit = -1 };
  cli_inputs in;
  cli_inputs_init(&in);
  int rc = report_parse(argc, argv, usage, &f, &in, &t,
                        TABLE_CSV | TABLE_JSON | TABLE_O | TABLE_TYPE | TABLE_N, bins_option, &bins);
  if (rc < 0 && t.limit >= 0 && !t.by_type) rc = cli_usage_error("-n goes with --by type");
  an_ctx *c = cli_open(&rc, &f, &in);
  if (!c) return rc;
  const char *out = t.out;
  const char *path = in.npaths == 1 ? in.paths[0] : "several traces";
  tl_acc a;
  memset(&a, 0, sizeof a);
  a.word_bytes = an_header(c)->word_bytes;
  u64map_init(&a.cycles_seen, 64);
  u64map_init(&a.ty_idx, 64);
  /* 2x bins so that after the last doubling at least `bins` remain used. */
  a.nbins = (uint32_t)bins * 2;
  tcurve_init(&a.live, a.nbins, 1000);
  tcurve_init(&a.alloc, a.nbins, 1000);
  if (t.by_type) a.types = types_open(c, t.cmt_paths, t.ncmt_paths);
  an_callbacks cb = { &a, on_event, on_sample };
  if ((rc = cli_run(c, &cb, &f, &in))) { tl_free(&a); return rc; }
  double *live = NULL, *rate = NULL, *other = NULL;
  if (a.types && types_close(a.types)) { rc = 1; goto done; }
  uint64_t end = an_get_stats(c)->max_end_time;
  tcurve_cover(&a.live, end);
  tcurve_cover(&a.alloc, end);
  uint64_t W = a.live.width > a.alloc.width ? a.live.width : a.alloc.width;
  tcurve_coarsen(&a.live, W);
  tcurve_coarsen(&a.alloc, W);
  uint32_t m = (uint32_t)(end / W) + 1;
  if (m > a.live.n) m = a.live.n;
  live = xmalloc(a.live.n * sizeof *live);
  rate = xmalloc(a.live.n * sizeof *rate);
  other = xmalloc(a.live.n * sizeof *other);
  tcurve_levels(&a.live, live);
  for (uint32_t i = 0; i < m; i++) rate[i] = a.alloc.d[i] / (W / 1e9);
  size_t shown = t.limit < 0 ? 8 : t.limit == 0 || (size_t)t.limit > a.nty ? a.nty : (size_t)t.limit;
  if (shown > a.nty) shown = a.nty;
  types_levels(&a, W, m, shown, other);
  FILE *o = out_open(out);
  if (!o) { rc = 1; goto done; }
  if (t.mode != OUT_TEXT) write_series(o, t.mode == OUT_JSON, path, &a, live, rate, other, shown, m, W, end);
  else if (a.types) write_svg_types(o, path, &a, shown, other, m, W, end);
  else write_svg(o, path, &a, live, rate, m, W, end);
  rc = out_close(o, out);
  if (a.types) types_print_hints(a.types);
done:
  free(live); free(rate); free(other);
  tl_free(&a);
  an_filter_free(&f);
  an_close(c);
  cli_inputs_free(&in);
  return rc;
}
