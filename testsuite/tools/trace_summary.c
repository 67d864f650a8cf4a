/* trace_summary: the testsuite's view of a trace, through the shared codec.

   Prints "key value" lines that the test scripts compare with what a test
   program is known to have done:
     header fields; event counts (allocs, samples, promotes, collects, ...);
     streams that recorded allocations; truncated/error status;
     consistency checks of the lifetime events (duplicate ids, promotion or
     collection of an unknown id, double collection, promotion of a block not
     born in the minor heap);
     per site (function of the innermost frame): "site NAME samples allocs
     promoted collected words".
   Exit status: 0 when the trace decoded without error (truncation is not an
   error), 1 otherwise.

   Also 'source_samples_SRC N' per allocation source, 'stream_samples S N'
   per stream, the number of distinct Domain.self () ids started, and
   'site_wosize NAME WOSIZE SAMPLES' for blocks of up to 8 words, and
   'chunks N', the chunks of an uncompressed trace (how often the runtime
   wrote; -1 for a compressed one).

   Object state is kept in an open-addressing table keyed by id, sized by
   the number of allocations, which is all a test trace needs. */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "caml/memprof_trace_codec.h"

typedef struct { uint64_t id; uint32_t site; uint8_t state; uint8_t source; } obj;
enum { LIVE = 1, PROMOTED = 2, COLLECTED = 4 };

typedef struct { const char *name; uint64_t samples, allocs, promoted, collected, words;
                 uint64_t by_wosize[9]; } site;   /* samples of blocks of 0..8 words */

static obj *objs; static size_t ocap, ocount;
static site *sites; static size_t nsites, scap;

static obj *find(uint64_t id, int insert)
{
  if (insert && 2 * (ocount + 1) > ocap) {
    size_t ncap = ocap ? 2 * ocap : 4096;
    obj *n = calloc(ncap, sizeof *n);
    if (!n) { fprintf(stderr, "out of memory\n"); exit(2); }
    for (size_t i = 0; i < ocap; i++)
      if (objs[i].id) {
        size_t h = (objs[i].id * 0x9e3779b97f4a7c15ull) & (ncap - 1);
        while (n[h].id) h = (h + 1) & (ncap - 1);
        n[h] = objs[i];
      }
    free(objs); objs = n; ocap = ncap;
  }
  if (!ocap) return NULL;
  size_t h = (id * 0x9e3779b97f4a7c15ull) & (ocap - 1);
  while (objs[h].id) {
    if (objs[h].id == id) return &objs[h];
    h = (h + 1) & (ocap - 1);
  }
  if (!insert) return NULL;
  objs[h].id = id; ocount++;
  return &objs[h];
}

static uint32_t site_of(const char *name)
{
  for (size_t i = 0; i < nsites; i++) if (strcmp(sites[i].name, name) == 0) return (uint32_t)i;
  if (nsites == scap) {
    scap = scap ? 2 * scap : 64;
    sites = realloc(sites, scap * sizeof *sites);
    if (!sites) { fprintf(stderr, "out of memory\n"); exit(2); }
  }
  memset(&sites[nsites], 0, sizeof *sites);
  sites[nsites].name = name;
  return (uint32_t)nsites++;
}

/* The chunks of an uncompressed trace, read from its container (magic,
   then u32 length and 4 bytes before each payload); -1 if it is not one. */
static long count_chunks(const char *path)
{
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  uint8_t h[8];
  long n = -1;
  if (fread(h, 1, 8, f) == 8 && memcmp(h, "OCMPTRCE", 8) == 0) {
    n = 0;
    while (fread(h, 1, 8, f) == 8) {
      uint32_t len = h[0] | h[1] << 8 | h[2] << 16 | (uint32_t)h[3] << 24;
      if (fseek(f, len, SEEK_CUR) != 0) break;
      n++;
    }
  }
  fclose(f);
  return n;
}

