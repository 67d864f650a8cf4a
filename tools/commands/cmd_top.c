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
#include <time.h>
#include <unistd.h>

#include "aggregate.h"
#include "cli.h"
#include "commands.h"
#include "presets.h"
#include "report.h"
#include "types.h"
#include "util.h"

typedef struct {
  const char *key;
  const char *file;            /* of the first node seen, for by-function */
  uint32_t line;
  uint32_t loc;                /* that node's location (0: no backtrace) */
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
  "usage: ocaml-memprof top [OPTIONS] TRACE...\n"
  "Rank allocation sites.  Columns: estimated allocated bytes, samples,\n"
  "estimated objects, bytes live at --live-at, bytes promoted to the major heap.\n"
  "  --by function|location|module|type   grouping of the allocation site\n"
  "                    (function); type: the OCaml type of the allocated value,\n"
  "                    read from the program's .cmt files (-bin-annot)\n"
  "  --cmt-path DIR    with --by type: also search DIR for .cmt files (repeatable)\n"
  "  --sort alloc|samples|live|promoted   ranking (alloc)\n"
  "  --live-at end|peak|TIME  when 'live' is measured (end)\n"
  "  --callers RE      rank the callers of the innermost frame matching RE\n"
  "  --callees RE      rank what that frame calls (<self> = allocates itself)\n"
  "  -n N              rows to print (20; 0 = all)\n"
  "  --group exe       one table per executable (default: all traces merged)\n"
  "  --follow          read the traces while they are written and refresh the\n"
  "                    table every --interval (1s) until their processes end;\n"
  "                    each refresh reads only what was appended\n"
  "  --stats           with --follow: bytes read, events decoded and CPU time\n"
  "                    of each refresh, on stderr\n"
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

typedef struct {
  an_filter f;
  table_opts tab;              /* --json, --csv, --by, --cmt-path, -n, -o */
  const char *live_arg;
  int rel;                     /* 1 callers, 2 callees */
  matcher m;
  int follow;
  double interval;             /* s between refreshes with --follow */
  int stats;                   /* --stats: work per refresh on stderr */
} topt;

static int parse(int argc, char **argv, topt *t, cli_inputs *in)
{
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    int k = cli_option(&t->f, in, 1, argc, argv, &i);
    if (!k) k = table_option(&t->tab, TABLE_JSON | TABLE_CSV | TABLE_BY | TABLE_TYPE | TABLE_N | TABLE_O,
                             argc, argv, &i);
    if (k < 0) return 2;
    if (k) continue;
    if (cli_is_help(a)) { print_usage(stdout, usage, 1); return 0; }
    else if (!strcmp(a, "--sort")) {
      if (!(v = cli_value(argc, argv, &i))) return 2;
      if (!strcmp(v, "alloc")) g_sort = SORT_ALLOC;
      else if (!strcmp(v, "samples")) g_sort = SORT_SAMPLES;
      else if (!strcmp(v, "live")) g_sort = SORT_LIVE;
      else if (!strcmp(v, "promoted")) g_sort = SORT_PROMOTED;
      else return cli_bad_value(a, v, "alloc, samples, live or promoted");
    } else if (!strcmp(a, "--live-at")) {
      if (!(t->live_arg = cli_value(argc, argv, &i)) || check_live_at(t->live_arg)) return 2;
    } else if (!strcmp(a, "--callers") || !strcmp(a, "--callees")) {
      if (!(v = cli_value(argc, argv, &i))) return 2;
      if (t->rel) return cli_usage_error("--callers and --callees: only one, once");
      if (cli_regex_option(&t->m.re, a, v)) return 2;
      t->rel = a[7] == 'r' ? 1 : 2;     /* --callers, --callees */
    } else if (!strcmp(a, "--follow")) t->follow = 1;
    else if (!strcmp(a, "--stats")) t->stats = 1;
    else if (!strcmp(a, "--interval")) {
      uint64_t ns;
      if (!(v = cli_value(argc, argv, &i))) return 2;
      if (parse_time(v, &ns) < 0 || ns < 10000000 || ns > 3600000000000ULL)
        return cli_bad_value(a, v, "a duration from 10ms to 1h (0.5, 2s, 250ms)");
      t->interval = ns / 1e9;
    } else if (a[0] == '-' && a[1]) return cli_unknown_option(a, usage, 1);
    else cli_inputs_add(in, a);
  }
  if (t->stats && !t->follow) return cli_usage_error("--stats goes with --follow");
  if (t->tab.by_type && (t->rel || t->follow))
    return cli_usage_error("--by type goes without --callers, --callees and --follow");
  if (table_check_types(&t->tab) != -1) return 2;
  if (t->follow && !strcmp(t->live_arg, "peak"))
    return cli_usage_error("--follow and --live-at peak: the peak is known at the end only");
  if (t->follow) return in->nargs ? -1 : cli_usage_error("no TRACE given");
  int rc = cli_inputs_resolve(in);
  return rc ? rc : -1;
}

