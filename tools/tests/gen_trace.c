/* gen_trace.c: synthetic traces with known contents, for the tests and the
   throughput benchmark.

   It simulates a program and Memprof's sampling exactly: every allocated
   word (header included) is sampled with probability lambda, drawn as
   geometric gaps from a fixed-seed xorshift generator, so the number of
   samples of each site is Binomial(words, lambda) and the tests can check
   estimates against the true volumes with statistical bands.

   The program (steps every 100 us of simulated time):
     Static.init  at t=0, 1000 blocks of 1000 words (major heap), kept;
     Leak.grow    each step a 20-word block (minor), never freed: a leak;
     Churn.tmp    each step a 10-word block (minor) freed 10 steps later,
                  allocated by domain 1 (stream 1) in the memprof format;
     Ext.buffer   every 1000 steps a 100-word external (custom) block,
                  freed 500 steps later;
     (--empty-stacks) first a block of 3/lambda words, then every 1000
                  steps at step 250 a 2000-word major block, both
                  with an empty stack, as the runtime records for allocations
                  made with no OCaml frame on the stack; printed as
                  `<no backtrace>`;
   a minor GC every 100 steps (promotes the leaked samples), a major cycle
   every 1000 steps (heap statistics; recorded again by stream 1 every other
   cycle, as the runtime may), one compaction at mid-run.
   True volumes are printed on stdout as `site words` lines.

   Output: the 5.3.0+memprof format through the shared codec's encoder API
   (raw or LZ4-framed with --compress), or memtrace CTF v2 through
   tools/ctf_writer.  --no-leak removes Leak.grow so that long benchmark
   traces keep a bounded live set.

   --many-live D (memprof format only) simulates instead a program whose
   live set grows to millions of samples, to measure what a live sample
   costs the tools: D domains (streams 0..D-1), domains 0 and 1 running
   every step, domain d >= 2 every 2^(d-1)th step; each step a running domain allocates a 20-word block that
   is never freed, from one of 4096 stacks (2 to 9 frames over 64
   Deep.fNN locations, picked pseudo-randomly), and a 10-word block freed
   at the next minor GC.  As in the runtime, each domain takes its ids in
   blocks of 256 from a shared counter, so a slow domain's ids lag far
   behind the fast ones' in the file, and the readers meet ids out of
   order.  Only the sampled counts of the true volumes are printed. */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctf_writer.h"
#include "memprof_trace_codec.h"

/* ---- the simulated program ---- */

enum { L_MAIN = 1, L_LEAK_RUN, L_LEAK_GROW, L_CHURN_RUN, L_CHURN_TMP, L_STATIC, L_EXT, NLOCS };
static const struct { const char *fn, *file; uint32_t line; } sites[NLOCS] = {
  [L_MAIN] = { "Main.main", "main.ml", 50 },
  [L_LEAK_RUN] = { "Leak.run", "leak.ml", 10 },
  [L_LEAK_GROW] = { "Leak.grow", "leak.ml", 3 },
  [L_CHURN_RUN] = { "Churn.run", "churn.ml", 12 },
  [L_CHURN_TMP] = { "Churn.tmp", "churn.ml", 4 },
  [L_STATIC] = { "Static.init", "static.ml", 7 },
  [L_EXT] = { "Ext.buffer", "ext.ml", 9 },
};
static const uint32_t st_leak[] = { L_LEAK_GROW, L_LEAK_RUN, L_MAIN };   /* innermost first */
static const uint32_t st_churn[] = { L_CHURN_TMP, L_CHURN_RUN, L_MAIN };
static const uint32_t st_static[] = { L_STATIC, L_MAIN };
static const uint32_t st_ext[] = { L_EXT, L_MAIN };
/* Empty stack: the CTF writer gets NULL (its contract allows it); the
   codec's encoder gets a real pointer, as the runtime always passes one. */
static const uint32_t st_empty[1] = { 0 };

