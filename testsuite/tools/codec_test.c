/* codec_test: round trip, truncation and corruption tests of the trace codec.

   Encodes a pseudo-random but fixed (seeded) sequence of events over three
   streams, with callstacks that share prefixes the way real ones do, into a
   compressed and an uncompressed trace in memory.  Then checks:
   - decoding gives back exactly the events encoded (kinds, ids, times,
     sizes, callstacks as file/function/line);
   - every prefix of the file decodes without error to a prefix of the
     events, and is reported truncated (unless it is the whole file);
   - a few thousand single-byte corruptions never crash or hang the reader
     (run under AddressSanitizer by the testsuite).
   Prints "N passed, N failed". */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "caml/memprof_trace_codec.h"

#define NEV 6000
#define NSTREAMS 3
#define NFUN 40

static int passed, failed;
static void check(int ok, const char *what)
{
  if (ok) passed++; else { failed++; printf("FAIL: %s\n", what); }
}

static uint64_t rng = 42;
static uint32_t rnd(uint32_t n)
{
  rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
  return (uint32_t)(rng % n);
}

typedef struct {
  int kind, stream; uint64_t time, id, wosize; uint32_t ns, src, len, cut;
  uint32_t stack[64];
} ev_t;
static ev_t evs[NEV];

/* Output under construction. */
static uint8_t *out; static size_t out_len, out_cap;
static mpt_frame_state *kept_state;   /* freed at the end: ASan sees a leak */
static void emit_frame(const uint8_t *p, size_t n, int compress, int stored)
{
  size_t need = out_len + mpt_frame_bound(n) + MPT_STORED_FRAME_OVERHEAD + n;
  if (need > out_cap) { out_cap = 2 * need; out = realloc(out, out_cap); }
  /* every other frame through a kept compression state, every third at
     acceleration 16 (the event chunks' at high rates); the header and END
     stored, as the runtime writes them */
  static int frames;
  if (!kept_state) kept_state = mpt_frame_state_new();
  if (compress && stored) {
    size_t k = mpt_frame_store(out + out_len, out_cap - out_len, p, n);
    check(k == MPT_STORED_FRAME_OVERHEAD + n, "stored frame size");
    out_len += k;
  } else if (compress) {
    out_len += mpt_frame_compress(frames % 2 ? kept_state : NULL, out + out_len,
                                  out_cap - out_len, p, n,
                                  frames % 3 ? 1 : 16);
    frames++;
  } else { memcpy(out + out_len, p, n); out_len += n; }
}
static void emit(const uint8_t *p, size_t n, int compress)
{ emit_frame(p, n, compress, 0); }

static const char *fun_name(uint32_t f)
{
  static char names[NFUN][32];
  if (!names[f][0]) snprintf(names[f], 32, "Mod%u.fun_%u", f % 7, f);
  return names[f];
}

static void build(int compress)
{
  out_len = 0;
  mpt_trace_info info = { MPT_FORMAT_VERSION, 64, compress ? MPT_FLAG_COMPRESSED : 0,
    1e-3, 64, 1000, 1234, 1, 0, "prog", "host", "5.3.0+memprof", "prog -x" };
  uint8_t hdr[65536];
  emit_frame(hdr, mpt_write_header_chunk(hdr, sizeof hdr, &info), compress, 1);
  static uint8_t bufs[NSTREAMS][8 + 4096];
  static uint32_t stacks[NSTREAMS][MPT_MAX_FRAMES];
  mpt_encoder enc[NSTREAMS];
  int defined[NSTREAMS][NFUN + 1] = { { 0 } };
  for (int s = 0; s < NSTREAMS; s++)
    mpt_enc_init(&enc[s], bufs[s] + 8, 4096, stacks[s], MPT_MAX_FRAMES);
  for (int i = 0; i < NEV; i++) {
    ev_t *e = &evs[i];
    mpt_encoder *en = &enc[e->stream];
    if (mpt_enc_space(en) < 2048) {
      mpt_chunk_header(bufs[e->stream], MPT_CHUNK_EVENTS, (uint16_t)e->stream,
                       (uint32_t)mpt_enc_used(en));
      emit(bufs[e->stream], 8 + mpt_enc_used(en), compress);
      mpt_enc_reset_buffer(en, bufs[e->stream] + 8, 4096);
    }
    switch (e->kind) {
    case MPT_EV_ALLOC:
      for (uint32_t k = 0; k < e->len; k++) {
        uint32_t f = e->stack[k];
        if (!defined[e->stream][f]) {
          mpt_enc_string(en, 2 * f + 1, fun_name(f - 1), strlen(fun_name(f - 1)));
          mpt_enc_string(en, 2 * f + 2, "file.ml", 7);
          mpt_loc_entry_ids le = { 2 * f + 2, 2 * f + 1, f * 3, 1, 9 };
          mpt_enc_location(en, f, 0x1000 + f, &le, 1);
          defined[e->stream][f] = 1;
        }
      }
      mpt_enc_alloc(en, e->time, e->id, e->wosize, e->ns, (enum mpt_source)e->src,
                    (int)e->cut, e->stack, e->len);
      break;
    case MPT_EV_PROMOTE: mpt_enc_promote(en, e->id); break;
    case MPT_EV_MAJOR_CYCLE: {
      if (e->src) { mpt_enc_major_cycle_mark(en, e->time, e->id); break; }
      /* statistics that go up and down (encoded as differences) */
      mpt_heap_stats st = { e->wosize, e->wosize / 2, e->id, e->id / 3,
                            e->id % 5, e->wosize * 7 };
      mpt_enc_major_cycle(en, e->time, &st);
      break;
    }
    case MPT_EV_COLLECT: {
      /* COLLECTs of consecutive ids in a row are one COLLECT_RUN */
      uint32_t n = 1;
      while (i + n < NEV && evs[i + n].kind == MPT_EV_COLLECT
             && evs[i + n].stream == e->stream && evs[i + n].id == e->id + n)
        n++;
      mpt_enc_collect_run(en, e->id, n);
      i += n - 1;
      break;
    }
    case MPT_EV_MINOR_GC:
      if (e->src) {
        /* the fates of the [src] events after it */
        uint64_t fates = 0;
        for (uint32_t k = 0; k < e->src; k++)
          if (evs[i + 1 + k].kind == MPT_EV_PROMOTE) fates |= (uint64_t)1 << k;
        mpt_enc_minor_gc_fates(en, e->time, e->id, evs[i + 1].id, fates, e->src);
        i += (int)e->src;
      } else {
        mpt_enc_simple(en, MPT_EV_MINOR_GC, e->time, e->id);
      }
      break;
    default: mpt_enc_simple(en, (enum mpt_event_kind)e->kind, e->time, e->id); break;
    }
  }
  for (int s = 0; s < NSTREAMS; s++) if (mpt_enc_used(&enc[s])) {
    mpt_chunk_header(bufs[s], MPT_CHUNK_EVENTS, (uint16_t)s, (uint32_t)mpt_enc_used(&enc[s]));
    emit(bufs[s], 8 + mpt_enc_used(&enc[s]), compress);
  }
  uint8_t end[64];
  emit_frame(end, mpt_write_end_chunk(end, sizeof end, 999999, 77, 1), compress, 1);
}