/* Print the table of [agg] (sums per node of [c], over [npaths] traces,
   [path] the one when there is one); [group] names the executable in
   --group exe mode (NULL otherwise; [index] counts the groups).  1 after
   an error (--by type without its helper). */
static int top_print(topt *t, an_ctx *c, const nodeagg *agg, size_t npaths, const char *path,
                      const char *group, size_t index, FILE *o)
{
  an_keykind by = t->tab.by;
  int rel = t->rel;
  matcher m = t->m;
  long limit = t->tab.limit;
  out_mode mode = t->tab.mode;
  m.cache = NULL;
  m.cap = 0;
  uint64_t live_at = agg->live_at;

  /* Nodes -> rows. */
  const an_node *nodes = an_nodes(c);
  uint32_t nn = an_node_count(c);
  row *rows = NULL;
  size_t nrows = 0, rcap = 0;
  u64map idx;
  u64map_init(&idx, 256);
  nstat total;
  memset(&total, 0, sizeof total);
  types_map *types = t->tab.by_type ? types_open(c, t->tab.cmt_paths, t->tab.ncmt_paths) : NULL;
  for (uint32_t i = 0; i < nn; i++) {
    nstat s = nodeagg_get(agg, i);
    if (!s.blocks) continue;
    add_stat(&total, &s);
    const char *key;
    uint32_t keyloc = nodes[i].loc;
    if (!rel) {
      key = !i ? "<no backtrace>" : types ? types_of_node(types, i) : an_loc_key(c, keyloc, by);
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
      rows[nrows].loc = keyloc;
      an_loc_fileline(c, keyloc, &rows[nrows].file, &rows[nrows].line);
      u64map_put(&idx, (uint64_t)(uintptr_t)key, (uint32_t)nrows);
      r = u64map_get(&idx, (uint64_t)(uintptr_t)key);
      nrows++;
    }
    add_stat(&rows[*r].s, &s);
  }
  if (types && types_close(types)) {
    free(rows);
    u64map_free(&idx);
    types_free(types);
    return 1;
  }
  if (nrows) qsort(rows, nrows, sizeof *rows, cmp_rows);
  size_t shown = limit && (size_t)limit < nrows ? (size_t)limit : nrows;
  if (!rel && !t->follow) {
    uint32_t locs[HINT_ROWS];
    size_t n = 0;
    for (; n < shown && n < HINT_ROWS; n++) locs[n] = rows[n].loc;
    presets_hint(c, &t->f, locs, n);
  }

  const ti_header *h = an_header(c);
  double rate = h->sampling_rate;
  const char *live_desc = live_at == AN_NEVER ? "end" : "time";
  if (mode == OUT_JSON) {
    if (group) { fprintf(o, "%s{\"executable\": ", index ? ",\n" : "[\n"); json_str(o, group); fprintf(o, ", "); }
    else fprintf(o, "{");
    fprintf(o, "\"traces\": %zu, \"file\": ", npaths);
    if (path) json_str(o, path); else fprintf(o, "null");
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
              (unsigned long long)r->s.blocks, an_per_rate(c, r->s.alloc_objects),
              an_bytes(c, r->s.live_samples), r->s.live_samples, an_per_rate(c, r->s.live_objects),
              an_bytes(c, r->s.promoted_samples));
    }
    fprintf(o, "\n]}%s", group ? "" : "\n");
  } else if (mode == OUT_CSV) {
    if (!index)
      fprintf(o, "%skey,file,line,alloc_bytes,samples,blocks,objects,live_bytes,live_samples,"
                 "live_objects,promoted_bytes\n", group ? "executable," : "");
    for (size_t i = 0; i < shown; i++) {
      const row *r = &rows[i];
      if (group) { csv_str(o, group); fputc(',', o); }
      csv_str(o, r->key); fputc(',', o);
      csv_str(o, r->file);
      fprintf(o, ",%u,%.0f,%.0f,%llu,%.0f,%.0f,%.0f,%.0f,%.0f\n", r->line,
              an_bytes(c, r->s.alloc_samples), r->s.alloc_samples,
              (unsigned long long)r->s.blocks, an_per_rate(c, r->s.alloc_objects),
              an_bytes(c, r->s.live_samples), r->s.live_samples, an_per_rate(c, r->s.live_objects),
              an_bytes(c, r->s.promoted_samples));
    }
  } else {
    char b1[32], b2[32], b3[32];
    if (group) {
      fprintf(o, "%s== ", index ? "\n" : "");
      cli_put_safe(o, group);
      fprintf(o, " ==\n");
    }
    if (path) cli_put_safe(o, path);
    else fprintf(o, "%zu traces", npaths);
    fprintf(o, ": %.0f samples kept, %s allocated (estimated), %s live at %s",
            total.alloc_samples, human_bytes(an_bytes(c, total.alloc_samples), b1, sizeof b1),
            human_bytes(an_bytes(c, total.live_samples), b2, sizeof b2), live_desc);
    if (live_at != AN_NEVER) fprintf(o, " %.6f s", live_at / 1e9);
    fprintf(o, "\n%10s %6s %8s %10s %6s %10s  %s\n", "allocated", "%", "samples", "live", "%",
            "promoted", rel == 1 ? "caller" : rel == 2 ? "callee" : t->tab.by_type ? "type" : "site");
    for (size_t i = 0; i < shown; i++) {
      const row *r = &rows[i];
      fprintf(o, "%10s %5.1f%% %8.0f %10s %5.1f%% %10s  %s",
              human_bytes(an_bytes(c, r->s.alloc_samples), b1, sizeof b1),
              total.alloc_samples ? 100 * r->s.alloc_samples / total.alloc_samples : 0,
              r->s.alloc_samples, human_bytes(an_bytes(c, r->s.live_samples), b2, sizeof b2),
              total.live_samples ? 100 * r->s.live_samples / total.live_samples : 0,
              human_bytes(an_bytes(c, r->s.promoted_samples), b3, sizeof b3), "");
      cli_put_safe(o, r->key);
      fputc('\n', o);
    }
    if (shown < nrows) fprintf(o, "(%zu more rows; -n 0 shows all)\n", nrows - shown);
  }
  free(rows);
  u64map_free(&idx);
  free(m.cache);
  if (types) types_print_hints(types);
  types_free(types);
  return 0;
}