/* --many-live: locations NLOCS..NLOCS+NDEEP-1 are Deep.f00..Deep.f63. */
#define NDEEP 64
#define NALLLOCS (NLOCS + NDEEP)
#define MAX_STREAMS 8
#define ID_BLOCK 256           /* the runtime's (memprof_tracer_domain.h) */
static char deep_names[NDEEP][16];

static const char *loc_function(uint32_t loc)
{ return loc < NLOCS ? sites[loc].fn : deep_names[loc - NLOCS]; }
static const char *loc_file(uint32_t loc) { return loc < NLOCS ? sites[loc].file : "deep.ml"; }
static uint32_t loc_line(uint32_t loc) { return loc < NLOCS ? sites[loc].line : loc - NLOCS + 1; }

static uint64_t rng = 0x9E3779B97F4A7C15ULL;
static double uniform(void)
{
  rng ^= rng >> 12; rng ^= rng << 25; rng ^= rng >> 27;
  return ((rng * 2685821657736338717ULL) >> 11) * (1.0 / 9007199254740992.0);
}

static double lambda = 1e-3;
static uint64_t word_pos, next_sample;
static uint64_t geom(void)
{
  double u = uniform();
  if (u <= 0) u = 1e-300;
  return 1 + (uint64_t)floor(log(u) / log1p(-lambda));
}
/* Samples in a block of [words] words (header included). */
static uint32_t sample_block(uint64_t words)
{
  uint32_t n = 0;
  uint64_t end = word_pos + words;
  while (next_sample < end) { n++; next_sample += geom(); }
  word_pos = end;
  return n;
}

/* ---- output back-ends ---- */

/* The runtime's per-domain buffer (memprof_tracer.c's BUFFER_BYTES). */
#define STREAM_BUF (256 * 1024)

typedef struct {
  int ctf, compress;
  FILE *out;
  size_t chunk_bytes;          /* a stream's chunk is cut past this */
  /* memprof format: one encoder per stream */
  mpt_encoder enc[MAX_STREAMS];
  uint8_t buf[MAX_STREAMS][STREAM_BUF];
  uint32_t stack[MAX_STREAMS][64];
  int defined[MAX_STREAMS][NALLLOCS];
  uint8_t frame[STREAM_BUF + (1 << 16)];
  /* CTF */
  ctf_writer *cw;
  uint64_t start_us;
} sink;

static mpt_loc_entry ctf_entries[NLOCS];
static mpt_location ctf_locs[NLOCS];

static const mpt_location *ctf_lookup(void *u, uint64_t code)
{
  (void)u;
  return code >= 0x1000 && code < 0x1000 + NLOCS ? &ctf_locs[code - 0x1000] : NULL;
}

static void put_bytes(sink *s, const uint8_t *p, size_t n)
{
  if (!s->compress) { fwrite(p, 1, n, s->out); return; }
  size_t k = mpt_frame_compress(NULL, s->frame, sizeof s->frame, p, n, 1);
  if (!k) { fprintf(stderr, "gen_trace: compression failed\n"); exit(1); }
  fwrite(s->frame, 1, k, s->out);
}

static void flush_stream(sink *s, int st)
{
  mpt_encoder *e = &s->enc[st];
  size_t used = mpt_enc_used(e);
  if (!used) return;
  static uint8_t chunk[MPT_CHUNK_HEADER_BYTES + STREAM_BUF];
  mpt_chunk_header(chunk, MPT_CHUNK_EVENTS, (uint16_t)st, (uint32_t)used);
  memcpy(chunk + MPT_CHUNK_HEADER_BYTES, s->buf[st], used);
  put_bytes(s, chunk, MPT_CHUNK_HEADER_BYTES + used);
  mpt_enc_reset_buffer(e, s->buf[st], sizeof s->buf[st]);
}

/* Chunks are cut at 4 KiB, as a runtime flushing regularly would, so that
   a file cut anywhere still holds most of its events; --many-live cuts
   them when the runtime's buffer would be full, as a busy runtime does,
   so that a slow domain's chunks come long after the fast ones' ids. */