/* Decode [len] bytes; returns events matched in order (per stream order is
   what the format guarantees; we emit chunks per stream, so compare per
   stream), -1 on error. */
static long decode(size_t len, int *truncated, int strict)
{
  char err[256];
  mpt_reader *r = mpt_reader_open_mem(out, len, err, sizeof err);
  if (!r) { *truncated = 1; return 0; }
  size_t next[NSTREAMS] = { 0 };
  long matched = 0;
  mpt_event ev;
  int rc;
  while ((rc = mpt_reader_next(r, &ev)) == MPT_OK) {
    if (!strict) { matched++; continue; }
    if (ev.stream >= NSTREAMS) { matched = -1; break; }
    size_t i = next[ev.stream];
    while (i < NEV && evs[i].stream != (int)ev.stream) i++;
    if (i == NEV) { matched = -1; break; }
    next[ev.stream] = i + 1;
    ev_t *e = &evs[i];
    int ok = (int)ev.kind == e->kind;
    if (ok && e->kind == MPT_EV_ALLOC) {
      ok = ev.id == e->id && ev.wosize == e->wosize && ev.nsamples == e->ns
        && ev.source == (enum mpt_source)e->src
        && ev.truncated == (int)e->cut && ev.stack_len == e->len + e->cut
        && ev.time_ns == e->time * 1000;
      /* a cut stack ends in the reader's <truncated> frame */
      if (ok && e->cut) {
        const mpt_location *l = mpt_reader_location(r, ev.stack[e->len]);
        ok = l && l->n == 1 && strcmp(l->entries[0].function, MPT_TRUNCATED_FRAME) == 0;
      }
      for (uint32_t k = 0; ok && k < e->len; k++) {
        const mpt_location *l = mpt_reader_location(r, ev.stack[k]);
        ok = l && l->n == 1 && strcmp(l->entries[0].function, fun_name(e->stack[k] - 1)) == 0
          && l->entries[0].line == e->stack[k] * 3 && l->address == 0x1000 + e->stack[k];
      }
    } else if (ok && (e->kind == MPT_EV_PROMOTE || e->kind == MPT_EV_COLLECT)) {
      ok = ev.id == e->id;
    } else if (ok && e->kind == MPT_EV_MAJOR_CYCLE && e->src) {
      /* a bare mark: the cycle number, the other figures as before */
      ok = ev.heap.major_collections == e->id && ev.time_ns == e->time * 1000;
    } else if (ok && e->kind == MPT_EV_MAJOR_CYCLE) {
      ok = ev.heap.heap_words == e->wosize && ev.heap.live_words == e->wosize / 2
        && ev.heap.minor_collections == e->id && ev.heap.major_collections == e->id / 3
        && ev.heap.compactions == e->id % 5 && ev.heap.promoted_words == e->wosize * 7
        && ev.time_ns == e->time * 1000;
    } else if (ok) {
      ok = ev.arg == e->id && ev.time_ns == e->time * 1000;
    }
    if (!ok) { matched = -1; break; }
    matched++;
  }
  if (rc == MPT_ERR && strict) matched = -1;
  *truncated = mpt_reader_truncated(r);
  mpt_reader_close(r);
  return matched;
}

/* A one-stream trace built by hand: start_trace writes the header and
   sets [en] to encode into [buf] (8 + [cap] bytes); end_trace emits the
   events chunk and opens a reader on the whole (NULL, said, on failure). */
static uint32_t small_stack[MPT_MAX_FRAMES];
/* The version the next trace's header says. */
static uint16_t trace_version = MPT_FORMAT_VERSION;
/* ... with the header's cap [max_frames] (start_trace: 64). */
static void start_trace_frames(mpt_encoder *en, uint8_t *buf, size_t cap,
                               uint32_t max_frames)
{
  static uint8_t hdr[65536];
  mpt_trace_info info = { trace_version, 64, 0, 1e-3, max_frames, 1000,
                          1, 1, 0, "prog", "host", "5.3.0+memprof", "prog" };
  out_len = 0;
  size_t n = mpt_write_header_chunk(hdr, sizeof hdr, &info);
  /* The writer writes its own version: an older one is said here (the
     payload's first field, little-endian). */
  hdr[MPT_MAGIC_LEN + MPT_CHUNK_HEADER_BYTES] = (uint8_t)trace_version;
  hdr[MPT_MAGIC_LEN + MPT_CHUNK_HEADER_BYTES + 1] = (uint8_t)(trace_version >> 8);
  emit(hdr, n, 0);
  mpt_enc_init(en, buf + 8, cap, small_stack, MPT_MAX_FRAMES);
}
static void start_trace(mpt_encoder *en, uint8_t *buf, size_t cap)
{
  start_trace_frames(en, buf, cap, 64);
}

