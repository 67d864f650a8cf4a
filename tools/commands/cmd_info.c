/* cmd_info.c: `ocaml-memprof info`: header, event counts by kind and
   domain, estimated allocation volume, truncation.

   Counts come from the raw event stream (on_event), so they describe the
   file, not a filtered view; the per-domain table is a small array
   searched linearly (traces have few domains). */

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis.h"
#include "cli.h"
#include "commands.h"
#include "ctf_reader.h"
#include "heapgraph.h"
#include "report.h"
#include "util.h"

typedef struct {
  uint32_t domain;
  uint64_t kinds[MPT_EV_LOST + 1];
  uint64_t samples;
} dom_counts;

/* A heap snapshot as its records go by: enough to list it, not its
   graph (that is retainers' work). */
typedef struct {
  uint64_t seq;                 /* the process's walk number (BEGIN) */
  uint32_t stream;              /* the domain whose stream holds it */
  uint64_t time_ns, pause_ns;
  uint64_t blocks, bytes, edges, ext_bytes;
  int complete;                 /* its END record was read */
  int blocks_missing;           /* END: the runtime ran out of memory */
  int walk_mode;                /* WALK: enum mpt_snap_walk_mode; -1 none */
  uint64_t walk_ns, extra_bytes; /* WALK */
  int swept;                    /* IDS: the heap was swept, blocks counts
                                   the unreachable ones written too */
} snap_info;

/* The JSON name of a walk mode (WALK record), or NULL: none recorded. */
static const char *walk_mode_name(int mode)
{
  switch (mode) {
  case MPT_WALK_PAUSE: return "pause";
  case MPT_WALK_FORK: return "fork";
  case MPT_WALK_FORK_REFUSED: return "pause_fork_refused";
  default: return NULL;
  }
}

/* What passes the filters (counted on completed samples). */
typedef struct {
  uint64_t blocks, samples, promoted, collected, live_end;
  uint64_t samples_by_source[MPT_SRC_COUNT];
} kept_counts;

typedef struct {
  dom_counts *doms;
  size_t ndoms, cap;
  uint64_t samples_by_source[MPT_SRC_COUNT];
  uint64_t words_by_source[MPT_SRC_COUNT];
  uint64_t lost;
  kept_counts kept;
  snap_info *snaps;
  size_t nsnaps, snaps_cap;
} info_acc;

static void on_sample(void *u, an_ctx *c, const an_sample *s)
{
  (void)c;
  kept_counts *k = &((info_acc *)u)->kept;
  k->blocks++;
  k->samples += s->nsamples;
  k->samples_by_source[s->source < MPT_SRC_COUNT ? s->source : 0] += s->nsamples;
  k->promoted += s->promoted;
  if (s->t_collect == AN_NEVER) k->live_end++;
  else k->collected++;
}

/* Snapshot records: the current snapshot is the last one begun. */
static void on_snapshot_event(info_acc *a, an_ctx *c, const mpt_event *ev)
{
  if (ev->kind == MPT_EV_SNAP_BEGIN) {
    grow_array((void **)&a->snaps, &a->snaps_cap, a->nsnaps + 1, sizeof *a->snaps);
    a->snaps[a->nsnaps++] = (snap_info){ .seq = ev->snap.seq, .stream = ev->stream,
                                         .time_ns = ev->time_ns, .walk_mode = -1 };
    return;
  }
  if (!a->nsnaps) return;       /* the reader rejects records out of a snapshot */
  snap_info *s = &a->snaps[a->nsnaps - 1];
  switch (ev->kind) {
  case MPT_EV_SNAP_BLOCK:
    s->blocks++;
    s->bytes += (ev->wosize + 1) * an_header(c)->word_bytes;
    s->edges += ev->snap.nedges;
    break;
  case MPT_EV_SNAP_EDGES: s->edges += ev->snap.nedges; break;
  case MPT_EV_SNAP_CUSTOM: s->ext_bytes += ev->snap.ext_bytes; break;
  case MPT_EV_SNAP_IDS: s->swept = 1; break;
  case MPT_EV_SNAP_WALK:
    s->walk_mode = (int)ev->snap.walk_mode;
    s->walk_ns = ev->snap.walk_ns;
    s->extra_bytes = ev->snap.extra_bytes;
    break;
  case MPT_EV_SNAP_END:
    s->complete = 1;
    s->pause_ns = ev->snap.pause_ns;
    s->blocks_missing = (ev->snap.flags & MPT_SNAP_INCOMPLETE) != 0;
    break;
  default: break;
  }
}