static void need(sink *s, int st, size_t n)
{
  if (mpt_enc_space(&s->enc[st]) < n || mpt_enc_used(&s->enc[st]) > s->chunk_bytes)
    flush_stream(s, st);
}

/* Strings 2k-1 (function) and 2k (file) and location k, per stream. */
static void define(sink *s, int st, uint32_t loc)
{
  if (s->defined[st][loc]) return;
  s->defined[st][loc] = 1;
  need(s, st, 2 * (MPT_MAX_STRING + 16) + MPT_MAX_DEF_BYTES);
  mpt_encoder *e = &s->enc[st];
  mpt_enc_string(e, 2 * loc - 1, loc_function(loc), strlen(loc_function(loc)));
  mpt_enc_string(e, 2 * loc, loc_file(loc), strlen(loc_file(loc)));
  mpt_loc_entry_ids en = { 2 * loc, 2 * loc - 1, loc_line(loc), 2, 20 };
  mpt_enc_location(e, loc, 0x1000 + loc, &en, 1);
}

static uint64_t sink_alloc(sink *s, int st, uint64_t t_us, uint64_t id, uint64_t wosize,
                           uint32_t ns, enum mpt_source src, const uint32_t *stack, uint32_t len)
{
  if (s->ctf) {
    uint64_t codes[8];
    for (uint32_t i = 0; i < len; i++) codes[i] = 0x1000 + stack[len - 1 - i];
    return ctf_writer_alloc(s->cw, 0, s->start_us + t_us, wosize, ns,
                            src == MPT_SRC_MINOR ? 0 : src == MPT_SRC_CUSTOM ? 2 : 1,
                            len ? codes : NULL, len);
  }
  for (uint32_t i = 0; i < len; i++) define(s, st, stack[i]);
  need(s, st, MPT_MAX_EVENT_BYTES(len));
  mpt_enc_alloc(&s->enc[st], t_us, id, wosize, ns, src, 0, stack, len);
  return id;
}

static void sink_gc(sink *s, int st, uint64_t t_us, uint64_t id, int promote)
{
  if (s->ctf) {
    if (promote) ctf_writer_promote(s->cw, 0, s->start_us + t_us, id);
    else ctf_writer_collect(s->cw, 0, s->start_us + t_us, id);
    return;
  }
  need(s, st, MPT_MAX_EVENT_BYTES(0) * 2);
  /* Promotions and collections take the stream's current time: a minor-GC
     event sets it. */
  mpt_enc_simple(&s->enc[st], MPT_EV_MINOR_GC, t_us, 0);
  if (promote) mpt_enc_promote(&s->enc[st], id);
  else mpt_enc_collect(&s->enc[st], id);
}

/* ---- --many-live ---- */

/* Stack [k] of the 4096 (innermost first): Deep.f(k mod 64) called from
   Deep.f(k / 64 mod 64), then 0 to 7 more frames derived from k, then
   Main.main.  The two innermost frames make the 4096 stacks distinct. */
static uint32_t deep_stack(uint32_t k, uint32_t *st)
{
  uint32_t n = 0, h = k * 2654435761u;
  st[n++] = NLOCS + k % NDEEP;
  st[n++] = NLOCS + k / NDEEP % NDEEP;
  for (uint32_t i = 0; i < k % 8; i++) { h ^= h >> 13; h *= 0x5bd1e995u; st[n++] = NLOCS + h % NDEEP; }
  st[n++] = L_MAIN;
  return n;
}

typedef struct {
  uint64_t next_id, id_end;
  uint64_t *pending;           /* leaked: promoted at the next minor GC */
  uint64_t *young;             /* churn: collected at the next minor GC */
  int npending, nyoung;
} sim_domain;

