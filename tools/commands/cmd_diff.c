/* cmd_diff.c: `ocaml-memprof diff A B`: sites whose allocated or live
   volume changed most between two traces.

   Each trace is read in turn with the same filters; per site key (interned
   per trace, so joined by string through one strpool here) we keep the
   estimated allocated and live-at-end bytes of A and B.  Bytes are
   un-sampled per trace, so traces with different rates compare fairly. */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"
#include "commands.h"
#include "report.h"
#include "util.h"

typedef struct {
  const char *key;
  double alloc[2], live[2];
} drow;

typedef struct {
  strpool *keys;
  drow *rows;
  size_t n, cap;
  int side;
  an_keykind by;
  uint64_t live_at;
} diff_acc;

static drow *row_for(diff_acc *a, const char *key)
{
  uint32_t id = strpool_intern(a->keys, key, strlen(key));
  if (id >= a->n) {           /* ids are dense: a new key is the next row */
    grow_array((void **)&a->rows, &a->cap, (size_t)id + 1, sizeof *a->rows);
    memset(&a->rows[id], 0, sizeof *a->rows);
    a->rows[id].key = strpool_get(a->keys, id);
    a->n = (size_t)id + 1;
  }
  return &a->rows[id];
}

static void on_sample(void *u, an_ctx *c, const an_sample *s)
{
  diff_acc *a = u;
  const char *key = s->node ? an_loc_key(c, an_nodes(c)[s->node].loc, a->by) : "<no backtrace>";
  drow *r = row_for(a, key);
  double b = an_bytes(c, s->nsamples);
  r->alloc[a->side] += b;
  if (sample_live_at(s, a->live_at)) r->live[a->side] += b;
}

static int g_sort_live;
static int cmp(const void *x, const void *y)
{
  const drow *a = x, *b = y;
  double da = g_sort_live ? fabs(a->live[1] - a->live[0]) : fabs(a->alloc[1] - a->alloc[0]);
  double db = g_sort_live ? fabs(b->live[1] - b->live[0]) : fabs(b->alloc[1] - b->alloc[0]);
  if (da != db) return da < db ? 1 : -1;
  return strcmp(a->key, b->key);
}

static const char usage[] =
  "usage: ocaml-memprof diff [OPTIONS] A B\n"
  "Compare two traces site by site: estimated allocated bytes and bytes live\n"
  "at the end, in A and in B, ranked by the absolute change.\n"
  "  --by function|location|module   site grouping (function)\n"
  "  --sort alloc|live   rank by change of allocated (default) or live bytes\n"
  "  -n N              rows (20; 0 = all)\n"
  "  --json, --csv     machine-readable output;  -o FILE  write to FILE\n";