static void on_event(void *u, an_ctx *c, const mpt_event *ev)
{
  info_acc *a = u;
  if (ev->kind >= MPT_EV_SNAP_BEGIN) { on_snapshot_event(a, c, ev); return; }
  dom_counts *d = NULL;
  for (size_t i = 0; i < a->ndoms; i++)
    if (a->doms[i].domain == ev->stream) { d = &a->doms[i]; break; }
  if (!d) {
    grow_array((void **)&a->doms, &a->cap, a->ndoms + 1, sizeof *a->doms);
    d = &a->doms[a->ndoms++];
    memset(d, 0, sizeof *d);
    d->domain = ev->stream;
  }
  if (ev->kind >= 1 && ev->kind <= MPT_EV_LOST) d->kinds[ev->kind]++;
  if (ev->kind == MPT_EV_ALLOC) {
    d->samples += ev->nsamples;
    unsigned s = ev->source < MPT_SRC_COUNT ? ev->source : 0;
    a->samples_by_source[s] += ev->nsamples;
    a->words_by_source[s] += ev->wosize;
  } else if (ev->kind == MPT_EV_LOST) {
    a->lost += ev->arg;
  }
}

static const char usage[] =
  "usage: ocaml-memprof info [--json | --top N] [--pid N] [--exe NAME] [FILTERS] TRACE...\n"
  "For one trace: the header, event counts by kind and domain, the estimated\n"
  "total allocated bytes and whether the file was truncated.\n"
  "For several traces (files, directories, glob patterns): the process tree\n"
  "(pid and parent pid from the headers), with executable, duration, samples\n"
  "and estimated allocated bytes per process, then totals per executable.\n"
  "Estimates: each sample stands for 1/rate words, so allocated bytes =\n"
  "sum over allocations of nsamples / rate * word_bytes (header words\n"
  "included, as memtrace counts them).\n"
  "  --json            machine-readable output\n"
  "  --top N           after the process tree, the N top allocation sites of\n"
  "                    each executable (as `top --group exe -n N`)\n"
  "  --pid N, --exe NAME   only the traces of process N / executable NAME\n"
  "With filters, the output says so and counts the sampled blocks that pass:\n"
  "blocks, samples, estimated bytes, promoted, collected and live at the end\n"
  "(for several traces: the samples and bytes of each process).\n";

/* ---- several traces: the process tree ---- */

typedef struct {
  const cli_trace *t;
  double seconds, bytes;
  uint64_t samples, start_ns;
  int truncated, failed, printed;
  char start[32];
} proc;

static int cmp_proc(const void *a, const void *b)
{
  const proc *x = a, *y = b;
  if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
  return x->t->pid < y->t->pid ? -1 : x->t->pid > y->t->pid;
}

