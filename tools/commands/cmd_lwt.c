/* cmd_lwt.c: `ocaml-memprof lwt`: Lwt's promises ("Lwt threads") per
   creation site: how many were created (from the samples at Lwt's promise
   constructors) and how many are pending in each heap snapshot, with the
   callbacks they hold, and each site's pending promises over the
   snapshots (a series per site: rows are snapshots, columns the sites with
   the most at any snapshot).  The analysis is lwt_threads.c's; a trace
   in which it finds no promise at all is refused with a message.  The
   report's Lwt view gets the same pending promises by stack
   (lwt_report_json), to name their sites with its own hidden frames. */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "lwt_threads.h"
#include "report.h"
#include "util.h"

static const char usage[] =
  "usage: ocaml-memprof lwt [OPTIONS] TRACE\n"
  "Lwt's promises by creation site (the first frame outside the lwt preset):\n"
  "promises created, estimated from the samples at Lwt's promise constructors\n"
  "(+- one standard error), and, from each heap snapshot, the promises still\n"
  "pending (exact) and the callbacks they hold, by creation site (estimated\n"
  "from their sampled blocks), over the snapshots and at the last one.\n"
  "Assumes Lwt 5.6.1's promise layout; a trace without any Lwt promise is\n"
  "an error (exit 1).\n"
  "  --hide RE, --preset NAME[,NAME...], --presets-file F\n"
  "                    frames that are not creation sites, besides Lwt's\n"
  "  -n N              sites per table (10; 0 = all)\n"
  "  --json            one JSON object: created sites, per snapshot the\n"
  "                    pending totals and sites, and per site its series\n"
  "                    over the snapshots\n"
  "  -o FILE           write to FILE\n";

/* Sites in decreasing order of [value]. */
static const lt_result *sort_res;
static const double *sort_value;
static int by_value(const void *a, const void *b)
{
  double x = sort_value[*(const uint32_t *)a], y = sort_value[*(const uint32_t *)b];
  if (x != y) return x < y ? 1 : -1;
  return strcmp(strpool_get(sort_res->names, *(const uint32_t *)a),
                strpool_get(sort_res->names, *(const uint32_t *)b));
}

static uint32_t *ranked(const lt_result *res, const double *value, size_t *n)
{
  uint32_t *order = xmalloc((res->nsites ? res->nsites : 1) * sizeof *order);
  *n = 0;
  for (uint32_t i = 0; i < res->nsites; i++)
    if (value[i] > 0) order[(*n)++] = i;
  sort_res = res; sort_value = value;
  qsort(order, *n, sizeof *order, by_value);
  return order;
}

/* A snapshot's pending samples per site, as a dense array of nsites. */
static double *pending_samples(const lt_result *res, const lt_snapshot *sn)
{
  double *v = xcalloc(res->nsites ? res->nsites : 1, sizeof *v);
  for (size_t i = 0; i < sn->nby_site && i < res->nsites; i++) v[i] = sn->by_site[i].samples;
  return v;
}

static double pending_est(const lt_result *res, double samples)
{ return lt_estimate(res, samples, LT_PENDING_WORDS); }
static double pending_se(const lt_result *res, double samples)
{ return lt_estimate_se(res, samples, LT_PENDING_WORDS); }

/* The series: per site, the most pending samples at any snapshot. */
static double *series_peak(const lt_result *res)
{
  double *peak = xcalloc(res->nsites ? res->nsites : 1, sizeof *peak);
  for (size_t i = 0; i < res->nsnaps; i++)
    for (size_t k = 0; k < res->snaps[i].nby_site && k < res->nsites; k++)
      if (res->snaps[i].by_site[k].samples > peak[k]) peak[k] = res->snaps[i].by_site[k].samples;
  return peak;
}

static double snap_samples(const lt_snapshot *sn, uint32_t site)
{ return site < sn->nby_site ? sn->by_site[site].samples : 0; }

/* Rows: snapshots; columns: the [cols] sites with the most pending at any
   snapshot (estimated), named below the table. */
