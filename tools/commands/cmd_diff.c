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
#include "cli.h"
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
  "       ocaml-memprof diff [OPTIONS] A... -- B...\n"
  "Compare two traces, or two groups of traces (each A or B a file, a\n"
  "directory or a glob pattern; several are merged), site by site:\n"
  "estimated allocated bytes and bytes live at the end, in A and in B,\n"
  "ranked by the absolute change.\n"
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
  const char *v;
  table_opts t = { .mode = OUT_TEXT, .by = AN_BY_FUNCTION, .limit = 20 };
  g_sort_live = 0;
  cli_inputs in[2], sel;
  cli_inputs_init(&sel);
  cli_inputs_init(&in[0]);
  cli_inputs_init(&in[1]);
  const char *pos[2] = { NULL, NULL };
  int npos = 0, dashes = 0, rc = -1;
  for (int i = 1; i < argc && rc < 0; i++) {
    const char *o = argv[i];
    int k = dashes ? 0 : cli_option(&f, &sel, 0, argc, argv, &i);
    if (!k && !dashes)
      k = table_option(&t, TABLE_JSON | TABLE_CSV | TABLE_BY | TABLE_N | TABLE_O, argc, argv, &i);
    if (k < 0) rc = 2;
    else if (k) continue;
    else if (dashes) cli_inputs_add(&in[1], o);
    else if (!strcmp(o, "--")) dashes = 1;
    else if (cli_is_help(o)) { print_usage(stdout, usage, 1); rc = 0; }
    else if (!strcmp(o, "--sort")) {
      if (!(v = cli_value(argc, argv, &i))) rc = 2;
      else if (!strcmp(v, "live")) g_sort_live = 1;
      else if (strcmp(v, "alloc")) rc = cli_bad_value(o, v, "alloc or live");
    } else if (o[0] == '-' && o[1]) rc = cli_unknown_option(o, usage, 1);
    else {
      cli_inputs_add(&in[0], o);
      if (npos < 2) pos[npos] = o;
      npos++;
    }
  }
  if (rc < 0 && !dashes) {         /* diff A B: one operand per side */
    if (npos != 2) rc = cli_usage_error("diff takes two traces A B, or A... -- B...");
    else {
      cli_inputs_free(&in[0]);
      cli_inputs_init(&in[0]);
      cli_inputs_add(&in[0], pos[0]);
      cli_inputs_add(&in[1], pos[1]);
    }
  }
  for (int side = 0; side < 2; side++) {   /* --pid, --exe: on both sides */
    in[side].have_pid = sel.have_pid;
    in[side].pid = sel.pid;
    in[side].exe = sel.exe;
  }
  if (rc < 0 && dashes && (!in[0].nargs || !in[1].nargs))
    rc = cli_usage_error("diff A... -- B...: both sides need traces");
  if (rc == 0) rc = -2;             /* --help: done */
  if (rc == -1) rc = cli_inputs_resolve(&in[0]);
  if (rc == 0) rc = cli_inputs_resolve(&in[1]);
  const char *label[2];
  char lbuf[2][64];
  for (int side = 0; side < 2; side++) {
    if (in[side].npaths == 1) label[side] = in[side].paths[0];
    else {
      snprintf(lbuf[side], sizeof lbuf[side], "%zu traces", in[side].npaths);
      label[side] = lbuf[side];
    }
  }
  a.by = t.by;
  const char *out = t.out;
  long limit = t.limit;
  out_mode mode = t.mode;
  a.keys = strpool_new();
  double tot_alloc[2] = { 0, 0 }, tot_live[2] = { 0, 0 };
  for (int side = 0; side < 2 && !rc; side++) {
    an_ctx *c = an_open(in[side].paths, in[side].npaths, &f);
    if (!c) { rc = 1; break; }
    a.side = side;
    an_callbacks cb = { &a, NULL, on_sample };
    rc = an_run(c, &cb);
    an_close(c);
  }
  if (rc) {
    strpool_free(a.keys); free(a.rows); an_filter_free(&f);
    cli_inputs_free(&in[0]); cli_inputs_free(&in[1]);
    return rc == -2 ? 0 : rc;
  }
  for (size_t i = 0; i < a.n; i++)
    for (int s = 0; s < 2; s++) { tot_alloc[s] += a.rows[i].alloc[s]; tot_live[s] += a.rows[i].live[s]; }
  if (a.n) qsort(a.rows, a.n, sizeof *a.rows, cmp);
  size_t shown = limit && (size_t)limit < a.n ? (size_t)limit : a.n;
  FILE *o = out_open(out);
  if (!o) { rc = 1; goto done; }
  if (mode == OUT_JSON) {
    fprintf(o, "{\"a\": "); json_str(o, label[0]);
    fprintf(o, ", \"b\": "); json_str(o, label[1]);
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
    fputs("A = ", o); cli_put_safe(o, label[0]);
    fputs("\nB = ", o); cli_put_safe(o, label[1]);
    fprintf(o, "\nallocated %s -> %s, live at end %s -> %s\n",
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
  cli_inputs_free(&in[0]);
  cli_inputs_free(&in[1]);
  return rc;
}