static void print_proc(FILE *o, proc *ps, size_t n, size_t i, int depth, int json, int *first)
{
  proc *p = &ps[i];
  p->printed = 1;
  char b[32];
  if (json) {
    fprintf(o, "%s\n    {\"file\": ", *first ? "" : ",");
    json_str(o, p->t->path);
    fprintf(o, ", \"pid\": %llu, \"ppid\": %llu, \"depth\": %d, \"executable\": ",
            (unsigned long long)p->t->pid, (unsigned long long)p->t->ppid, depth);
    json_str(o, p->t->exe);
    fprintf(o, ", \"readable\": %s, \"duration_s\": %.6f, \"samples\": %llu, "
            "\"estimated_allocated_bytes\": %.0f, \"truncated\": %s}",
            p->failed ? "false" : "true", p->seconds, (unsigned long long)p->samples, p->bytes,
            p->truncated ? "true" : "false");
  } else {
    fprintf(o, "%*s%-*llu %8llu %10.3f %9llu %10s  ", 2 * depth, "", 8 - 2 * depth < 1 ? 1 : 8 - 2 * depth,
            (unsigned long long)p->t->pid, (unsigned long long)p->t->ppid, p->seconds,
            (unsigned long long)p->samples, p->failed ? "-" : human_bytes(p->bytes, b, sizeof b));
    cli_put_safe(o, p->t->exe);
    if (p->failed) fputs(" (unreadable)", o);
    else if (p->truncated) fputs(" (truncated)", o);
    fputs("  ", o);
    cli_put_safe(o, p->t->path);
    fputc('\n', o);
  }
  *first = 0;
  for (size_t k = 0; k < n; k++)
    if (!ps[k].printed && ps[k].t->ok && ps[k].t->ppid == p->t->pid && k != i)
      print_proc(o, ps, n, k, depth + 1, json, first);
}

static void info_one_pass(const char *path, const an_filter *f, proc *p)
{
  const char *paths[1] = { path };
  an_ctx *c = an_open(paths, 1, f);
  if (!c) { p->failed = 1; return; }
  info_acc a;
  memset(&a, 0, sizeof a);
  int filtered = an_filter_active(f);
  an_callbacks cb = { &a, on_event, filtered ? on_sample : NULL };
  if (an_run(c, &cb)) p->failed = 1;
  for (int s = 0; s < MPT_SRC_COUNT; s++) p->samples += a.samples_by_source[s];
  if (filtered) p->samples = a.kept.samples;
  p->bytes = an_bytes(c, (double)p->samples);
  p->seconds = an_get_stats(c)->max_end_time / 1e9;
  p->truncated = an_truncated(c);
  p->start_ns = an_header(c)->start_wall_ns;
  free(a.doms);
  free(a.snaps);
  an_close(c);
}