#define SERIES_COLUMNS 6
static void text_series(FILE *o, const lt_result *res, size_t top)
{
  double *peak = series_peak(res);
  size_t n;
  uint32_t *order = ranked(res, peak, &n);
  size_t cols = n < SERIES_COLUMNS ? n : SERIES_COLUMNS;
  if (top && cols > top) cols = top;
  fprintf(o, "\nPending promises by creation site over time (estimated; the %zu site%s with the most at any snapshot, of %zu)\n",
          cols, cols == 1 ? "" : "s", n);
  if (!cols) { fputs("  (no sampled block in any pending promise)\n", o); free(order); free(peak); return; }
  fprintf(o, "%8s %10s", "snapshot", "time (s)");
  for (size_t c = 0; c < cols; c++) fprintf(o, " %9s%zu", "S", c + 1);
  fputc('\n', o);
  for (size_t i = 0; i < res->nsnaps; i++) {
    const lt_snapshot *sn = &res->snaps[i];
    fprintf(o, "%8llu %10.3f", (unsigned long long)sn->seq, sn->time_ns / 1e9);
    for (size_t c = 0; c < cols; c++) fprintf(o, " %10.0f", pending_est(res, snap_samples(sn, order[c])));
    fputc('\n', o);
  }
  for (size_t c = 0; c < cols; c++) {
    fprintf(o, "  S%zu  ", c + 1);
    cli_put_safe(o, strpool_get(res->names, order[c]));
    fputc('\n', o);
  }
  free(order);
  free(peak);
}

static void text(FILE *o, const char *trace, const lt_result *res, size_t top)
{
  fprintf(o, "%s: rate %g, %llu sampled allocations, %zu heap snapshots; Lwt 5.6.1's promise layout\n\n",
          trace, res->rate, (unsigned long long)res->allocs_seen, res->nsnaps);
  double *created = xcalloc(res->nsites ? res->nsites : 1, sizeof *created);
  double total = 0, total_var = 0;
  for (size_t i = 0; i < res->nsites; i++) {
    created[i] = res->sites[i].created;
    total += created[i];
    total_var += res->sites[i].created_se * res->sites[i].created_se;
  }
  size_t n;
  uint32_t *order = ranked(res, created, &n);
  fprintf(o, "Promises created, by creation site (estimated: %.0f +- %.0f in all)\n", total, sqrt(total_var));
  fprintf(o, "%10s %9s %8s  %s\n", "created", "+-se", "samples", "site");
  for (size_t k = 0; k < n && (!top || k < top); k++) {
    const lt_site *s = &res->sites[order[k]];
    fprintf(o, "%10.0f %9.0f %8.0f  ", s->created, s->created_se, s->created_samples);
    cli_put_safe(o, strpool_get(res->names, order[k]));
    fputc('\n', o);
  }
  if (!n) fputs("  (no sample at Lwt's promise constructors: not an Lwt program of 5.6.1's layout, or too low a rate)\n", o);
  free(order);
  free(created);
  if (!res->nsnaps) {
    fputs("\nNo heap snapshot in the trace: pending promises need one "
          "(OCAMLRUNPARAM memprof_snapshot_at_exit=1, memprof_snapshot_every_cycles=N...).\n", o);
    return;
  }
  fputs("\nPending promises at each heap snapshot (exact; \"sampled\": those with a sampled block)\n", o);
  fprintf(o, "%8s %10s %10s %10s %10s  %s\n", "snapshot", "time (s)", "pending", "callbacks", "sampled",
          "top creation site (estimated pending)");
  for (size_t i = 0; i < res->nsnaps; i++) {
    const lt_snapshot *sn = &res->snaps[i];
    double *v = pending_samples(res, sn);
    uint32_t *ord = ranked(res, v, &n);
    fprintf(o, "%8llu %10.3f %10llu %10llu %10llu  ", (unsigned long long)sn->seq, sn->time_ns / 1e9,
            (unsigned long long)sn->pending, (unsigned long long)sn->callbacks,
            (unsigned long long)sn->pending_sampled);
    if (n) {
      fprintf(o, "%.0f  ", pending_est(res, v[ord[0]]));
      cli_put_safe(o, strpool_get(res->names, ord[0]));
    } else fputc('-', o);
    fputc('\n', o);
    free(ord); free(v);
  }
  text_series(o, res, top);
  const lt_snapshot *last = &res->snaps[res->nsnaps - 1];
  double *v = pending_samples(res, last);
  uint32_t *ord = ranked(res, v, &n);
  fprintf(o, "\nPending promises at the last snapshot (%llu, %.3f s), by creation site (estimated)\n",
          (unsigned long long)last->seq, last->time_ns / 1e9);
  fprintf(o, "%10s %9s %10s %9s %8s  %s\n", "pending", "+-se", "callbacks", "+-se", "samples", "site");
  for (size_t k = 0; k < n && (!top || k < top); k++) {
    const lt_pending_site *p = &last->by_site[ord[k]];
    fprintf(o, "%10.0f %9.0f %10.0f %9.0f %8.0f  ", pending_est(res, p->samples), pending_se(res, p->samples),
            pending_est(res, p->callback_samples), pending_se(res, p->callback_samples_sq), p->samples);
    cli_put_safe(o, strpool_get(res->names, ord[k]));
    fputc('\n', o);
  }
  fprintf(o, "(exact: %llu pending promises holding %llu callbacks, %llu of them with a sampled block)\n",
          (unsigned long long)last->pending, (unsigned long long)last->callbacks,
          (unsigned long long)last->pending_sampled);
  free(ord); free(v);
}