/* The --many-live program (see the top of the file); returns its samples. */
static uint64_t run_many_live(sink *s, int ndom, long steps, uint64_t *live_blocks)
{
  static sim_domain d[MAX_STREAMS];
  uint64_t next_block = 1, samples = 0, pick = 12345;
  uint32_t stack[16];
  long period[MAX_STREAMS];
  for (int k = 0; k < ndom; k++) period[k] = k < 2 ? 1 : 2 * period[k - 1];
  *live_blocks = 0;
  for (int k = 0; k < NDEEP; k++) snprintf(deep_names[k], sizeof deep_names[k], "Deep.f%02d", k);
  for (int k = 0; k < ndom; k++) {
    d[k].pending = malloc(sizeof *d[k].pending * 100);
    d[k].young = malloc(sizeof *d[k].young * 100);
    if (k) mpt_enc_simple(&s->enc[k], MPT_EV_DOMAIN_START, 0, (uint64_t)k);
  }
  for (long i = 0; i < steps; i++) {
    uint64_t t = (uint64_t)i * 100;
    for (int k = 0; k < ndom; k++) {
      if (i % period[k]) continue;
      sim_domain *dm = &d[k];
      for (int churn = 0; churn < 2; churn++) {
        uint64_t words = churn ? 11 : 21;
        uint32_t ns = sample_block(words);
        if (!ns) continue;
        if (dm->next_id == dm->id_end) {
          dm->next_id = next_block;
          dm->id_end = next_block += ID_BLOCK;
        }
        uint64_t id = dm->next_id++;
        uint32_t len;
        if (churn) {
          len = (uint32_t)(sizeof st_churn / sizeof *st_churn);
          memcpy(stack, st_churn, sizeof st_churn);
          dm->young[dm->nyoung++] = id;
        } else {
          pick = pick * 6364136223846793005ULL + 1442695040888963407ULL;
          len = deep_stack((uint32_t)(pick >> 52), stack);
          dm->pending[dm->npending++] = id;
          ++*live_blocks;
        }
        sink_alloc(s, k, t, id, words - 1, ns, MPT_SRC_MINOR, stack, len);
        samples += ns;
      }
      if (i / period[k] % 50 == 49) {       /* this domain's minor GC */
        mpt_encoder *e = &s->enc[k];
        need(s, k, MPT_MAX_EVENT_BYTES(0));
        mpt_enc_simple(e, MPT_EV_MINOR_GC, t, 0);
        for (int j = 0; j < dm->npending; j++) {
          need(s, k, MPT_MAX_EVENT_BYTES(0));
          mpt_enc_promote(e, dm->pending[j]);
        }
        for (int j = 0; j < dm->nyoung; j++) {
          need(s, k, MPT_MAX_EVENT_BYTES(0));
          mpt_enc_collect(e, dm->young[j]);
        }
        dm->npending = dm->nyoung = 0;
      }
    }
  }
  for (int k = 0; k < ndom; k++) { free(d[k].pending); free(d[k].young); }
  return samples;
}

/* ---- main ---- */