/* One table over the traces [paths] (see top_print). */
static int top_run(topt *t, const char *const *paths, size_t npaths, const char *group,
                   size_t index, FILE *o)
{
  an_ctx *c;
  nodeagg agg;
  int rc = nodeagg_run(paths, npaths, &t->f, t->live_arg, &agg, &c);
  if (rc) return rc;
  rc = top_print(t, c, &agg, npaths, npaths == 1 ? paths[0] : NULL, group, index, o);
  nodeagg_free(&agg);
  an_close(c);
  return rc;
}

static int print_tops(topt *t, cli_inputs *in, FILE *o)
{
  int rc = 0;
  for (size_t g = 0; g < in->ngroups && !rc; g++)
    rc = top_run(t, in->groups[g].paths, in->groups[g].n,
                 in->group_exe ? in->groups[g].name : NULL, g, o);
  if (!rc && in->group_exe && t->tab.mode == OUT_JSON) fprintf(o, "\n]\n");
  return rc;
}

/* --follow: one context and one accumulator per group, kept from one
   refresh to the next; a refresh reads what the traces gained since the
   previous one, then prints the accumulated samples plus those still live
   (counted as live at the end of what has been read). */
typedef struct {
  char *name;                  /* executable, or NULL: all traces */
  an_ctx *c;
  nodeagg agg;                 /* completed samples (collected, or of
                                  traces that are done) */
  size_t npaths;
  char *path;                  /* the trace, when it is one */
} fgroup;