static void json(FILE *o, const char *trace, const lt_result *res)
{
  fputs("{\"trace\":", o); json_str(o, trace);
  fprintf(o, ",\"rate\":%.17g,\"sampled_allocations\":%llu,\"words_per_pending_promise\":%d,\"created\":[",
          res->rate, (unsigned long long)res->allocs_seen, LT_PENDING_WORDS);
  int first = 1;
  for (size_t i = 0; i < res->nsites; i++) {
    const lt_site *s = &res->sites[i];
    if (!s->created_samples) continue;
    fputs(first ? "" : ",", o); first = 0;
    fputs("{\"site\":", o); json_str(o, strpool_get(res->names, (uint32_t)i));
    fprintf(o, ",\"samples\":%.0f,\"created\":%.3f,\"se\":%.3f}", s->created_samples, s->created, s->created_se);
  }
  fputs("],\"snapshots\":[", o);
  for (size_t i = 0; i < res->nsnaps; i++) {
    const lt_snapshot *sn = &res->snaps[i];
    fprintf(o, "%s{\"seq\":%llu,\"time_ns\":%llu,\"pending\":%llu,\"callbacks\":%llu,\"pending_sampled\":%llu,\"sites\":[",
            i ? "," : "", (unsigned long long)sn->seq, (unsigned long long)sn->time_ns,
            (unsigned long long)sn->pending, (unsigned long long)sn->callbacks,
            (unsigned long long)sn->pending_sampled);
    first = 1;
    for (size_t k = 0; k < sn->nby_site; k++) {
      const lt_pending_site *p = &sn->by_site[k];
      if (!p->samples) continue;
      fputs(first ? "" : ",", o); first = 0;
      fputs("{\"site\":", o); json_str(o, strpool_get(res->names, (uint32_t)k));
      fprintf(o, ",\"samples\":%.0f,\"pending\":%.3f,\"se\":%.3f,\"callbacks\":%.3f,\"callbacks_se\":%.3f}",
              p->samples, pending_est(res, p->samples), pending_se(res, p->samples),
              pending_est(res, p->callback_samples), pending_se(res, p->callback_samples_sq));
    }
    fputs("]}", o);
  }
  /* The series: every site pending at some snapshot, most first. */
  fputs("],\"series\":[", o);
  double *peak = series_peak(res);
  size_t n;
  uint32_t *order = ranked(res, peak, &n);
  for (size_t k = 0; k < n; k++) {
    fputs(k ? ",{\"site\":" : "{\"site\":", o);
    json_str(o, strpool_get(res->names, order[k]));
    static const char *const fields[] = { "samples", "pending", "se" };
    for (int f = 0; f < 3; f++) {
      fprintf(o, ",\"%s\":[", fields[f]);
      for (size_t i = 0; i < res->nsnaps; i++) {
        double v = snap_samples(&res->snaps[i], order[k]);
        fprintf(o, f == 0 ? "%s%.0f" : "%s%.3f", i ? "," : "",
                f == 0 ? v : f == 1 ? pending_est(res, v) : pending_se(res, v));
      }
      fputc(']', o);
    }
    fputc('}', o);
  }
  free(order);
  free(peak);
  fputs("]}\n", o);
}

