/* cmd_top.c: `ocaml-memprof top`: allocation sites ranked.

   Samples are accumulated per call-tree node (nodeagg), then every node
   with data is mapped to a row key: the innermost frame's function,
   location or module; or, with --callers/--callees RE, the frame just
   outside/inside the innermost frame matching RE.  Keys are interned
   strings, so rows are found through a map keyed by the string pointer.
   Live volume is measured at --live-at (end, peak or a time); "peak" costs
   a first pass over the file (aggregate.c). */

#include <stdlib.h>
#include <string.h>

#include "aggregate.h"
#include "commands.h"
#include "report.h"
#include "util.h"

typedef struct {
  const char *key;
  const char *file;            /* of the first node seen, for by-function */
  uint32_t line;
  nstat s;
} row;

typedef enum { SORT_ALLOC, SORT_SAMPLES, SORT_LIVE, SORT_PROMOTED } sort_key;
static sort_key g_sort;

static double sort_value(const row *r)
{
  switch (g_sort) {
  case SORT_SAMPLES: return r->s.alloc_samples;
  case SORT_LIVE: return r->s.live_samples;
  case SORT_PROMOTED: return r->s.promoted_samples;
  default: return r->s.alloc_samples;
  }
}

static int cmp_rows(const void *a, const void *b)
{
  double x = sort_value(a), y = sort_value(b);
  if (x != y) return x < y ? 1 : -1;
  return strcmp(((const row *)a)->key, ((const row *)b)->key);
}

static void add_stat(nstat *d, const nstat *s)
{
  d->alloc_samples += s->alloc_samples;
  d->alloc_objects += s->alloc_objects;
  d->live_samples += s->live_samples;
  d->live_objects += s->live_objects;
  d->promoted_samples += s->promoted_samples;
  d->blocks += s->blocks;
  d->live_blocks += s->live_blocks;
}

static const char usage[] =
  "usage: ocaml-memprof top [OPTIONS] TRACE\n"
  "Rank allocation sites.  Columns: estimated allocated bytes, samples,\n"
  "estimated objects, bytes live at --live-at, bytes promoted to the major heap.\n"
  "  --by function|location|module   grouping of the allocation site (function)\n"
  "  --sort alloc|samples|live|promoted   ranking (alloc)\n"
  "  --live-at end|peak|TIME  when 'live' is measured (end)\n"
  "  --callers RE      rank the callers of the innermost frame matching RE\n"
  "  --callees RE      rank what that frame calls (<self> = allocates itself)\n"
  "  -n N              rows to print (20; 0 = all)\n"
  "  --json, --csv     machine-readable output\n"
  "  -o FILE           write to FILE\n";

typedef struct {
  regex_t re;
  uint8_t *cache;              /* per location: 0 unknown, 1 no, 2 yes */
  size_t cap;
} matcher;

static int loc_match(an_ctx *c, matcher *m, uint32_t loc)
{
  if (loc >= m->cap) {
    size_t old = m->cap;
    grow_array((void **)&m->cache, &m->cap, (size_t)loc + 1, 1);
    memset(m->cache + old, 0, m->cap - old);
  }
  if (!m->cache[loc]) m->cache[loc] = an_loc_matches(c, loc, &m->re) ? 2 : 1;
  return m->cache[loc] == 2;
}