int main(int argc, char **argv)
{
  const char *format = NULL, *out = NULL;
  long steps = 100000;
  int leak = 1, compress = 0, empty = 0, many_live = 0;
  uint64_t pid = 4242, ppid = 1;
  const char *exe = "synthetic";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--format") && i + 1 < argc) format = argv[++i];
    else if (!strcmp(argv[i], "-o") && i + 1 < argc) out = argv[++i];
    else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atol(argv[++i]);
    else if (!strcmp(argv[i], "--rate") && i + 1 < argc) lambda = atof(argv[++i]);
    else if (!strcmp(argv[i], "--seed") && i + 1 < argc) rng = strtoull(argv[++i], NULL, 0) | 1;
    else if (!strcmp(argv[i], "--no-leak")) leak = 0;
    else if (!strcmp(argv[i], "--compress")) compress = 1;
    else if (!strcmp(argv[i], "--empty-stacks")) empty = 1;
    else if (!strcmp(argv[i], "--many-live") && i + 1 < argc) many_live = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--pid") && i + 1 < argc) pid = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--ppid") && i + 1 < argc) ppid = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--exe") && i + 1 < argc) exe = argv[++i];
    else { fprintf(stderr, "gen_trace: bad argument %s\n", argv[i]); return 2; }
  }
  if (!format || !out || (strcmp(format, "memprof") && strcmp(format, "ctf")) ||
      steps <= 0 || !(lambda > 0 && lambda <= 1) || many_live < 0 || many_live > MAX_STREAMS ||
      (many_live && strcmp(format, "memprof"))) {
    fprintf(stderr, "usage: gen_trace --format memprof|ctf -o OUT [--steps N] [--rate R]"
                    " [--seed S] [--no-leak] [--compress] [--empty-stacks]\n"
                    "                [--pid N] [--ppid N] [--exe PATH]\n"
                    "       gen_trace --format memprof --many-live DOMAINS (1-8) -o OUT [--steps N]"
                    " [--rate R] [--compress]\n");
    return 2;
  }
  static sink s;
  s.ctf = !strcmp(format, "ctf");
  s.compress = compress && !s.ctf;
  s.out = fopen(out, "wb");
  if (!s.out) { perror(out); return 1; }
  s.start_us = 1700000000000000ULL;
  s.chunk_bytes = many_live ? STREAM_BUF - 4096 : 4096;
  next_sample = geom();

  if (s.ctf) {
    for (int k = 1; k < NLOCS; k++) {
      ctf_entries[k] = (mpt_loc_entry){ sites[k].file, sites[k].fn, sites[k].line, 2, 20 };
      ctf_locs[k] = (mpt_location){ 0x1000 + (uint64_t)k, 1, &ctf_entries[k] };
    }
    ctf_winfo wi = { lambda, 64, pid, s.start_us, exe, "testhost", "", "gen_trace", 2, 0 };
    s.cw = ctf_writer_open(s.out, &wi, ctf_lookup, NULL);
  } else {
    mpt_trace_info info = { MPT_FORMAT_VERSION, 64, 0, lambda, 64, 1000, pid, ppid,
                            s.start_us * 1000, exe, "testhost", "5.3.0+memprof",
                            "synthetic --leak" };
    static uint8_t hb[MPT_MAGIC_LEN + MPT_CHUNK_HEADER_BYTES + 128 + 4 * (MPT_MAX_STRING + 10)];
    size_t n = mpt_write_header_chunk(hb, sizeof hb, &info);
    if (!n) { fprintf(stderr, "gen_trace: header too large\n"); return 1; }
    put_bytes(&s, hb, n);
    for (int st = 0; st < MAX_STREAMS; st++)
      mpt_enc_init(&s.enc[st], s.buf[st], sizeof s.buf[st], s.stack[st], 64);
    if (!many_live) mpt_enc_simple(&s.enc[1], MPT_EV_DOMAIN_START, 0, 1);
  }

  if (many_live) {
    uint64_t live_blocks, samples = run_many_live(&s, many_live, steps, &live_blocks);
    for (int st = 0; st < many_live; st++) flush_stream(&s, st);
    uint8_t eb[64];
    put_bytes(&s, eb, mpt_write_end_chunk(eb, sizeof eb, (uint64_t)steps * 100, samples, 0));
    if (fclose(s.out)) { perror(out); return 1; }
    printf("live_blocks %llu\nsamples %llu\n", (unsigned long long)live_blocks,
           (unsigned long long)samples);
    return 0;
  }

  uint64_t true_words[NLOCS] = { 0 }, empty_words = 0, samples = 0, next_id = 1;
  if (empty) {   /* the trace's first allocation has no stack (the CTF writer's
                    first backtrace is then empty too) */
    uint64_t w = (uint64_t)(3 / lambda) + 1;
    uint32_t ens = sample_block(w);
    empty_words += w;
    if (ens) { sink_alloc(&s, 0, 0, next_id++, w - 1, ens, MPT_SRC_MAJOR, st_empty, 0); samples += ens; }
  }
  /* Static data at t = 0. */
  for (int b = 0; b < 1000; b++) {
    uint32_t ns = sample_block(1001);
    true_words[L_STATIC] += 1001;
    if (ns) { sink_alloc(&s, 0, 0, next_id++, 1000, ns, MPT_SRC_MAJOR, st_static, 2); samples += ns; }
  }
  uint64_t churn_ring[10] = { 0 }, ext_id = 0;
  int ext_live = 0;
  int churn_live[10] = { 0 };
  uint64_t *pending = malloc(sizeof *pending * 200);
  int npending = 0;
  for (long i = 0; i < steps; i++) {
    uint64_t t = (uint64_t)i * 100;
    if (leak) {
      uint32_t ns = sample_block(21);
      true_words[L_LEAK_GROW] += 21;
      if (ns) {
        uint64_t id = sink_alloc(&s, 0, t, next_id++, 20, ns, MPT_SRC_MINOR, st_leak, 3);
        pending[npending++] = id;
        samples += ns;
      }
    }
    int slot = (int)(i % 10);
    if (churn_live[slot]) { sink_gc(&s, 1, t, churn_ring[slot], 0); churn_live[slot] = 0; }
    uint32_t ns = sample_block(11);
    true_words[L_CHURN_TMP] += 11;
    if (ns) {
      churn_ring[slot] = sink_alloc(&s, 1, t, next_id++, 10, ns, MPT_SRC_MINOR, st_churn, 3);
      churn_live[slot] = 1;
      samples += ns;
    }
    if (i % 1000 == 0) {                   /* external buffer, freed later */
      uint32_t ens = sample_block(101);
      true_words[L_EXT] += 101;
      ext_live = 0;
      if (ens) {
        ext_id = sink_alloc(&s, 0, t, next_id++, 100, ens, MPT_SRC_CUSTOM, st_ext, 2);
        ext_live = 1;
        samples += ens;
      }
    } else if (i % 1000 == 500 && ext_live) {
      sink_gc(&s, 0, t, ext_id, 0);
      ext_live = 0;
    }
    if (empty && i % 1000 == 250) {        /* no OCaml frame: empty stack */
      uint32_t ens = sample_block(2001);
      empty_words += 2001;
      if (ens) { sink_alloc(&s, 0, t, next_id++, 2000, ens, MPT_SRC_MAJOR, st_empty, 0); samples += ens; }
    }
    if (i % 100 == 99) {                   /* minor GC: leaked samples survive */
      for (int k = 0; k < npending; k++) sink_gc(&s, 0, t, pending[k], 1);
      npending = 0;
    }
    if (!s.ctf && i % 1000 == 999) {
      mpt_heap_stats hs = { 1000000 + (uint64_t)i * 21, 900000 + (uint64_t)i * 20,
                            (uint64_t)i / 100, (uint64_t)i / 1000, i >= steps / 2, 0 };
      need(&s, 0, 128);
      mpt_enc_major_cycle(&s.enc[0], t, &hs);
      if (i % 2000 == 1999) {            /* domain 1 times its collections */
        need(&s, 1, 128);
        mpt_enc_major_cycle(&s.enc[1], t, &hs);
      }
      if (i / 1000 == steps / 2000) {
        mpt_enc_simple(&s.enc[0], MPT_EV_COMPACT_BEGIN, t, 0);
        mpt_enc_simple(&s.enc[0], MPT_EV_COMPACT_END, t + 50, 0);
      }
    }
  }
  uint64_t end_us = (uint64_t)steps * 100;
  if (s.ctf) {
    if (ctf_writer_close(s.cw)) { fprintf(stderr, "gen_trace: write error\n"); return 1; }
  } else {
    flush_stream(&s, 0);
    flush_stream(&s, 1);
    uint8_t eb[64];
    size_t n = mpt_write_end_chunk(eb, sizeof eb, end_us, samples, 0);
    put_bytes(&s, eb, n);
  }
  if (fclose(s.out)) { perror(out); return 1; }
  free(pending);
  for (int k = 1; k < NLOCS; k++)
    if (true_words[k]) printf("%s %llu\n", sites[k].fn, (unsigned long long)true_words[k]);
  if (empty_words) printf("<no-backtrace> %llu\n", (unsigned long long)empty_words);
  printf("samples %llu\n", (unsigned long long)samples);
  return 0;
}