/* The stacks' locations as the report writes them (see commands.h). */
static void report_locs(FILE *o, const lt_result *res, const int32_t *loc_index, json_writer str)
{
  fputs(",\"locs\":[", o);
  int first = 1;
  for (size_t l = 0; l < res->nlocs; l++) {
    if (loc_index[l] < 0) continue;
    fputs(first ? "[" : ",[", o); first = 0;
    const lt_loc *L = &res->locs[l];
    for (uint32_t k = 0; k < L->n; k++) {
      fputs(k ? ",[" : "[", o);
      str(o, L->frames[k].function);
      fputc(',', o);
      str(o, L->frames[k].file);
      fprintf(o, ",%u]", L->frames[k].line);
    }
    fputc(']', o);
  }
  fputc(']', o);
}

/* Stack [site]'s number in the report's data, numbering it (and marking
   its locations) on first use. */
static int32_t stack_number(const lt_result *res, uint32_t site, int32_t *stack_index, int32_t *loc_index,
                            uint32_t *order, int32_t *nstacks)
{
  if (stack_index[site] >= 0) return stack_index[site];
  uint32_t stack[LT_STACK_FRAMES];
  size_t n = lt_stack(res, site, stack);
  for (size_t j = 0; j < n; j++) loc_index[stack[j]] = 0;
  order[*nstacks] = site;
  return stack_index[site] = (*nstacks)++;
}

int lwt_report_json(FILE *o, const char *trace, int created, json_writer str)
{
  lt_result res;
  if (lt_run(trace, NULL, 1, &res) != 0) { lt_free(&res); return 1; }
  if (!res.nsnaps && !created) { lt_free(&res); return 2; }
  /* Only the stacks written are numbered, in order of first use, and only
     their locations. */
  int32_t *stack_index = xmalloc((res.nsites ? res.nsites : 1) * sizeof *stack_index);
  int32_t *loc_index = xmalloc((res.nlocs ? res.nlocs : 1) * sizeof *loc_index);
  for (size_t i = 0; i < res.nsites; i++) stack_index[i] = -1;
  for (size_t i = 0; i < res.nlocs; i++) loc_index[i] = -1;
  uint32_t *order = xmalloc((res.nsites ? res.nsites : 1) * sizeof *order);
  int32_t nstacks = 0, nlocs = 0;
  fputs("{\"trace\":", o);
  str(o, trace);
  if (created) {
    fputs(",\"created\":[", o);
    int first = 1;
    for (size_t k = 0; k < res.nsites; k++) {
      const lt_site *c = &res.sites[k];
      if (!c->created_samples) continue;
      fprintf(o, "%s[%d,%.0f,%.17g,%.17g]", first ? "" : ",",
              stack_number(&res, (uint32_t)k, stack_index, loc_index, order, &nstacks),
              c->created_samples, c->created, c->created_se);
      first = 0;
    }
    fputc(']', o);
  }
  fputs(",\"snapshots\":[", o);
  for (size_t i = 0; i < res.nsnaps; i++) {
    const lt_snapshot *sn = &res.snaps[i];
    fprintf(o, "%s{\"seq\":%llu,\"time_ns\":%llu,\"pending\":%llu,\"callbacks\":%llu,\"pending_sampled\":%llu,\"rows\":[",
            i ? "," : "", (unsigned long long)sn->seq, (unsigned long long)sn->time_ns,
            (unsigned long long)sn->pending, (unsigned long long)sn->callbacks,
            (unsigned long long)sn->pending_sampled);
    int first = 1;
    for (size_t k = 0; k < sn->nby_site && k < res.nsites; k++) {
      const lt_pending_site *p = &sn->by_site[k];
      if (!p->samples) continue;
      fprintf(o, "%s[%d,%.0f,%.17g,%.17g]", first ? "" : ",",
              stack_number(&res, (uint32_t)k, stack_index, loc_index, order, &nstacks),
              p->samples, p->callback_samples, p->callback_samples_sq);
      first = 0;
    }
    fputs("]}", o);
  }
  /* Locations in trace order, then the stacks naming them. */
  for (size_t l = 0; l < res.nlocs; l++) if (loc_index[l] == 0) loc_index[l] = nlocs++;
  fputs("],\"stacks\":[", o);
  uint32_t stack[LT_STACK_FRAMES];
  for (int32_t s = 0; s < nstacks; s++) {
    size_t n = lt_stack(&res, order[s], stack);
    fputs(s ? ",[" : "[", o);
    for (size_t j = 0; j < n; j++) fprintf(o, j ? ",%d" : "%d", loc_index[stack[j]]);
    fputc(']', o);
  }
  fputc(']', o);
  report_locs(o, &res, loc_index, str);
  fputc('}', o);
  free(order);
  free(stack_index);
  free(loc_index);
  lt_free(&res);
  return 0;
}