/* Locations 1..[n] (address 0x1000 + id, function fun_name(id)). */
static void define_sites(mpt_encoder *en, uint32_t n)
{
  for (uint32_t f = 1; f <= n; f++) {
    mpt_enc_string(en, f, fun_name(f), strlen(fun_name(f)));
    mpt_loc_entry_ids le = { f, f, f, 1, 9 };
    mpt_enc_location(en, f, 0x1000 + f, &le, 1);
  }
}

static mpt_reader *end_trace(mpt_encoder *en, uint8_t *buf)
{
  char err[256];
  mpt_chunk_header(buf, MPT_CHUNK_EVENTS, 0, (uint32_t)mpt_enc_used(en));
  emit(buf, 8 + mpt_enc_used(en), 0);
  mpt_reader *r = mpt_reader_open_mem(out, out_len, err, sizeof err);
  if (!r) printf("open: %s\n", err);
  return r;
}

int main(void)
{
  {
    /* A stored frame's header is LZ4F's for the same frame (its checksum
       byte is a constant in the codec). */
    static const uint8_t chunk[40] = "OCMPTRCE and a few bytes of a chunk";
    uint8_t z[256], st[256];
    size_t zn = mpt_frame_compress(NULL, z, sizeof z, chunk, sizeof chunk, 1);
    size_t sn = mpt_frame_store(st, sizeof st, chunk, sizeof chunk);
    check(zn > 7 && sn == MPT_STORED_FRAME_OVERHEAD + sizeof chunk
          && memcmp(z, st, 7) == 0, "stored frame header is LZ4F's");
    check(mpt_frame_store(st, sizeof chunk + 14, chunk, sizeof chunk) == 0
          && mpt_frame_store(st, sizeof st, chunk, 0) == 0,
          "stored frame: no room, or nothing to store");
  }
  {
    /* The command line comes back whole, whether the header writes it
       after the executable (version 5's flag) or as is. */
    static const char *cases[][2] = {
      { "/bin/prog", "/bin/prog -x y" }, { "/bin/prog", "/bin/prog" },
      { "/bin/prog", "/bin/programme -x" }, { "/bin/prog", "prog -x" },
      { "", "prog -x" }, { "/bin/prog", "" } };
    int ok = 1, flagged = 0;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
      mpt_trace_info info = { MPT_FORMAT_VERSION, 64, 0, 1e-3, 64, 1000, 1, 1, 0,
                              cases[k][0], "host", "5.3.0+memprof", cases[k][1] };
      static uint8_t hdr[65536];
      size_t n = mpt_write_header_chunk(hdr, sizeof hdr, &info);
      flagged += (hdr[MPT_MAGIC_LEN + MPT_CHUNK_HEADER_BYTES + 3]
                  & MPT_FLAG_COMMAND_AFTER_EXE) != 0;
      char err[256];
      mpt_reader *r = mpt_reader_open_mem(hdr, n, err, sizeof err);
      const mpt_trace_info *in = r ? mpt_reader_info(r) : NULL;
      ok &= in && strcmp(in->command_line, cases[k][1]) == 0
        && strcmp(in->executable, cases[k][0]) == 0
        && !(in->flags & MPT_FLAG_COMMAND_AFTER_EXE);
      mpt_reader_close(r);
    }
    check(ok && flagged == 2, "header: command lines after their executable, or whole");
  }
  /* A realistic event mix: allocations whose stacks share their outer part,
     promotions and collections of earlier ids, occasional GC events. */
  uint64_t times[NSTREAMS] = { 0 }, id = 1, minors[NSTREAMS] = { 0 };
  uint64_t last_gc[NSTREAMS] = { 0 };  /* last PROMOTE/COLLECT id */
  uint32_t cur[NSTREAMS][64], curlen[NSTREAMS] = { 0 };
  for (int i = 0; i < NEV; i++) {
    ev_t *e = &evs[i];
    e->stream = (int)rnd(NSTREAMS);
    times[e->stream] += rnd(50);
    e->time = times[e->stream];
    uint32_t r = rnd(100);
    if (r < 70 || i < 10) {
      e->kind = MPT_EV_ALLOC; e->id = id++; e->wosize = 1 + rnd(300);
      e->ns = 1 + (rnd(10) == 0); e->src = rnd(MPT_SRC_COUNT);
      uint32_t *c = cur[e->stream], keep = curlen[e->stream] ? rnd(curlen[e->stream] + 1) : 0;
      uint32_t len = keep + rnd(12) + (keep == 0);  /* fresh >= 7: the count after the tag */
      if (len > 60) len = 60;
      /* stack[len-1] is main: keep the outermost [keep] frames. */
      uint32_t tmp[64];
      for (uint32_t k = 0; k < keep; k++) tmp[len - keep + k] = c[curlen[e->stream] - keep + k];
      /* A third are recursion through two or three call sites: packed
         frames (version 4) on both sides of their MTF list. */
      uint32_t rec = rnd(3) == 0 ? 2 + rnd(2) : 0, base = rnd(NFUN);
      for (uint32_t k = 0; k < len - keep; k++)
        tmp[k] = 1 + (rec ? (base + rnd(rec)) % NFUN : rnd(NFUN));
      memcpy(c, tmp, len * sizeof *c); curlen[e->stream] = len;
      memcpy(e->stack, tmp, len * sizeof *tmp); e->len = len; e->cut = rnd(8) == 0;
    } else if (r < 85 && id > 20 && i + 6 < NEV && rnd(3) == 0) {
      /* a run of consecutive ids, as a minor GC finds them */
      uint32_t n = 2 + rnd(5);
      uint64_t first = 1 + rnd((uint32_t)id - n);
      for (uint32_t k = 0; k < n; k++, i++) {
        evs[i] = *e;
        evs[i].kind = MPT_EV_COLLECT; evs[i].id = first + k;
      }
      i--;
      last_gc[e->stream] = first + n - 1;
    } else if (r < 85 && id > 80 && i + 60 < NEV && rnd(2) == 0) {
      /* a minor GC and the fates of young ids that follow each other
         (version 5's bits, the ones written one by one when shorter): at
         times 1 to 3 after the stream's last (the MINOR_GC's tag), at
         times up to MPT_MAX_FATES, of any ids, all dead (runs) or not */
      uint32_t n = rnd(4) ? 1 + rnd(8) : 1 + rnd(MPT_MAX_FATES);
      uint64_t first = rnd(2) ? last_gc[e->stream] + 1 : 1 + rnd((uint32_t)id - n);
      int mode = (int)rnd(4);   /* 0: all dead, 1: all promoted, else mixed */
      e->kind = MPT_EV_MINOR_GC; e->src = n;
      e->id = minors[e->stream] = rnd(4) ? minors[e->stream] + 1 : rnd(1000);
      for (uint32_t k = 1; k <= n; k++) {
        evs[i + k] = *e; evs[i + k].src = 0;
        evs[i + k].kind = mode == 0 || (mode > 1 && rnd(2)) ? MPT_EV_COLLECT : MPT_EV_PROMOTE;
        evs[i + k].id = first + k - 1;
      }
      i += (int)n;
      last_gc[e->stream] = first + n - 1;
    } else if (r < 85) {
      e->kind = MPT_EV_COLLECT; e->id = last_gc[e->stream] = 1 + rnd((uint32_t)id);
    } else if (r < 95) {
      e->kind = MPT_EV_PROMOTE; e->id = last_gc[e->stream] = 1 + rnd((uint32_t)id);
    } else if (r < 98) {
      e->kind = MPT_EV_MAJOR_CYCLE; e->id = rnd(100000); e->wosize = rnd(1u << 30);
      e->src = rnd(2);            /* 1: a bare cycle mark */
    } else {
      /* mostly the stream's next count (one byte since version 4), at
         times any */
      e->kind = MPT_EV_MINOR_GC;
      e->id = minors[e->stream] = rnd(4) ? minors[e->stream] + 1 : rnd(1000);
    }
  }
  for (int compress = 0; compress <= 1; compress++) {
    build(compress);
    int trunc;
    long m = decode(out_len, &trunc, 1);
    char what[128];
    snprintf(what, sizeof what, "%s: whole file decodes to all %d events (got %ld)",
             compress ? "lz4" : "plain", NEV, m);
    check(m == NEV, what);
    check(!trunc, compress ? "lz4: whole file not truncated" : "plain: whole file not truncated");
    /* Every cut decodes cleanly to a prefix, and says it is truncated. */
    int bad = 0, not_trunc = 0;
    long prev = 0;
    /* About 600 cuts: every byte of the first 100 (magic, header, first
       frame header), then evenly spread ones shifted by a random amount. */
    size_t step = out_len / 500 + 1;
    for (size_t cut = 0; cut < out_len; cut += cut < 100 ? 1 : step - rnd(3)) {
      long k = decode(cut, &trunc, 1);
      if (k < 0 || k < prev) bad++;
      if (!trunc) not_trunc++;
      if (k >= 0) prev = k;
    }
    snprintf(what, sizeof what, "%s: every cut of %zu bytes decodes to a growing prefix",
             compress ? "lz4" : "plain", out_len);
    check(bad == 0, what);
    check(not_trunc == 0, "every cut is reported truncated");
    /* Corruptions: anything may come out, but no crash, no hang. */
    uint8_t *orig = malloc(out_len);
    memcpy(orig, out, out_len);
    for (int k = 0; k < 1000; k++) {
      size_t at = rnd((uint32_t)out_len);
      out[at] ^= (uint8_t)(1 + rnd(255));
      decode(out_len, &trunc, 0);
      memcpy(out, orig, out_len);
    }
    check(1, "1000 corrupted files decoded without crashing");
    free(orig);
  }
  /* A COLLECT_RUN may not be longer than the allocations not yet
     collected: a corrupt count must not turn 3 bytes into 2^60 events. */
  for (uint32_t n = 2; n <= 3; n++) {
    static uint8_t buf[8 + 512];
    mpt_encoder en;
    start_trace(&en, buf, 512);
    mpt_enc_alloc(&en, 1, 1, 2, 1, MPT_SRC_MINOR, 0, NULL, 0);
    mpt_enc_alloc(&en, 2, 2, 2, 1, MPT_SRC_MINOR, 0, NULL, 0);
    mpt_enc_collect_run(&en, 1, n);
    mpt_reader *r = end_trace(&en, buf);
    char what[128];
    mpt_event ev;
    int rc = MPT_ERR, collects = 0;
    while (r && (rc = mpt_reader_next(r, &ev)) == MPT_OK)
      collects += ev.kind == MPT_EV_COLLECT;
    snprintf(what, sizeof what, "a run of %u after 2 allocations: %s", n,
             n == 2 ? "2 COLLECTs" : "an error");
    check(r && (n == 2 ? rc == MPT_END && collects == 2 : rc == MPT_ERR), what);
    mpt_reader_close(r);
  }
  /* Samples of two sites in turn: after the first of each, every record
     repeats a kept one (tag 0x60 + slot and the time delta: 2 bytes) and
     decodes to the same site. */
  {
    static uint8_t buf[8 + 4096];
    mpt_encoder en;
    start_trace(&en, buf, 4096);
    define_sites(&en, 3);
    size_t defs = mpt_enc_used(&en);
    uint32_t site[2][2] = { { 1, 3 }, { 2, 3 } };
    for (uint64_t i = 0; i < 100; i++)
      mpt_enc_alloc(&en, 10 * i, i + 1, 3 + i % 2, 1, MPT_SRC_MINOR, 0, site[i % 2], 2);
    size_t bytes = mpt_enc_used(&en) - defs;
    mpt_reader *r = end_trace(&en, buf);
    char what[128];
    mpt_event ev;
    int n = 0, same = 0;
    uint32_t first[2][3];
    while (r && mpt_reader_next(r, &ev) == MPT_OK) {
      if (ev.kind != MPT_EV_ALLOC || ev.stack_len != 2) break;
      if (n < 2) memcpy(first[n], ev.stack, 2 * sizeof(uint32_t));
      same += ev.id == (uint64_t)n + 1 && ev.wosize == 3 + (uint64_t)n % 2
              && ev.time_ns == 10000 * (uint64_t)n
              && memcmp(ev.stack, first[n % 2], 2 * sizeof(uint32_t)) == 0;
      n++;
    }
    snprintf(what, sizeof what, "100 samples of 2 sites in turn: all decoded (%d) "
             "and 2 bytes each after the first two (%zu bytes)", same, bytes);
    check(same == 100 && bytes <= 2 * 98 + 2 * 8, what);
    mpt_reader_close(r);
  }
  /* Two records that hash to the same set both stay kept (version 4's
     two-way sets; one slot each, they evicted each other): 100 samples
     alternating between them take 2 bytes each after the first two. */
  {
    static uint8_t buf[8 + 4096];
    mpt_encoder en;
    uint32_t site[1] = { 1 };
    int set_of[2] = { -1, -1 };
    uint64_t ws[2] = { 3, 0 };
    /* The set a sample of size w is kept in, from a trace of its own. */
    for (uint64_t w = 3; w < 4096 && ws[1] == 0; w++) {
      start_trace(&en, buf, 4096);
      define_sites(&en, 1);
      mpt_enc_alloc(&en, 0, 1, w, 1, MPT_SRC_MINOR, 0, site, 1);
      int set = -1;
      for (int k = 0; k < 32; k += 2) if (en.repeat[k]) set = k / 2;
      if (w == 3) set_of[0] = set;
      else if (set == set_of[0]) { ws[1] = w; set_of[1] = set; }
    }
    start_trace(&en, buf, 4096);
    define_sites(&en, 1);
    size_t defs = mpt_enc_used(&en);
    for (uint64_t i = 0; i < 100; i++)
      mpt_enc_alloc(&en, i, i + 1, ws[i % 2], 1, MPT_SRC_MINOR, 0, site, 1);
    size_t bytes = mpt_enc_used(&en) - defs;
    mpt_reader *r = end_trace(&en, buf);
    mpt_event ev;
    int n = 0, same = 0;
    while (r && mpt_reader_next(r, &ev) == MPT_OK && ev.kind == MPT_EV_ALLOC)
      same += ev.wosize == ws[n++ % 2] && ev.stack_len == 1;
    char what[160];
    snprintf(what, sizeof what, "sizes %" PRIu64 " and %" PRIu64 " (one set) in turn: "
             "all decoded (%d), 2 bytes each after the first two (%zu bytes)",
             ws[0], ws[1], same, bytes);
    check(ws[1] != 0 && same == 100 && bytes <= 2 * 98 + 2 * 8, what);
    mpt_reader_close(r);
  }
  /* Deep recursion through two call sites: 100 stacks of 32 fresh frames
     on a random path of sites 1 and 2 under 3.  Packed, a record is its tag,
     size, common, count, 8 bytes of codes and the time: 13 bytes instead of
     37, and it decodes to the same stack. */
  {
    static uint8_t buf[8 + 8192];
    mpt_encoder en;
    start_trace(&en, buf, 8192);
    define_sites(&en, 3);
    size_t defs = mpt_enc_used(&en);
    static uint32_t paths[100][33];
    for (int i = 0; i < 100; i++) {
      for (int k = 0; k < 32; k++) paths[i][k] = 1 + rnd(2);
      paths[i][32] = 3;
      mpt_enc_alloc(&en, (uint64_t)i, (uint64_t)i + 1, 5, 1, MPT_SRC_MINOR, 0,
                    paths[i], 33);
    }
    size_t bytes = mpt_enc_used(&en) - defs;
    mpt_reader *r = end_trace(&en, buf);
    mpt_event ev;
    int n = 0, same = 0;
    while (r && mpt_reader_next(r, &ev) == MPT_OK && ev.kind == MPT_EV_ALLOC) {
      int ok = ev.stack_len == 33;
      for (int k = 0; ok && k < 33; k++) {
        const mpt_location *l = mpt_reader_location(r, ev.stack[k]);
        ok = l && l->address == 0x1000 + paths[n][k];
      }
      same += ok;
      n++;
    }
    char what[160];
    snprintf(what, sizeof what, "100 stacks of 32 frames through 2 sites: all "
             "decoded (%d) in at most 13 bytes each (%zu bytes)", same, bytes);
    check(same == 100 && bytes <= 13 * 100 + 4, what);
    mpt_reader_close(r);
  }
  /* A cut stack's window (64 frames) moving along a deep stack: site
     SITE(j) at depth j from the root, each sample at a random depth from 64 to
     400 with the frames below a random point fresh; the window drops the
     previous window's outer frames that are gone from this one, or adds
     those beyond it (STACK_WINDOW), and the ALLOC shares the rest.  Every
     stack decodes to the innermost 64 frames and the cut mark, with the
     previous stack in as much room as it may hold (its entries move) and
     in twice that (its start moves); a window that drops more than the
     stack holds is an error. */
  for (int roomy = 0; roomy < 2; roomy++) {
    enum { W = 64, DEPTH = 400, N = 300 };
#define SITE(j) (1 + (j) % 37)
    static uint8_t buf[8 + 65536];
    static uint32_t room[2 * MPT_MAX_FRAMES];
    mpt_encoder en;
    start_trace(&en, buf, 65536);
    if (roomy) mpt_enc_stack_room(&en, room, 2 * MPT_MAX_FRAMES);
    define_sites(&en, 37);
    static uint32_t depth_of[N];
    uint32_t prev = 0, ids[W], outer[W];
    for (int i = 0; i < N; i++) {
      uint32_t d = W + rnd(DEPTH - W + 1), lo = d - W + 1;
      depth_of[i] = d;
      uint32_t m = (prev < d ? prev : d);
      m = m > 3 ? m - rnd(3) : 0;              /* deepest frame kept as is */
      uint32_t common = 0;
      uint32_t plo = prev - W + 1;
      if (prev > 0 && m >= lo && m >= plo) {     /* frames in both windows */
        uint32_t drop = 0, n = 0;
        if (lo > plo) drop = lo - plo;
        for (uint32_t j = plo - 1; j >= lo && lo < plo; j--) outer[n++] = SITE(j);
        mpt_enc_stack_window(&en, drop, outer, n);
        common = m - lo + 1;
      } else {
        m = lo - 1;                            /* all of it fresh */
      }
      uint32_t fresh = 0;
      for (uint32_t j = d; j > m && j >= lo; j--) ids[fresh++] = SITE(j);
      mpt_enc_alloc_shared(&en, (uint64_t)i, (uint64_t)i + 1, 2, 1,
                           MPT_SRC_MINOR, 1, ids, fresh, common);
      prev = d;
    }
    mpt_reader *r = end_trace(&en, buf);
    mpt_event ev;
    int n = 0, same = 0;
    while (r && mpt_reader_next(r, &ev) == MPT_OK && ev.kind == MPT_EV_ALLOC) {
      int ok = ev.truncated && ev.stack_len == W + 1;
      for (int k = 0; ok && k < W; k++) {
        const mpt_location *l = mpt_reader_location(r, ev.stack[k]);
        ok = l && l->address == 0x1000 + SITE(depth_of[n] - k);
      }
      same += ok;
      n++;
    }
    char what[160];
    snprintf(what, sizeof what, "a 64-frame window moving along a 400-frame "
             "stack%s: %d of %d stacks decoded as written",
             roomy ? " (room for two)" : "", same, N);
    check(same == N, what);
    mpt_reader_close(r);
    start_trace(&en, buf, 65536);
    define_sites(&en, 4);
    uint32_t two[2] = { 1, 2 };
    mpt_enc_alloc(&en, 1, 1, 2, 1, MPT_SRC_MINOR, 0, two, 2);
    uint8_t *w = en.pos;
    mpt_enc_stack_window(&en, 1, NULL, 0);
    w[1] = 3;                                  /* drop 3 of 2 frames */
    r = end_trace(&en, buf);
    int rc = MPT_OK;
    while (r && (rc = mpt_reader_next(r, &ev)) == MPT_OK) {}
    check(r && rc == MPT_ERR, "a stack window dropping more frames than the "
          "stack holds is an error");
    mpt_reader_close(r);
  }
  /* Version 6: a stack written deeper than the header's max_frames (8)
     is shown as its innermost 8 frames and the cut mark, while the
     stream's previous stack keeps every frame written: the next ALLOC's
     common frames count from all 20, and a stack of 8 frames or fewer
     is shown whole. */
  {
    static uint8_t buf[8 + 4096];
    mpt_encoder en;
    start_trace_frames(&en, buf, 4096, 8);
    define_sites(&en, 22);
    uint32_t deep[20], two[2] = { 21, 22 };
    for (uint32_t k = 0; k < 20; k++) deep[k] = 1 + k;   /* innermost first */
    mpt_enc_alloc(&en, 1, 1, 2, 1, MPT_SRC_MINOR, 0, deep, 20);
    mpt_enc_alloc_shared(&en, 2, 2, 2, 1, MPT_SRC_MINOR, 0, two, 2, 17);
    mpt_enc_alloc(&en, 3, 3, 2, 1, MPT_SRC_MINOR, 0, deep + 15, 5);
    /* what each shows, innermost first (0: the cut mark) */
    static const uint32_t want[3][10] = {
      { 1, 2, 3, 4, 5, 6, 7, 8, 0 },
      { 21, 22, 4, 5, 6, 7, 8, 9, 0 },
      { 16, 17, 18, 19, 20 } };
    static const uint32_t want_len[3] = { 9, 9, 5 };
    mpt_reader *r = end_trace(&en, buf);
    mpt_event ev;
    int n = 0, same = 0;
    while (r && n < 3 && mpt_reader_next(r, &ev) == MPT_OK) {
      if (ev.kind != MPT_EV_ALLOC) continue;
      int ok = ev.stack_len == want_len[n] && ev.truncated == (n < 2);
      for (uint32_t k = 0; ok && k < ev.stack_len; k++) {
        const mpt_location *l = mpt_reader_location(r, ev.stack[k]);
        ok = l && (want[n][k] == 0 ? l->address == 0
                                   : l->address == 0x1000 + want[n][k]);
      }
      same += ok;
      n++;
    }
    char what[160];
    snprintf(what, sizeof what, "version 6: stacks of 20, 19 and 5 frames "
             "under a cap of 8: %d of 3 shown as the reader cuts them", same);
    check(same == 3, what);
    mpt_reader_close(r);
  }
  /* A minor GC goes through the young samples in id order: PROMOTE and
     COLLECT of the next id take one byte; others keep their delta. */
  {
    static uint8_t buf[8 + 512];
    mpt_encoder en;
    start_trace(&en, buf, 512);
    for (uint64_t i = 1; i <= 6; i++)
      mpt_enc_alloc(&en, i, i, 2, 1, MPT_SRC_MINOR, 0, NULL, 0);
    size_t before = mpt_enc_used(&en);
    uint64_t gc[5] = { 1, 2, 3, 5, 6 };
    for (int k = 0; k < 5; k++)
      if (k % 2) mpt_enc_collect(&en, gc[k]); else mpt_enc_promote(&en, gc[k]);
    size_t bytes = mpt_enc_used(&en) - before;
    mpt_reader *r = end_trace(&en, buf);
    mpt_event ev;
    int k = 0, ok = 1;
    while (r && mpt_reader_next(r, &ev) == MPT_OK)
      if (ev.kind == MPT_EV_PROMOTE || ev.kind == MPT_EV_COLLECT) {
        ok &= k < 5 && ev.id == gc[k]
              && ev.kind == (k % 2 ? MPT_EV_COLLECT : MPT_EV_PROMOTE);
        k++;
      }
    check(r && ok && k == 5 && bytes == 6,
          "PROMOTE/COLLECT of ids 1 2 3 5 6: decoded, one byte each but 5's two");
    mpt_reader_close(r);
  }
  /* A packed code must name an entry of the list: with no previous stack
     the list is empty, and the record is refused (not read as location 0). */
  {
    static uint8_t buf[8 + 512];
    mpt_encoder en;
    start_trace(&en, buf, 512);
    mpt_enc_string(&en, 1, "f", 1);
    mpt_loc_entry_ids le = { 1, 1, 1, 1, 9 };
    mpt_enc_location(&en, 1, 0x1001, &le, 1);
    /* compact ALLOC: 4 fresh frames, unit, minor; wosize 1; common 0,
       packed; codes 0 0 0 0; dt 0 */
    static const uint8_t rec[] = { 0xc4, 1, 1, 0x00, 0 };
    memcpy(en.pos, rec, sizeof rec);
    en.pos += sizeof rec;
    mpt_reader *r = end_trace(&en, buf);
    mpt_event ev;
    int rc = MPT_END;
    while (r && (rc = mpt_reader_next(r, &ev)) == MPT_OK) {}
    check(r && rc == MPT_ERR, "a packed code naming an empty list entry is an error");
    mpt_reader_close(r);
  }
  /* Version 8: a recursion's repeated ids are runs.  Stacks of deep
     recursion, with runs of every length (1 to 3,000 more frames), at
     either end and beside other ids, come back as written, in a few
     bytes; the next stack shares 3,000 frames of it. */
  {
    static uint8_t buf[8 + 65536];
    static uint32_t deep[4096], second[20];
    static const uint32_t pieces[][2] = {   /* id, frames */
      { 3, 3000 }, { 4, 1 }, { 5, 2 }, { 6, 3 }, { 2, 101 }, { 4, 1 },
      { 1, 17 } };
    uint32_t len = 0;
    for (size_t k = 0; k < sizeof pieces / sizeof pieces[0]; k++)
      for (uint32_t j = 0; j < pieces[k][1]; j++) deep[len++] = pieces[k][0];
    for (uint32_t k = 0; k < 20; k++) second[k] = 7 + k % 2;
    mpt_encoder en;
    start_trace_frames(&en, buf, 65536, 4096);
    define_sites(&en, 8);
    size_t before = mpt_enc_used(&en);
    mpt_enc_alloc(&en, 1, 1, 2, 1, MPT_SRC_MINOR, 0, deep, len);
    size_t bytes = mpt_enc_used(&en) - before;
    mpt_enc_alloc_shared(&en, 2, 2, 2, 1, MPT_SRC_MINOR, 0, second, 20,
                         len - 25);
    mpt_reader *r = end_trace(&en, buf);
    mpt_event ev;
    int n = 0, same = 0;
    while (r && n < 2 && mpt_reader_next(r, &ev) == MPT_OK) {
      if (ev.kind != MPT_EV_ALLOC) continue;
      const uint32_t *want = n == 0 ? deep : second;
      uint32_t want_len = n == 0 ? len : 20 + len - 25;
      int ok = ev.stack_len == want_len && !ev.truncated;
      for (uint32_t k = 0; ok && k < want_len; k++) {
        uint32_t f = n == 0 || k < 20 ? want[k] : deep[25 + k - 20];
        const mpt_location *l = mpt_reader_location(r, ev.stack[k]);
        ok = l && l->address == 0x1000 + f;
      }
      same += ok;
      n++;
    }
    char what[160];
    snprintf(what, sizeof what, "version 8: a stack of %u frames with runs "
             "in %zu bytes, and one sharing most of it: %d of 2 decoded as "
             "written", len, bytes, same);
    check(same == 2 && bytes < 40, what);
    mpt_reader_close(r);
  }
  /* A run that is empty, longer than the frames left, first in its
     record, or in a trace of version 7 is an error; a run of 4 after
     location 1 is 5 frames of it. */
  {
    static const struct { uint8_t ids[3]; uint16_t version; int ok; } cases[] = {
      { { 1, 0, 4 }, 8, 1 }, { { 1, 0, 0 }, 8, 0 }, { { 1, 0, 5 }, 8, 0 },
      { { 0, 4, 1 }, 8, 0 }, { { 1, 0, 4 }, 7, 0 } };
    int ok = 1;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
      static uint8_t buf[8 + 512];
      mpt_encoder en;
      trace_version = cases[k].version;
      start_trace(&en, buf, 512);
      trace_version = MPT_FORMAT_VERSION;
      mpt_enc_string(&en, 1, "f", 1);
      mpt_loc_entry_ids le = { 1, 1, 1, 1, 9 };
      mpt_enc_location(&en, 1, 0x1001, &le, 1);
      /* compact ALLOC: fresh count follows, unit, minor; wosize 1;
         common 0; 5 fresh frames as the case's bytes; dt 0 (a record
         of 2 ids, run first, is [0, 4] then location 1: one frame too
         many) */
      uint8_t rec[] = { 0xf4, 1, 0, 5, cases[k].ids[0], cases[k].ids[1],
                        cases[k].ids[2], 0 };
      memcpy(en.pos, rec, sizeof rec);
      en.pos += sizeof rec;
      mpt_reader *r = end_trace(&en, buf);
      mpt_event ev;
      int rc = MPT_ERR, frames = -1;
      while (r && (rc = mpt_reader_next(r, &ev)) == MPT_OK)
        if (ev.kind == MPT_EV_ALLOC) {
          frames = (int)ev.stack_len;
          for (uint32_t j = 0; j < ev.stack_len; j++) {
            const mpt_location *l = mpt_reader_location(r, ev.stack[j]);
            if (!l || l->address != 0x1001) frames = -1;
          }
        }
      ok &= cases[k].ok ? rc == MPT_END && frames == 5 : rc == MPT_ERR;
      mpt_reader_close(r);
    }
    check(ok, "version 8: runs empty, too long, first or in a version 7 "
          "trace are errors; a run of 4 after an id is 5 frames");
  }
  /* Version 9: a stack 4,500 frames deep, a recursion out from depth
     200, written cut (its innermost 4,096), then returned by 300 frames:
     the window adds the 300 frames beyond, those of the recursion as a
     run, before the ALLOC leaves the 300 innermost, the window's stack
     4,396 frames.  It decodes as the innermost 4,096 frames of the
     shallower stack; in a trace of version 8 the window is an error. */
  for (uint16_t version = 9; version >= 8; version--) {
    enum { D = 4500, UP = 300, SITES = 37 };
    /* j: depth from the root, 1.. */
#define DEEP_SITE(j) ((j) > 200 ? 5 : 1 + (j) % SITES)
    static uint8_t buf[8 + 65536];
    static uint32_t room[4 * MPT_MAX_FRAMES], ids[MPT_MAX_FRAMES], beyond[UP];
    mpt_encoder en;
    trace_version = version;
    start_trace_frames(&en, buf, 65536, MPT_MAX_FRAMES);
    trace_version = MPT_FORMAT_VERSION;
    mpt_enc_stack_room(&en, room, 4 * MPT_MAX_FRAMES);
    define_sites(&en, SITES);
    for (uint32_t k = 0; k < MPT_MAX_FRAMES; k++) ids[k] = DEEP_SITE(D - k);
    mpt_enc_alloc(&en, 1, 1, 2, 1, MPT_SRC_MINOR, 1, ids, MPT_MAX_FRAMES);
    uint32_t top = D - UP;                 /* the shallower stack's depth */
    for (uint32_t k = 0; k < UP; k++)
      beyond[k] = DEEP_SITE(D - MPT_MAX_FRAMES - k);
    size_t before = mpt_enc_used(&en);
    mpt_enc_stack_window(&en, 0, beyond, UP);
    size_t window_bytes = mpt_enc_used(&en) - before;
    mpt_enc_alloc_shared(&en, 2, 2, 2, 1, MPT_SRC_MINOR, 1, NULL, 0,
                         MPT_MAX_FRAMES);
    mpt_reader *r = end_trace(&en, buf);
    mpt_event ev;
    int n = 0, same = 0, rc = MPT_ERR;
    while (r && (rc = mpt_reader_next(r, &ev)) == MPT_OK) {
      if (ev.kind != MPT_EV_ALLOC) continue;
      uint32_t depth = n == 0 ? D : top;
      int ok = ev.truncated && ev.stack_len == MPT_MAX_FRAMES + 1;
      for (uint32_t k = 0; ok && k < MPT_MAX_FRAMES; k++) {
        const mpt_location *l = mpt_reader_location(r, ev.stack[k]);
        ok = l && l->address == 0x1000 + DEEP_SITE(depth - k);
      }
      same += ok;
      n++;
    }
    char what[200];
    if (version == 9) {
      snprintf(what, sizeof what, "version 9: a cut stack that returned "
               "300 frames, through a window of 4,396 frames in %zu bytes: "
               "%d of 2 decoded as written", window_bytes, same);
      check(r && rc == MPT_END && same == 2 && window_bytes < 110, what);
    } else {
      check(r && rc == MPT_ERR && n == 1, "version 8: a window of more "
            "than 4,096 frames is an error");
    }
    mpt_reader_close(r);
#undef DEEP_SITE
  }
  /* Runs of every length (1 to 40, so that they start and end anywhere
     in the writer's four-id compares) among an ALLOC's fresh ids and a
     window's: 200 stacks of 300 fresh frames, each followed by a window
     of 200 frames beyond it, decode as written. */
  {
    enum { SITES = 9, FRESH = 300, BEYOND = 200, STACKS = 200 };
    static uint8_t buf[8 + (1 << 20)];
    static uint32_t room[4 * MPT_MAX_FRAMES], ids[FRESH + BEYOND];
    mpt_encoder en;
    start_trace_frames(&en, buf, 1 << 20, MPT_MAX_FRAMES);
    mpt_enc_stack_room(&en, room, 4 * MPT_MAX_FRAMES);
    en.pack_min_fresh = UINT32_MAX;     /* plain ids, as the runtime's */
    define_sites(&en, SITES + 1);
    rng = 12345;
    for (uint32_t s = 0; s < STACKS; s++) {
      for (uint32_t k = 0; k < FRESH + BEYOND;) {
        uint32_t site = 1 + rnd(SITES), len = 1 + rnd(40);
        for (; len > 0 && k < FRESH + BEYOND; len--) ids[k++] = site;
      }
      /* No frame shared with the stack before, which ends beyond. */
      ids[FRESH - 1] = SITES + 1;
      mpt_enc_alloc(&en, 2 * s + 1, 2 * s + 1, 2, 1, MPT_SRC_MINOR, 0, ids,
                    FRESH);
      mpt_enc_stack_window(&en, 0, ids + FRESH, BEYOND);
      mpt_enc_alloc_shared(&en, 2 * s + 2, 2 * s + 2, 2, 1, MPT_SRC_MINOR,
                           0, NULL, 0, FRESH + BEYOND);
    }
    mpt_reader *r = end_trace(&en, buf);
    mpt_event ev;
    int n = 0, same = 0, rc = MPT_ERR;
    rng = 12345;                        /* the same stacks again */
    while (r && (rc = mpt_reader_next(r, &ev)) == MPT_OK) {
      if (ev.kind != MPT_EV_ALLOC) continue;
      uint32_t len = n % 2 == 0 ? FRESH : FRESH + BEYOND;
      if (n % 2 == 0) {
        for (uint32_t k = 0; k < FRESH + BEYOND;) {
          uint32_t site = 1 + rnd(SITES), run = 1 + rnd(40);
          for (; run > 0 && k < FRESH + BEYOND; run--) ids[k++] = site;
        }
        ids[FRESH - 1] = SITES + 1;
      }
      int ok = ev.stack_len == len;
      for (uint32_t k = 0; ok && k < len; k++) {
        const mpt_location *l = mpt_reader_location(r, ev.stack[k]);
        ok = l && l->address == 0x1000 + ids[k];
      }
      same += ok;
      n++;
    }
    char what[160];
    snprintf(what, sizeof what, "runs of 1 to 40 ids in ALLOCs and windows: "
             "%d of %d stacks decoded as written", same, 2 * STACKS);
    check(r && rc == MPT_END && same == 2 * STACKS, what);
    mpt_reader_close(r);
  }
  mpt_frame_state_free(kept_state);
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