int main(int argc, char **argv)
{
  if (argc != 2) { fprintf(stderr, "usage: trace_summary TRACE\n"); return 2; }
  char err[256];
  mpt_reader *r = mpt_reader_open(argv[1], err, sizeof err);
  if (!r) { printf("error %s\n", err); return 1; }
  const mpt_trace_info *in = mpt_reader_info(r);
  printf("version %u\nrate %g\npid %" PRIu64 "\nppid %" PRIu64 "\nframes %u\n"
         "time_unit_ns %u\n", in->format_version, in->sampling_rate, in->pid,
         in->ppid, in->max_frames, in->time_unit_ns);
  printf("executable %s\nocaml_version %s\nbytecode %d\ncompressed %d\n",
         in->executable, in->ocaml_version, !!(in->flags & MPT_FLAG_BYTECODE),
         !!(in->flags & MPT_FLAG_COMPRESSED));
  uint64_t n[MPT_EV_LOST + 1] = { 0 }, samples = 0, dup = 0, unknown = 0,
    twice = 0, bad_promote = 0, max_stack = 0, empty_locs = 0,
    cut_allocs = 0, cut_marked = 0;
  uint64_t src_samples[MPT_SRC_COUNT] = { 0 }, stream_samples[64] = { 0 };
  uint64_t start_ids[256]; int nstart_ids = 0;
  uint64_t streams_mask = 0, fork_arg = 0, last_time = 0, time_back = 0, max_time = 0;
  mpt_event ev;
  int rc;
  while ((rc = mpt_reader_next(r, &ev)) == MPT_OK) {
    n[ev.kind]++;
    if (ev.time_ns > max_time) max_time = ev.time_ns;
    if (ev.kind != MPT_EV_PROMOTE && ev.kind != MPT_EV_COLLECT) {
      if (ev.stream == 0) { if (ev.time_ns < last_time) time_back++; last_time = ev.time_ns; }
    }
    switch (ev.kind) {
    case MPT_EV_ALLOC: {
      samples += ev.nsamples;
      src_samples[ev.source] += ev.nsamples;
      if (ev.stream < 64) stream_samples[ev.stream] += ev.nsamples;
      if (ev.stream < 64) streams_mask |= 1ull << ev.stream;
      if (ev.stack_len > max_stack) max_stack = ev.stack_len;
      if (ev.truncated) {
        /* the reader ends a cut stack with its <truncated> location */
        cut_allocs++;
        const mpt_location *last = ev.stack_len
          ? mpt_reader_location(r, ev.stack[ev.stack_len - 1]) : NULL;
        if (last && last->n == 1
            && strcmp(last->entries[0].function, MPT_TRUNCATED_FRAME) == 0)
          cut_marked++;
      }
      const char *name = "<no stack>";
      if (ev.stack_len) {
        const mpt_location *l = mpt_reader_location(r, ev.stack[0]);
        if (l && l->n) name = l->entries[0].function;
        else { name = "<no debuginfo>"; empty_locs++; }
      }
      obj *o = find(ev.id, 0);
      if (o) { dup++; break; }
      o = find(ev.id, 1);
      o->site = site_of(name); o->state = LIVE; o->source = (uint8_t)ev.source;
      site *s = &sites[o->site];
      s->samples += ev.nsamples; s->allocs++; s->words += ev.wosize;
      if (ev.wosize <= 8) s->by_wosize[ev.wosize] += ev.nsamples;
      break;
    }
    case MPT_EV_PROMOTE: case MPT_EV_COLLECT: {
      obj *o = find(ev.id, 0);
      if (!o) { unknown++; break; }
      if (o->state & COLLECTED) { twice++; break; }
      if (ev.kind == MPT_EV_PROMOTE) {
        /* any block allocated in the minor heap: minor, and small custom
           or unmarshalled blocks; never one allocated in the major heap */
        if (o->source == MPT_SRC_MAJOR || (o->state & PROMOTED)) bad_promote++;
        o->state |= PROMOTED; sites[o->site].promoted++;
      } else {
        o->state |= COLLECTED; sites[o->site].collected++;
      }
      break;
    }
    case MPT_EV_FORK: fork_arg = ev.arg; break;
    case MPT_EV_DOMAIN_START: {
      int seen = 0;
      for (int i = 0; i < nstart_ids; i++) seen |= start_ids[i] == ev.arg;
      if (!seen && nstart_ids < 256) start_ids[nstart_ids++] = ev.arg;
      break;
    }
    default: break;
    }
  }
  static const char *names[] = { "", "allocs", "promotes", "collects", "minor_gcs",
    "major_cycles", "compact_begins", "compact_ends", "domain_starts",
    "domain_stops", "trace_starts", "trace_stops", "forks", "lost_events" };
  for (int k = 1; k <= MPT_EV_LOST; k++) printf("%s %" PRIu64 "\n", names[k], n[k]);
  int nstreams = 0;
  for (int i = 0; i < 64; i++) nstreams += (streams_mask >> i) & 1;
  uint64_t end_time = 0, total = 0, lost = 0;
  int ended = mpt_reader_end_info(r, &end_time, &total, &lost);
  printf("samples %" PRIu64 "\nalloc_streams %d\nlocations %u\nmax_stack %" PRIu64 "\n",
         samples, nstreams, mpt_reader_location_count(r), max_stack);
  printf("no_debuginfo_sites %" PRIu64 "\nfork_arg %" PRIu64 "\n", empty_locs, fork_arg);
  printf("cut_allocs %" PRIu64 "\ncut_marked %" PRIu64 "\n", cut_allocs, cut_marked);
  printf("duplicate_ids %" PRIu64 "\nunknown_ids %" PRIu64 "\ncollected_twice %" PRIu64
         "\nbad_promotes %" PRIu64 "\ntime_backwards %" PRIu64 "\n",
         dup, unknown, twice, bad_promote, time_back);
  printf("ended %d\nend_total_samples %" PRIu64 "\nend_lost_samples %" PRIu64 "\n",
         ended, total, lost);
  printf("truncated %d\nlast_event_ms %" PRIu64 "\n", mpt_reader_truncated(r),
         max_time / 1000000);
  printf("chunks %ld\n", count_chunks(argv[1]));
  static const char *srcs[] = { "minor", "major", "custom", "marshal" };
  for (int k = 0; k < MPT_SRC_COUNT; k++)
    printf("source_samples_%s %" PRIu64 "\n", srcs[k], src_samples[k]);
  int zero_id = 0;
  for (int i = 0; i < nstart_ids; i++) zero_id |= start_ids[i] == 0;
  printf("distinct_domain_ids %d\nzero_domain_id %d\n", nstart_ids, zero_id);
  for (int i = 0; i < 64; i++)
    if (stream_samples[i]) printf("stream_samples %d %" PRIu64 "\n", i, stream_samples[i]);
  for (size_t i = 0; i < nsites; i++)
    printf("site %s %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
           sites[i].name, sites[i].samples, sites[i].allocs, sites[i].promoted,
           sites[i].collected, sites[i].words);
  for (size_t i = 0; i < nsites; i++)
    for (int w = 0; w <= 8; w++)
      if (sites[i].by_wosize[w])
        printf("site_wosize %s %d %" PRIu64 "\n", sites[i].name, w, sites[i].by_wosize[w]);
  if (rc == MPT_ERR) { printf("error %s\n", mpt_reader_error(r)); mpt_reader_close(r); return 1; }
  printf("error none\n");
  mpt_reader_close(r);
  return 0;
}