static int info_many(const cli_inputs *in, const an_filter *f, const char *fdesc, int json)
{
  proc *ps = xcalloc(in->ntraces, sizeof *ps);
  size_t n = 0;
  for (size_t i = 0; i < in->ntraces; i++) {
    if (!in->traces[i].selected) continue;
    ps[n].t = &in->traces[i];
    info_one_pass(in->traces[i].path, f, &ps[n]);
    n++;
  }
  if (n) qsort(ps, n, sizeof *ps, cmp_proc);
  FILE *o = stdout;
  int first = 1;
  if (json) {
    fprintf(o, "{");
    if (fdesc[0]) { fprintf(o, "\"filter\": "); json_str(o, fdesc); fprintf(o, ", "); }
    fprintf(o, "\"processes\": [");
  } else {
    if (fdesc[0]) {
      fputs("filter: ", o);
      cli_put_safe(o, fdesc);
      fputs(" (samples and bytes of the sampled blocks that pass)\n", o);
    }
    fprintf(o, "%-8s %8s %10s %9s %10s  %s\n", "PID", "PPID", "SECONDS", "SAMPLES",
            "ALLOCATED", "EXECUTABLE  FILE");
  }
  /* Roots: processes whose parent has no trace here. */
  for (size_t i = 0; i < n; i++) {
    int has_parent = 0;
    for (size_t k = 0; k < n && ps[i].t->ok; k++)
      if (k != i && ps[k].t->ok && ps[k].t->pid == ps[i].t->ppid) has_parent = 1;
    if (!has_parent && !ps[i].printed) print_proc(o, ps, n, i, 0, json, &first);
  }
  for (size_t i = 0; i < n; i++)      /* cycles (pid reuse): print the rest */
    if (!ps[i].printed) print_proc(o, ps, n, i, 0, json, &first);
  /* Totals per executable, largest first. */
  typedef struct { const char *exe; size_t procs; uint64_t samples; double bytes, secs; } exe_tot;
  exe_tot *et = xcalloc(n + 1, sizeof *et);
  size_t ne = 0;
  for (size_t i = 0; i < n; i++) {
    size_t e = 0;
    while (e < ne && strcmp(et[e].exe, ps[i].t->exe)) e++;
    if (e == ne) et[ne++].exe = ps[i].t->exe;
    et[e].procs++;
    et[e].samples += ps[i].samples;
    et[e].bytes += ps[i].bytes;
    et[e].secs += ps[i].seconds;
  }
  for (size_t i = 1; i < ne; i++)
    for (size_t k = i; k > 0 && et[k].bytes > et[k - 1].bytes; k--) {
      exe_tot x = et[k]; et[k] = et[k - 1]; et[k - 1] = x;
    }
  if (json) fprintf(o, "\n  ],\n  \"executables\": [");
  else fprintf(o, "\n%-24s %9s %10s %9s %10s\n", "EXECUTABLE", "PROCESSES", "SECONDS", "SAMPLES",
               "ALLOCATED");
  for (size_t e = 0; e < ne; e++) {
    char b[32];
    if (json) {
      fprintf(o, "%s\n    {\"executable\": ", e ? "," : "");
      json_str(o, et[e].exe);
      fprintf(o, ", \"processes\": %zu, \"seconds\": %.6f, \"samples\": %llu, "
              "\"estimated_allocated_bytes\": %.0f}", et[e].procs, et[e].secs,
              (unsigned long long)et[e].samples, et[e].bytes);
    } else {
      fputs("", o);
      size_t w = strlen(et[e].exe);
      cli_put_safe(o, et[e].exe);
      fprintf(o, "%*s %9zu %10.3f %9llu %10s\n", w < 24 ? (int)(24 - w) : 0, "", et[e].procs,
              et[e].secs, (unsigned long long)et[e].samples, human_bytes(et[e].bytes, b, sizeof b));
    }
  }
  if (json) fprintf(o, "\n  ]\n}\n");
  free(et);
  free(ps);
  return out_close(stdout, NULL);
}

static int info_one(const char *path, const an_filter *f, const char *fdesc, int json);

int cmd_info(int argc, char **argv)
{
  int json = 0, rc = -1;
  const char *top = NULL;
  cli_inputs in;
  cli_inputs_init(&in);
  an_filter f;
  an_filter_init(&f);
  /* The filter options as given, for the output and for --top. */
  char **fargs = xcalloc((size_t)argc + 1, sizeof *fargs);
  int nf = 0;
  char fdesc[2048] = "";
  size_t fdlen = 0;
  for (int i = 1; i < argc && rc < 0; i++) {
    int from = i, k = cli_option(&f, NULL, 0, argc, argv, &i);
    if (k > 0) {
      for (int j = from; j <= i; j++) {
        fargs[nf++] = argv[j];
        int w = snprintf(fdesc + fdlen, sizeof fdesc - fdlen, "%s%s", fdlen ? " " : "", argv[j]);
        if (w > 0) fdlen = fdlen + (size_t)w < sizeof fdesc ? fdlen + (size_t)w : sizeof fdesc - 1;
      }
      continue;
    }
    if (k == 0) k = cli_inputs_option(&in, 0, argc, argv, &i);
    if (k < 0) rc = 2;
    else if (k) continue;
    else if (cli_is_help(argv[i])) { print_usage(stdout, usage, 1); rc = 0; }
    else if (!strcmp(argv[i], "--json")) json = 1;
    else if (!strcmp(argv[i], "--top")) {
      const char *v = cli_value(argc, argv, &i);
      long n;
      if (!v) rc = 2;
      else if (parse_count(v, &n) < 0 || n == 0)
        rc = cli_bad_value("--top", v, "a number of sites per executable (>= 1)");
      top = v;
    }
    else if (argv[i][0] == '-' && argv[i][1]) rc = cli_unknown_option(argv[i], usage, 1);
    else cli_inputs_add(&in, argv[i]);
  }
  if (rc < 0 && top && json)
    rc = cli_usage_error("--top is for text output (use `top --group exe --json`)");
  in.headers = top != NULL;
  if (rc >= 0) goto done;
  rc = cli_inputs_resolve(&in);
  if (rc) goto done;
  if (top) {                    /* the tree, then top sites per executable */
    rc = info_many(&in, &f, fdesc, 0);
    if (!rc) {
      fflush(stdout);
      putchar('\n');
      char **av = xcalloc(in.npaths + (size_t)nf + 6, sizeof *av);
      int ac = 0;
      av[ac++] = "top"; av[ac++] = "--group"; av[ac++] = "exe"; av[ac++] = "-n";
      av[ac++] = (char *)top;
      for (int i = 0; i < nf; i++) av[ac++] = fargs[i];
      for (size_t i = 0; i < in.npaths; i++) av[ac++] = (char *)in.paths[i];
      rc = cmd_top(ac, av);
      free(av);
    }
  } else if ((in.ntraces > 1 || in.have_pid || in.exe) && (in.npaths > 1 || in.ntraces > 1)) {
    rc = info_many(&in, &f, fdesc, json);
  } else {
    rc = info_one(in.paths[0], &f, fdesc, json);
  }
done:
  free(fargs);
  an_filter_free(&f);
  cli_inputs_free(&in);
  return rc;
}