static void fgroup_sample(void *u, an_ctx *c, const an_sample *s)
{
  (void)c;
  nodeagg_add(u, s);
}

static double cpu_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static fgroup *fgroup_get(fgroup **gs, size_t *ng, const char *name, topt *t, uint64_t live_at)
{
  for (size_t i = 0; i < *ng; i++)
    if ((!name && !(*gs)[i].name) || (name && (*gs)[i].name && !strcmp(name, (*gs)[i].name)))
      return &(*gs)[i];
  *gs = xrealloc(*gs, (*ng + 1) * sizeof **gs);
  fgroup *g = &(*gs)[(*ng)++];
  memset(g, 0, sizeof *g);
  g->name = name ? xstrdup(name) : NULL;
  g->c = an_follow_open(&t->f);
  nodeagg_init(&g->agg, live_at);
  return g;
}

/* Read the traces while they are written, refreshing every interval
   (the terminal cleared, or refreshes separated by a line); stop after the
   refresh in which every trace is done (its end record read, or its process
   gone and the file read to its end).  An argument that does not exist yet
   is waited for; one that existed and has gone (the trace deleted, or
   renamed away) selects nothing more, and the traces it gave are read from
   their open files until their processes end (an_follow_rest). */
static int follow(topt *t, cli_inputs *args, FILE *o)
{
  an_quiet_truncation = 1;
  uint64_t live_at;
  if (resolve_live_at(t->live_arg, NULL, 0, &t->f, &live_at)) return 2;
  int tty = isatty(fileno(o)), waited = 0;
  fgroup *gs = NULL;
  size_t ng = 0;
  uint64_t bytes0 = 0, events0 = 0;
  cli_inputs prev;              /* the previous refresh's, for its headers */
  cli_inputs_init(&prev);
  char *existed = xcalloc(args->nargs ? args->nargs : 1, 1);   /* per argument */
  for (unsigned n = 0;;) {
    double cpu0 = cpu_ms();
    cli_inputs in;
    cli_inputs_init(&in);
    in.known = &prev;
    in.have_pid = args->have_pid; in.pid = args->pid;
    in.exe = args->exe; in.group_exe = args->group_exe;
    int waiting = 0;
    for (size_t i = 0; i < args->nargs; i++) {
      if (access(args->args[i], R_OK) == 0) {
        cli_inputs_add(&in, args->args[i]);
        existed[i] = 1;
      } else if (!existed[i]) waiting = 1;
    }
    /* Read what each selected trace gained.  A selection that fails once
       traces have been followed (their directory emptied) ends nothing. */
    int resolved = in.nargs && cli_inputs_resolve(&in) == 0;
    int done = !waiting && (resolved || ng), shown = 0;
    for (size_t k = 0; k < in.ngroups; k++) {
      cli_group *cg = &in.groups[k];
      fgroup *g = fgroup_get(&gs, &ng, in.group_exe ? cg->name : NULL, t, live_at);
      an_callbacks cb = { &g->agg, NULL, fgroup_sample };
      for (size_t i = 0; i < cg->n; i++)
        if (an_follow_read(g->c, cg->paths[i], &cb) < 0 || !an_follow_done(g->c, cg->paths[i]))
          done = 0;
      g->npaths = cg->n;
      free(g->path);
      g->path = cg->n == 1 ? xstrdup(cg->paths[0]) : NULL;
    }
    for (size_t k = 0; k < ng; k++) {
      an_callbacks cb = { &gs[k].agg, NULL, fgroup_sample };
      if (an_follow_rest(gs[k].c, &cb)) done = 0;
    }
    /* Print every group that has a readable trace. */
    for (size_t k = 0; k < ng; k++) {
      fgroup *g = &gs[k];
      if (!an_header(g->c)->word_bytes) continue;   /* no header read yet */
      if (!shown) {
        if (tty) fputs("\033[H\033[2J", o);
        else if (n) fprintf(o, "--- refresh %u\n", n);
        n++;
      }
      nodeagg now;
      nodeagg_copy(&now, &g->agg);
      an_callbacks cb = { &now, NULL, fgroup_sample };
      an_follow_live(g->c, &cb);
      top_print(t, g->c, &now, g->npaths, g->path, in.group_exe ? g->name : NULL, shown, o);
      nodeagg_free(&now);
      shown++;
    }
    if (shown && in.group_exe && t->tab.mode == OUT_JSON) fprintf(o, "\n]\n");
    fflush(o);
    if (t->stats) {
      uint64_t bytes = 0, events = 0;
      for (size_t k = 0; k < ng; k++) {
        uint64_t b, e;
        an_follow_work(gs[k].c, &b, &e);
        bytes += b;
        events += e;
      }
      msg("refresh: %llu bytes read, %llu events decoded, %.1f ms CPU\n",
          (unsigned long long)(bytes - bytes0), (unsigned long long)(events - events0),
          cpu_ms() - cpu0);
      bytes0 = bytes;
      events0 = events;
    }
    if (!shown && !waited) {
      msg("waiting for the trace to appear\n");
      waited = 1;
    }
    cli_inputs_free(&prev);
    prev = in;
    if (done) break;            /* shown, or every trace gone before its header */
    struct timespec ts = { (time_t)t->interval, (long)((t->interval - (time_t)t->interval) * 1e9) };
    nanosleep(&ts, NULL);
  }
  cli_inputs_free(&prev);
  free(existed);
  /* As for a plain read: exit status 1 when no trace could be read. */
  uint64_t read = 0;
  for (size_t k = 0; k < ng; k++) {
    read += an_traces_read(gs[k].c);
    nodeagg_free(&gs[k].agg);
    an_close(gs[k].c);
    free(gs[k].name);
    free(gs[k].path);
  }
  free(gs);
  return read ? 0 : 1;
}

int cmd_top(int argc, char **argv)
{
  topt t;
  memset(&t, 0, sizeof t);
  an_filter_init(&t.f);
  t.tab = (table_opts){ .mode = OUT_TEXT, .by = AN_BY_FUNCTION, .limit = 20 };
  t.live_arg = "end";
  t.interval = 1;
  g_sort = SORT_ALLOC;
  cli_inputs in;
  cli_inputs_init(&in);
  int rc = parse(argc, argv, &t, &in);
  FILE *o = NULL;
  if (rc < 0) {
    o = out_open(t.tab.out);
    rc = o ? 0 : 1;
  }
  if (o) {
    rc = t.follow ? follow(&t, &in, o) : print_tops(&t, &in, o);
    int rc2 = out_close(o, t.tab.out);
    if (!rc) rc = rc2;
  }
  if (t.rel) regfree(&t.m.re);
  an_filter_free(&t.f);
  cli_inputs_free(&in);
  return rc;
}
