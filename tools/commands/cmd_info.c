/* cmd_info.c: `ocaml-memprof info`: header, event counts by kind and
   domain, estimated allocation volume, truncation.

   Counts come from the raw event stream (on_event), so they describe the
   file, not a filtered view; the per-domain table is a small array
   searched linearly (traces have few domains). */

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis.h"
#include "commands.h"
#include "ctf_reader.h"
#include "report.h"
#include "util.h"

typedef struct {
  uint32_t domain;
  uint64_t kinds[MPT_EV_LOST + 1];
  uint64_t samples;
} dom_counts;

typedef struct {
  dom_counts *doms;
  size_t ndoms, cap;
  uint64_t samples_by_source[MPT_SRC_COUNT];
  uint64_t words_by_source[MPT_SRC_COUNT];
  uint64_t lost;
} info_acc;

static void on_event(void *u, an_ctx *c, const mpt_event *ev)
{
  (void)c;
  info_acc *a = u;
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
  "usage: ocaml-memprof info [--json] TRACE\n"
  "Print the trace header, event counts by kind and domain, the estimated\n"
  "total allocated bytes and whether the file was truncated.\n"
  "Estimates: each sample stands for 1/rate words, so allocated bytes =\n"
  "sum over allocations of nsamples / rate * word_bytes (header words\n"
  "included, as memtrace counts them).\n";

int cmd_info(int argc, char **argv)
{
  int json = 0;
  const char *path = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      print_usage(stdout, usage, 0);
      return 0;
    } else if (!strcmp(argv[i], "--json")) json = 1;
    else if (argv[i][0] == '-' && argv[i][1]) return bad_option("info", argv[i]);
    else if (!path) path = argv[i];
    else return bad_option("info", argv[i]);
  }
  if (!path) { print_usage(stderr, usage, 0); return 2; }
  an_filter f;
  an_filter_init(&f);
  an_ctx *c = an_open(path, &f);
  if (!c) return 1;
  info_acc a;
  memset(&a, 0, sizeof a);
  an_callbacks cb = { &a, on_event, NULL };
  int rc = an_run(c, &cb);
  if (rc) { an_close(c); free(a.doms); return rc; }

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
    printf("file:          %s\n", path);
    printf("format:        %s, version %d%s\n", ti_format_name(h->format), h->version,
           an_truncated(c) ? " (TRUNCATED)" : "");
    printf("executable:    %s\n", h->executable);
    if (h->command_line[0]) printf("command line:  %s\n", h->command_line);
    printf("host:          %s\n", h->hostname);
    printf("pid:           %llu\n", (unsigned long long)h->pid);
    if (h->ocaml_version[0]) printf("OCaml:         %s\n", h->ocaml_version);
    if (h->runtime_params[0]) printf("runtime params: %s\n", h->runtime_params);
    if (h->context[0]) printf("context:       %s\n", h->context);
    printf("sampling rate: %g (one sample per %.0f words)\n", h->sampling_rate,
           1 / h->sampling_rate);
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
    printf("allocated:     %s estimated (%.0f bytes = samples / rate * %u)\n",
           human_bytes(est, b1, sizeof b1), est, h->word_bytes);
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
  }
  an_close(c);
  free(a.doms);
  return out_close(stdout, NULL);
}