int cmd_top(int argc, char **argv)
{
  an_filter f;
  an_filter_init(&f);
  an_keykind by = AN_BY_FUNCTION;
  const char *path = NULL, *out = NULL, *live_arg = "end", *rel_pat = NULL;
  int rel = 0;                 /* 1 callers, 2 callees */
  long limit = 20;
  out_mode mode = OUT_TEXT;
  g_sort = SORT_ALLOC;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int k = an_filter_option(&f, argc, argv, &i);
    if (k < 0) return 2;
    if (k) continue;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { print_usage(stdout, usage, 1); return 0; }
    else if (!strcmp(a, "--json")) mode = OUT_JSON;
    else if (!strcmp(a, "--csv")) mode = OUT_CSV;
    else if (i + 1 < argc && !strcmp(a, "--by")) {
      if (parse_keykind(argv[++i], &by) < 0) return bad_option("top", argv[i]);
    } else if (i + 1 < argc && !strcmp(a, "--sort")) {
      const char *v = argv[++i];
      if (!strcmp(v, "alloc")) g_sort = SORT_ALLOC;
      else if (!strcmp(v, "samples")) g_sort = SORT_SAMPLES;
      else if (!strcmp(v, "live")) g_sort = SORT_LIVE;
      else if (!strcmp(v, "promoted")) g_sort = SORT_PROMOTED;
      else return bad_option("top", v);
    } else if (i + 1 < argc && !strcmp(a, "--live-at")) live_arg = argv[++i];
    else if (i + 1 < argc && !strcmp(a, "--callers")) { rel = 1; rel_pat = argv[++i]; }
    else if (i + 1 < argc && !strcmp(a, "--callees")) { rel = 2; rel_pat = argv[++i]; }
    else if (i + 1 < argc && !strcmp(a, "-n")) {
      if (parse_count(argv[++i], &limit) < 0) return bad_option("top", argv[i]);
    } else if (i + 1 < argc && !strcmp(a, "-o")) out = argv[++i];
    else if (a[0] == '-' && a[1]) return bad_option("top", a);
    else if (!path) path = a;
    else return bad_option("top", a);
  }
  if (!path) { print_usage(stderr, usage, 1); return 2; }
  matcher m;
  memset(&m, 0, sizeof m);
  if (rel && regcomp(&m.re, rel_pat, REG_EXTENDED | REG_NOSUB)) {
    fprintf(stderr, "ocaml-memprof top: bad pattern '%s'\n", rel_pat);
    return 2;
  }
  an_ctx *c;
  nodeagg agg;
  int rc = nodeagg_run(path, &f, live_arg, &agg, &c);
  if (rc) {
    if (rel) regfree(&m.re);
    an_filter_free(&f);
    return rc;
  }
  uint64_t live_at = agg.live_at;

  /* Nodes -> rows. */
  const an_node *nodes = an_nodes(c);
  uint32_t nn = an_node_count(c);
  row *rows = NULL;
  size_t nrows = 0, rcap = 0;
  u64map idx;
  u64map_init(&idx, 256);
  nstat total;
  memset(&total, 0, sizeof total);
  for (uint32_t i = 0; i < nn; i++) {
    nstat s = nodeagg_get(&agg, i);
    if (!s.blocks) continue;
    add_stat(&total, &s);
    const char *key;
    uint32_t keyloc = nodes[i].loc;
    if (!rel) {
      key = i ? an_loc_key(c, keyloc, by) : "<no backtrace>";
    } else {
      uint32_t n = i, inner = 0;   /* inner: node just inside n on the path */
      while (n && !loc_match(c, &m, nodes[n].loc)) { inner = n; n = nodes[n].parent; }
      if (!n) continue;            /* no matching frame */
      if (rel == 1) {
        uint32_t p = nodes[n].parent;
        keyloc = nodes[p].loc;
        key = p ? an_loc_key(c, keyloc, by) : "<root>";
      } else {
        keyloc = nodes[inner].loc;
        key = inner ? an_loc_key(c, keyloc, by) : "<self>";
      }
    }
    uint32_t *r = u64map_get(&idx, (uint64_t)(uintptr_t)key);
    if (!r) {
      grow_array((void **)&rows, &rcap, nrows + 1, sizeof *rows);
      memset(&rows[nrows], 0, sizeof *rows);
      rows[nrows].key = key;
      an_loc_fileline(c, keyloc, &rows[nrows].file, &rows[nrows].line);
      u64map_put(&idx, (uint64_t)(uintptr_t)key, (uint32_t)nrows);
      r = u64map_get(&idx, (uint64_t)(uintptr_t)key);
      nrows++;
    }
    add_stat(&rows[*r].s, &s);
  }
  if (nrows) qsort(rows, nrows, sizeof *rows, cmp_rows);
  size_t shown = limit && (size_t)limit < nrows ? (size_t)limit : nrows;

  const ti_header *h = an_header(c);
  double rate = h->sampling_rate;
  FILE *o = out_open(out);
  if (!o) { rc = 1; goto done; }
  const char *live_desc = live_at == AN_NEVER ? "end" : "time";
  if (mode == OUT_JSON) {
    fprintf(o, "{\"file\": "); json_str(o, path);
    fprintf(o, ", \"sampling_rate\": %.17g, \"live_at\": ", rate);
    if (live_at == AN_NEVER) fprintf(o, "\"end\"");
    else fprintf(o, "%.9f", live_at / 1e9);
    fprintf(o, ", \"total\": {\"alloc_bytes\": %.0f, \"samples\": %.0f, \"live_bytes\": %.0f, "
            "\"promoted_bytes\": %.0f}, \"rows\": [",
            an_bytes(c, total.alloc_samples), total.alloc_samples,
            an_bytes(c, total.live_samples), an_bytes(c, total.promoted_samples));
    for (size_t i = 0; i < shown; i++) {
      const row *r = &rows[i];
      fprintf(o, "%s\n  {\"key\": ", i ? "," : "");
      json_str(o, r->key);
      fprintf(o, ", \"file\": "); json_str(o, r->file);
      fprintf(o, ", \"line\": %u, \"alloc_bytes\": %.0f, \"samples\": %.0f, \"blocks\": %llu, "
              "\"objects\": %.0f, \"live_bytes\": %.0f, \"live_samples\": %.0f, "
              "\"live_objects\": %.0f, \"promoted_bytes\": %.0f}",
              r->line, an_bytes(c, r->s.alloc_samples), r->s.alloc_samples,
              (unsigned long long)r->s.blocks, r->s.alloc_objects / rate,
              an_bytes(c, r->s.live_samples), r->s.live_samples, r->s.live_objects / rate,
              an_bytes(c, r->s.promoted_samples));
    }
    fprintf(o, "\n]}\n");
  } else if (mode == OUT_CSV) {
    fprintf(o, "key,file,line,alloc_bytes,samples,blocks,objects,live_bytes,live_samples,"
               "live_objects,promoted_bytes\n");
    for (size_t i = 0; i < shown; i++) {
      const row *r = &rows[i];
      csv_str(o, r->key); fputc(',', o);
      csv_str(o, r->file);
      fprintf(o, ",%u,%.0f,%.0f,%llu,%.0f,%.0f,%.0f,%.0f,%.0f\n", r->line,
              an_bytes(c, r->s.alloc_samples), r->s.alloc_samples,
              (unsigned long long)r->s.blocks, r->s.alloc_objects / rate,
              an_bytes(c, r->s.live_samples), r->s.live_samples, r->s.live_objects / rate,
              an_bytes(c, r->s.promoted_samples));
    }
  } else {
    char b1[32], b2[32], b3[32];
    fprintf(o, "%s: %.0f samples kept, %s allocated (estimated), %s live at %s",
            path, total.alloc_samples, human_bytes(an_bytes(c, total.alloc_samples), b1, sizeof b1),
            human_bytes(an_bytes(c, total.live_samples), b2, sizeof b2), live_desc);
    if (live_at != AN_NEVER) fprintf(o, " %.6f s", live_at / 1e9);
    fprintf(o, "\n%10s %6s %8s %10s %6s %10s  %s\n", "allocated", "%", "samples", "live", "%",
            "promoted", rel == 1 ? "caller" : rel == 2 ? "callee" : "site");
    for (size_t i = 0; i < shown; i++) {
      const row *r = &rows[i];
      fprintf(o, "%10s %5.1f%% %8.0f %10s %5.1f%% %10s  %s\n",
              human_bytes(an_bytes(c, r->s.alloc_samples), b1, sizeof b1),
              total.alloc_samples ? 100 * r->s.alloc_samples / total.alloc_samples : 0,
              r->s.alloc_samples, human_bytes(an_bytes(c, r->s.live_samples), b2, sizeof b2),
              total.live_samples ? 100 * r->s.live_samples / total.live_samples : 0,
              human_bytes(an_bytes(c, r->s.promoted_samples), b3, sizeof b3), r->key);
    }
    if (shown < nrows) fprintf(o, "(%zu more rows; -n 0 shows all)\n", nrows - shown);
  }
  rc = out_close(o, out);
done:
  free(rows);
  u64map_free(&idx);
  nodeagg_free(&agg);
  if (rel) regfree(&m.re);
  free(m.cache);
  an_filter_free(&f);
  an_close(c);
  return rc;
}