/* One trace: the header and the counts, then what passes the filters. */
static int info_one(const char *path, const an_filter *f, const char *fdesc, int json)
{
  const char *paths[1] = { path };
  an_ctx *c = an_open(paths, 1, f);
  if (!c) return 1;
  info_acc a;
  memset(&a, 0, sizeof a);
  int filtered = an_filter_active(f);
  an_callbacks cb = { &a, on_event, filtered ? on_sample : NULL };
  int rc = an_run(c, &cb);
  if (rc) { an_close(c); free(a.doms); free(a.snaps); return rc; }
  if (filtered) an_print_hints(c);

  const ti_header *h = an_header(c);
  const an_stats *st = an_get_stats(c);
  const ctf_stats *cs = ti_ctf_stats(an_trace(c));
  uint64_t samples = 0, words = 0;
  for (int s = 0; s < MPT_SRC_COUNT; s++) {
    samples += a.samples_by_source[s];
    words += a.words_by_source[s];
  }
  uint64_t end_ns = 0, tot = 0, lost_end = 0;
  int has_end = ti_end_info(an_trace(c), &end_ns, &tot, &lost_end);
  uint64_t lost = has_end ? lost_end : a.lost;
  double est = an_bytes(c, (double)samples);
  time_t start_s = (time_t)(h->start_wall_ns / 1000000000ULL);
  char start[64];
  struct tm tmv;
  strftime(start, sizeof start, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&start_s, &tmv));
  /* The trace's end: its end record's time, else its latest event. */
  uint64_t trace_end = has_end && end_ns > st->end_time ? end_ns : st->end_time;
  uint64_t *snap_times = xmalloc((a.nsnaps ? a.nsnaps : 1) * sizeof *snap_times);
  for (size_t i = 0; i < a.nsnaps; i++) snap_times[i] = a.snaps[i].time_ns;
  char overdue[512];
  int is_overdue = hg_snapshot_overdue(snap_times, a.nsnaps, trace_end, overdue, sizeof overdue);
  free(snap_times);
  uint64_t live_end = st->events[MPT_EV_ALLOC] > st->events[MPT_EV_COLLECT]
                    ? st->events[MPT_EV_ALLOC] - st->events[MPT_EV_COLLECT] : 0;

  if (json) {
    printf("{\n  \"file\": "); json_str(stdout, path);
    printf(",\n  \"format\": "); json_str(stdout, ti_format_name(h->format));
    printf(",\n  \"version\": %d", h->version);
    printf(",\n  \"executable\": "); json_str(stdout, h->executable);
    printf(",\n  \"host\": "); json_str(stdout, h->hostname);
    printf(",\n  \"ocaml_version\": "); json_str(stdout, h->ocaml_version);
    printf(",\n  \"command_line\": "); json_str(stdout, h->command_line);
    printf(",\n  \"runtime_params\": "); json_str(stdout, h->runtime_params);
    printf(",\n  \"context\": "); json_str(stdout, h->context);
    printf(",\n  \"pid\": %llu", (unsigned long long)h->pid);
    printf(",\n  \"sampling_rate\": %.17g", h->sampling_rate);
    printf(",\n  \"word_bytes\": %u", h->word_bytes);
    printf(",\n  \"start_ns\": %llu", (unsigned long long)h->start_wall_ns);
    printf(",\n  \"start\": \"%s\"", start);
    printf(",\n  \"duration_s\": %.6f", st->end_time / 1e9);
    printf(",\n  \"truncated\": %s", an_truncated(c) ? "true" : "false");
    printf(",\n  \"events\": {");
    int first = 1;
    for (int k = 1; k <= MPT_EV_LOST; k++) {
      if (!st->events[k] && k > MPT_EV_COLLECT) continue;
      printf("%s\"%s\": %llu", first ? "" : ", ", ti_kind_name(k),
             (unsigned long long)st->events[k]);
      first = 0;
    }
    printf("},\n  \"domains\": [");
    for (size_t i = 0; i < a.ndoms; i++) {
      printf("%s\n    {\"domain\": %u, \"samples\": %llu", i ? "," : "", a.doms[i].domain,
             (unsigned long long)a.doms[i].samples);
      for (int k = 1; k <= MPT_EV_LOST; k++)
        if (a.doms[i].kinds[k])
          printf(", \"%s\": %llu", ti_kind_name(k), (unsigned long long)a.doms[i].kinds[k]);
      printf("}");
    }
    printf("\n  ],\n  \"samples\": %llu", (unsigned long long)samples);
    printf(",\n  \"samples_by_source\": {");
    for (int s = 0; s < MPT_SRC_COUNT; s++)
      printf("%s\"%s\": %llu", s ? ", " : "", ti_source_name(s),
             (unsigned long long)a.samples_by_source[s]);
    printf("},\n  \"estimated_allocated_bytes\": %.0f", est);
    printf(",\n  \"sampled_block_words\": %llu", (unsigned long long)words);
    printf(",\n  \"live_at_end_blocks\": %llu", (unsigned long long)live_end);
    printf(",\n  \"lost_samples\": %llu", (unsigned long long)lost);
    printf(",\n  \"locations\": %u", ti_location_count(an_trace(c)));
    printf(",\n  \"unknown_promotions\": %llu", (unsigned long long)st->unknown_promote);
    printf(",\n  \"unknown_collections\": %llu", (unsigned long long)st->unknown_collect);
    if (filtered) {
      const kept_counts *k = &a.kept;
      printf(",\n  \"filter\": {\"options\": "); json_str(stdout, fdesc);
      printf(", \"blocks\": %llu, \"samples\": %llu, \"samples_by_source\": {",
             (unsigned long long)k->blocks, (unsigned long long)k->samples);
      for (int s = 0; s < MPT_SRC_COUNT; s++)
        printf("%s\"%s\": %llu", s ? ", " : "", ti_source_name(s),
               (unsigned long long)k->samples_by_source[s]);
      printf("}, \"estimated_allocated_bytes\": %.0f, \"promoted_blocks\": %llu, "
             "\"collected_blocks\": %llu, \"live_at_end_blocks\": %llu}",
             an_bytes(c, (double)k->samples), (unsigned long long)k->promoted,
             (unsigned long long)k->collected, (unsigned long long)k->live_end);
    }
    printf(",\n  \"heap_snapshots\": [");
    for (size_t i = 0; i < a.nsnaps; i++) {
      const snap_info *s = &a.snaps[i];
      printf("%s\n    {\"seq\": %llu, \"domain\": %u, \"time_ns\": %llu, \"blocks\": %llu, "
             "\"bytes\": %llu, \"edges\": %llu, \"outside_heap_bytes\": %llu, \"pause_ns\": %llu, "
             "\"complete\": %s, \"blocks_missing\": %s, \"walk\": ", i ? "," : "",
             (unsigned long long)s->seq, s->stream, (unsigned long long)s->time_ns,
             (unsigned long long)s->blocks, (unsigned long long)s->bytes,
             (unsigned long long)s->edges, (unsigned long long)s->ext_bytes,
             (unsigned long long)s->pause_ns, s->complete ? "true" : "false",
             s->blocks_missing ? "true" : "false");
      const char *mode = walk_mode_name(s->walk_mode);
      if (mode) printf("\"%s\"", mode); else printf("null");
      printf(", \"walk_ns\": %llu, \"walk_extra_bytes\": %llu, \"swept\": %s}",
             (unsigned long long)s->walk_ns, (unsigned long long)s->extra_bytes,
             s->swept ? "true" : "false");
    }
    printf("%s]", a.nsnaps ? "\n  " : "");
    printf(",\n  \"heap_snapshot_overdue\": ");
    if (is_overdue) json_str(stdout, overdue);
    else printf("null");
    if (cs) {
      printf(",\n  \"ctf\": {\"packets\": %llu, \"location_packets\": %llu, "
             "\"skipped_packets\": %llu, \"location_events\": %llu, "
             "\"verified_packets\": %llu, \"largest_packet\": %llu, \"max_backtrace\": %u}",
             (unsigned long long)cs->packets, (unsigned long long)cs->location_packets,
             (unsigned long long)cs->skipped_packets, (unsigned long long)cs->location_events,
             (unsigned long long)cs->verified_packets, (unsigned long long)cs->largest_packet,
             cs->max_backtrace);
    }
    printf("\n}\n");
  } else {
    char b1[32];
    printf("file:          "); cli_put_safe(stdout, path); putchar('\n');
    printf("format:        %s, version %d%s\n", ti_format_name(h->format), h->version,
           an_truncated(c) ? " (TRUNCATED)" : "");
    printf("executable:    "); cli_put_safe(stdout, h->executable); putchar('\n');
    if (h->command_line[0]) { printf("command line:  "); cli_put_safe(stdout, h->command_line); putchar('\n'); }
    printf("host:          "); cli_put_safe(stdout, h->hostname); putchar('\n');
    printf("pid:           %llu\n", (unsigned long long)h->pid);
    if (h->ocaml_version[0]) { printf("OCaml:         "); cli_put_safe(stdout, h->ocaml_version); putchar('\n'); }
    if (h->runtime_params[0]) { printf("runtime params: "); cli_put_safe(stdout, h->runtime_params); putchar('\n'); }
    if (h->context[0]) { printf("context:       "); cli_put_safe(stdout, h->context); putchar('\n'); }
    if (h->sampling_rate > 0)
      printf("sampling rate: %g (one sample per %.0f words)\n", h->sampling_rate,
             1 / h->sampling_rate);
    else
      printf("sampling:      off (heap snapshots only)\n");
    printf("start:         %s\n", start);
    printf("duration:      %.6f s\n", st->end_time / 1e9);
    printf("events:       ");
    for (int k = 1; k <= MPT_EV_LOST; k++)
      if (st->events[k] || k <= MPT_EV_COLLECT)
        printf(" %s=%llu", ti_kind_name(k), (unsigned long long)st->events[k]);
    printf("\n");
    for (size_t i = 0; i < a.ndoms; i++) {
      printf("  domain %u:   ", a.doms[i].domain);
      for (int k = 1; k <= MPT_EV_LOST; k++)
        if (a.doms[i].kinds[k])
          printf(" %s=%llu", ti_kind_name(k), (unsigned long long)a.doms[i].kinds[k]);
      printf("\n");
    }
    printf("samples:       %llu (", (unsigned long long)samples);
    for (int s = 0; s < MPT_SRC_COUNT; s++)
      printf("%s%s=%llu", s ? ", " : "", ti_source_name(s),
             (unsigned long long)a.samples_by_source[s]);
    printf(")\n");
    if (h->sampling_rate > 0)
      printf("allocated:     %s estimated (%.0f bytes = samples / rate * %u)\n",
             human_bytes(est, b1, sizeof b1), est, h->word_bytes);
    else
      printf("allocated:     not estimated (no sampling)\n");
    printf("live at end:   %llu sampled blocks\n", (unsigned long long)live_end);
    if (lost) printf("lost samples:  %llu\n", (unsigned long long)lost);
    printf("locations:     %u\n", ti_location_count(an_trace(c)));
    if (st->unknown_promote || st->unknown_collect)
      printf("unmatched:     %llu promotions, %llu collections of unknown blocks\n",
             (unsigned long long)st->unknown_promote, (unsigned long long)st->unknown_collect);
    if (cs)
      printf("CTF packets:   %llu (%llu location-only, %llu skipped, %llu verified), "
             "largest %llu bytes, %llu location events, longest backtrace %u\n",
             (unsigned long long)cs->packets, (unsigned long long)cs->location_packets,
             (unsigned long long)cs->skipped_packets, (unsigned long long)cs->verified_packets,
             (unsigned long long)cs->largest_packet, (unsigned long long)cs->location_events,
             cs->max_backtrace);
    if (h->format == TI_FORMAT_MEMPROF) {
      printf("heap snapshots: %zu%s\n", a.nsnaps,
             a.nsnaps ? " (`ocaml-memprof retainers` analyses them)" : "");
      for (size_t i = 0; i < a.nsnaps; i++) {
        const snap_info *s = &a.snaps[i];
        char b2[32];
        printf("  %zu: walk %llu by domain %u at %.3f s: %llu blocks, %s, %llu edges%s",
               i + 1, (unsigned long long)s->seq, s->stream, s->time_ns / 1e9,
               (unsigned long long)s->blocks, human_bytes((double)s->bytes, b1, sizeof b1),
               (unsigned long long)s->edges,
               s->swept ? " written by a sweep of the heap (retainers drops those"
                          " no root reaches)" : "");
        if (s->ext_bytes)
          printf(" + %s outside the heap", human_bytes((double)s->ext_bytes, b2, sizeof b2));
        if (s->complete) printf(", pause %.1f ms", s->pause_ns / 1e6);
        else printf(" (cut short: the trace ends inside it)");
        if (s->walk_mode == MPT_WALK_FORK)
          printf(", walked in a forked child in %.1f ms (extra memory %s)",
                 s->walk_ns / 1e6, human_bytes((double)s->extra_bytes, b2, sizeof b2));
        else if (s->walk_mode >= 0)
          printf(", walked in the pause%s",
                 s->walk_mode == MPT_WALK_FORK_REFUSED ? " (the fork was refused)" : "");
        if (s->blocks_missing) printf(" (blocks missing: the runtime ran out of memory)");
        putchar('\n');
      }
      if (is_overdue) printf("  note: %s\n", overdue);
    }
    if (filtered) {
      const kept_counts *k = &a.kept;
      printf("filter:        "); cli_put_safe(stdout, fdesc);
      printf("\n  passing:     %llu of %llu sampled blocks (%llu promoted, %llu collected,"
             " %llu live at end)\n", (unsigned long long)k->blocks,
             (unsigned long long)st->events[MPT_EV_ALLOC], (unsigned long long)k->promoted,
             (unsigned long long)k->collected, (unsigned long long)k->live_end);
      printf("  samples:     %llu (", (unsigned long long)k->samples);
      for (int s = 0; s < MPT_SRC_COUNT; s++)
        printf("%s%s=%llu", s ? ", " : "", ti_source_name(s),
               (unsigned long long)k->samples_by_source[s]);
      printf(")\n  allocated:   %s estimated\n",
             human_bytes(an_bytes(c, (double)k->samples), b1, sizeof b1));
    }
  }
  an_close(c);
  free(a.doms);
  free(a.snaps);
  return out_close(stdout, NULL);
}