int cmd_diff(int argc, char **argv)
{
  an_filter f;
  an_filter_init(&f);
  diff_acc a;
  memset(&a, 0, sizeof a);
  a.by = AN_BY_FUNCTION;
  a.live_at = AN_NEVER;
  const char *paths[2] = { NULL, NULL }, *out = NULL;
  long limit = 20;
  out_mode mode = OUT_TEXT;
  g_sort_live = 0;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    int k = an_filter_option(&f, argc, argv, &i);
    if (k < 0) return 2;
    if (k) continue;
    if (!strcmp(o, "--help") || !strcmp(o, "-h")) { print_usage(stdout, usage, 1); return 0; }
    else if (!strcmp(o, "--json")) mode = OUT_JSON;
    else if (!strcmp(o, "--csv")) mode = OUT_CSV;
    else if (i + 1 < argc && !strcmp(o, "--by")) {
      if (parse_keykind(argv[++i], &a.by) < 0) return bad_option("diff", argv[i]);
    } else if (i + 1 < argc && !strcmp(o, "--sort")) {
      const char *v = argv[++i];
      if (!strcmp(v, "live")) g_sort_live = 1;
      else if (strcmp(v, "alloc")) return bad_option("diff", v);
    } else if (i + 1 < argc && !strcmp(o, "-n")) {
      if (parse_count(argv[++i], &limit) < 0) return bad_option("diff", argv[i]);
    } else if (i + 1 < argc && !strcmp(o, "-o")) out = argv[++i];
    else if (o[0] == '-' && o[1]) return bad_option("diff", o);
    else if (!paths[0]) paths[0] = o;
    else if (!paths[1]) paths[1] = o;
    else return bad_option("diff", o);
  }
  if (!paths[1]) { print_usage(stderr, usage, 1); return 2; }
  a.keys = strpool_new();
  double tot_alloc[2] = { 0, 0 }, tot_live[2] = { 0, 0 };
  int rc = 0;
  for (int side = 0; side < 2 && !rc; side++) {
    an_ctx *c = an_open(paths[side], &f);
    if (!c) { rc = 1; break; }
    a.side = side;
    an_callbacks cb = { &a, NULL, on_sample };
    rc = an_run(c, &cb);
    an_close(c);
  }
  if (rc) { strpool_free(a.keys); free(a.rows); an_filter_free(&f); return rc; }
  for (size_t i = 0; i < a.n; i++)
    for (int s = 0; s < 2; s++) { tot_alloc[s] += a.rows[i].alloc[s]; tot_live[s] += a.rows[i].live[s]; }
  if (a.n) qsort(a.rows, a.n, sizeof *a.rows, cmp);
  size_t shown = limit && (size_t)limit < a.n ? (size_t)limit : a.n;
  FILE *o = out_open(out);
  if (!o) { rc = 1; goto done; }
  if (mode == OUT_JSON) {
    fprintf(o, "{\"a\": "); json_str(o, paths[0]);
    fprintf(o, ", \"b\": "); json_str(o, paths[1]);
    fprintf(o, ", \"total\": {\"alloc_a\": %.0f, \"alloc_b\": %.0f, \"live_a\": %.0f, \"live_b\": %.0f}, \"rows\": [",
            tot_alloc[0], tot_alloc[1], tot_live[0], tot_live[1]);
    for (size_t i = 0; i < shown; i++) {
      drow *r = &a.rows[i];
      fprintf(o, "%s\n  {\"site\": ", i ? "," : "");
      json_str(o, r->key);
      fprintf(o, ", \"alloc_a\": %.0f, \"alloc_b\": %.0f, \"alloc_delta\": %.0f, \"live_a\": %.0f, "
              "\"live_b\": %.0f, \"live_delta\": %.0f}", r->alloc[0], r->alloc[1],
              r->alloc[1] - r->alloc[0], r->live[0], r->live[1], r->live[1] - r->live[0]);
    }
    fprintf(o, "\n]}\n");
  } else if (mode == OUT_CSV) {
    fprintf(o, "site,alloc_a,alloc_b,alloc_delta,live_a,live_b,live_delta\n");
    for (size_t i = 0; i < shown; i++) {
      drow *r = &a.rows[i];
      csv_str(o, r->key);
      fprintf(o, ",%.0f,%.0f,%.0f,%.0f,%.0f,%.0f\n", r->alloc[0], r->alloc[1],
              r->alloc[1] - r->alloc[0], r->live[0], r->live[1], r->live[1] - r->live[0]);
    }
  } else {
    char b[6][32];
    fprintf(o, "A = %s\nB = %s\nallocated %s -> %s, live at end %s -> %s\n", paths[0], paths[1],
            human_bytes(tot_alloc[0], b[0], 32), human_bytes(tot_alloc[1], b[1], 32),
            human_bytes(tot_live[0], b[2], 32), human_bytes(tot_live[1], b[3], 32));
    fprintf(o, "%10s %10s %10s %10s %10s %10s  %s\n", "alloc A", "alloc B", "change",
            "live A", "live B", "change", "site");
    for (size_t i = 0; i < shown; i++) {
      drow *r = &a.rows[i];
      char d1[32], d2[32];
      human_bytes(r->alloc[1] - r->alloc[0], d1, sizeof d1);
      human_bytes(r->live[1] - r->live[0], d2, sizeof d2);
      fprintf(o, "%10s %10s %s%-9s %10s %10s %s%-9s  %s\n",
              human_bytes(r->alloc[0], b[0], 32), human_bytes(r->alloc[1], b[1], 32),
              r->alloc[1] >= r->alloc[0] ? "+" : "", d1,
              human_bytes(r->live[0], b[2], 32), human_bytes(r->live[1], b[3], 32),
              r->live[1] >= r->live[0] ? "+" : "", d2, r->key);
    }
  }
  rc = out_close(o, out);
done:
  free(a.rows);
  strpool_free(a.keys);
  an_filter_free(&f);
  return rc;
}