int cmd_lwt(int argc, char **argv)
{
  an_filter hidden;
  an_filter_init(&hidden);
  /* Lwt's own frames are never creation sites. */
  char *lwt_preset[] = { "--preset", "lwt" };
  int j = 0, rc = 2;
  if (cli_option(&hidden, NULL, 0, 2, lwt_preset, &j) < 0) goto done;
  const char *trace = NULL, *out = NULL;
  long top = 10;
  int as_json = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    if (cli_is_help(a)) { print_usage(stdout, usage, 0); rc = 0; goto done; }
    if (!strcmp(a, "--hide") || !strcmp(a, "--preset") || !strcmp(a, "--presets-file")) {
      if (cli_option(&hidden, NULL, 0, argc, argv, &i) < 0) goto done;
    } else if (!strcmp(a, "--json")) as_json = 1;
    else if (!strcmp(a, "-n")) {
      if (!(v = cli_value(argc, argv, &i))) goto done;
      if (parse_count(v, &top) != 0) { rc = cli_bad_value(a, v, "a count"); goto done; }
    } else if (!strcmp(a, "-o")) {
      if (!(out = cli_value(argc, argv, &i))) goto done;
    } else if (a[0] == '-' && a[1]) { rc = cli_unknown_option(a, usage, 0); goto done; }
    else if (trace) { rc = cli_usage_error("one TRACE only (got %s and %s)", trace, a); goto done; }
    else trace = a;
  }
  if (!trace) { rc = cli_usage_error("a TRACE is needed"); goto done; }
  lt_result res;
  if (lt_run(trace, &hidden, 0, &res) != 0) { lt_free(&res); rc = 1; goto done; }
  if (res.truncated) msg("%s: truncated trace; what was read is shown\n", trace);
  if (!lt_found(&res)) {
    msg("%s: no Lwt promise in this trace: no sample at Lwt's promise constructors "
        "(Lwt.Pending_promises.new_pending, Lwt.Trivial_promises.return, .fail) and no pending "
        "promise in its %zu heap snapshot%s; not an Lwt program (or not Lwt 5.6.1's layout, "
        "or too low a sampling rate)\n", trace, res.nsnaps, res.nsnaps == 1 ? "" : "s");
    lt_free(&res);
    rc = 1;
    goto done;
  }
  FILE *o = out_open(out);
  if (!o) { lt_free(&res); rc = 1; goto done; }
  if (as_json) json(o, trace, &res);
  else text(o, trace, &res, (size_t)top);
  rc = out_close(o, out);
  lt_free(&res);
done:
  an_filter_free(&hidden);
  return rc;
}
