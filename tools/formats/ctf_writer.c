/* ctf_writer.c: memtrace CTF v2 or v3 with the reference writer policy.

   Version 2 has one stream.  Version 3 has one per domain: each packet
   names its domain and the reader keeps decoding state per domain, so the
   writer keeps one wstream per domain value, created on first use.
   A stream's state mirrors the reader's (spec 9.2) plus the writer-only
   parts:
   - loc/next/date[16384]: backtrace cache, predictions and the id of the
     allocation that last used each bucket (chooses the bucket to evict);
   - prev: the previous full callstack, for the common prefix;
   - the event packet being filled (32 KiB), with its header written up
     front (dummy or real verifier) and completed when the packet is
     flushed;
   - pending: codes first sent as cache misses since the last flush; their
     location events go into location packets written just before the
     event packet that needs them;
   - the move-to-front file/definition tables of the location encoder;
   - version 3: its id range (10,000 ids taken from one counter shared by
     the streams, spec 11), a new packet when it runs out.
   Time: version 2 clamps every time to the latest written (one stream,
   non-decreasing); version 3 clamps per stream, and at the end flushes the
   stream holding the latest event last, so that the file's last event is
   its latest (what memtrace_viewer expects, spec 16).
   Nothing is allocated per event except the growth of prev and pending. */

#include "ctf_writer.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

#define NB 16384
#define MAXP 32768
#define LOW25 0x1FFFFFFu
#define SLOTS 31
#define ID_RANGE 10000
#define MAX_STREAMS 65536

typedef struct {
  const char *name;
  const char *defs[SLOTS];
  int ndefs;
} wfile;

typedef struct {
  uint16_t domain;
  uint64_t loc[NB];
  uint64_t date[NB];
  uint16_t next[NB];
  uint32_t verify_ix;

  uint64_t *prev;
  size_t prev_len, prev_cap;
  uint64_t *pending;
  size_t npending, pending_cap;

  wfile files[SLOTS];
  int nfiles;

  uint8_t pkt[MAXP];
  size_t len;
  uint64_t t_start, t_end, first_id, next_id, range_end, last_t;
  uint64_t order;              /* when it last received an event (ties) */
} wstream;

struct ctf_writer {
  FILE *out;
  int io_error;
  ctf_winfo info;
  ctf_loc_lookup lookup;
  void *u;
  wstream **streams;           /* by domain (v3), [0] only (v2) */
  size_t nstreams;
  uint64_t next_range;         /* v3: first id of the next range */
  uint64_t events;             /* events written, for wstream.order */
  uint8_t lpkt[MAXP];          /* location packets */
};

/* ---- byte output into a packet buffer ---- */

static inline void put8(uint8_t *b, size_t *n, uint8_t v) { b[(*n)++] = v; }
static inline void put16(uint8_t *b, size_t *n, uint16_t v)
{ b[*n] = (uint8_t)v; b[*n + 1] = (uint8_t)(v >> 8); *n += 2; }
static inline void put32(uint8_t *b, size_t *n, uint32_t v)
{ for (int i = 0; i < 4; i++) b[*n + i] = (uint8_t)(v >> (8 * i)); *n += 4; }
static inline void put64(uint8_t *b, size_t *n, uint64_t v)
{ for (int i = 0; i < 8; i++) b[*n + i] = (uint8_t)(v >> (8 * i)); *n += 8; }
static void putstr(uint8_t *b, size_t *n, const char *s)
{ size_t k = strlen(s); memcpy(b + *n, s, k + 1); *n += k + 1; }
static void putvint(uint8_t *b, size_t *n, int64_t v)
{
  if (v >= 0 && v <= 252) put8(b, n, (uint8_t)v);
  else if (v >= 0 && v <= 0xFFFF) { put8(b, n, 253); put16(b, n, (uint16_t)v); }
  else if (v >= INT32_MIN && v <= INT32_MAX) { put8(b, n, 254); put32(b, n, (uint32_t)(int32_t)v); }
  else { put8(b, n, 255); put64(b, n, (uint64_t)v); }
}

/* Packet header (66 bytes in v2, 68 with the domain in v3) with zero
   sizes/times/ids. */
static void header(ctf_writer *w, uint8_t *b, size_t *n, uint16_t domain, uint16_t vix,
                   uint16_t vpred, uint64_t vval)
{
  put32(b, n, 0xC1FC1FC1u); put32(b, n, 0); put64(b, n, 0); put64(b, n, 0);
  put32(b, n, 0); put16(b, n, (uint16_t)w->info.version); put64(b, n, w->info.pid);
  if (w->info.version >= 3) put16(b, n, domain);
  put16(b, n, vix); put16(b, n, vpred); put64(b, n, vval);
  put64(b, n, 0); put64(b, n, 0);
}

static void finish_header(ctf_writer *w, uint8_t *b, size_t len, uint64_t tb, uint64_t te,
                          uint64_t ib, uint64_t ie)
{
  size_t n = 4;
  put32(b, &n, (uint32_t)(len * 8));
  put64(b, &n, tb);
  put64(b, &n, te);
  n = w->info.version >= 3 ? 52 : 50;
  put64(b, &n, ib);
  put64(b, &n, ie);
}

static void emit(ctf_writer *w, const uint8_t *b, size_t n)
{
  if (fwrite(b, 1, n, w->out) != n) w->io_error = 1;
}

/* ---- location events ---- */

static int mtf_file(wstream *w, const char *name)
{
  for (int i = 0; i < w->nfiles; i++) {
    if (w->files[i].name == name || strcmp(w->files[i].name, name) == 0) {
      wfile e = w->files[i];
      memmove(&w->files[1], &w->files[0], (size_t)i * sizeof e);
      w->files[0] = e;
      return i;
    }
  }
  int keep = w->nfiles < SLOTS ? w->nfiles : SLOTS - 1;
  memmove(&w->files[1], &w->files[0], (size_t)keep * sizeof w->files[0]);
  memset(&w->files[0], 0, sizeof w->files[0]);
  w->files[0].name = name;
  w->nfiles = keep + 1;
  return SLOTS;
}

static int mtf_def(wfile *f, const char *name)
{
  for (int i = 0; i < f->ndefs; i++) {
    if (f->defs[i] == name || strcmp(f->defs[i], name) == 0) {
      const char *e = f->defs[i];
      memmove(&f->defs[1], &f->defs[0], (size_t)i * sizeof e);
      f->defs[0] = e;
      return i;
    }
  }
  int keep = f->ndefs < SLOTS ? f->ndefs : SLOTS - 1;
  memmove(&f->defs[1], &f->defs[0], (size_t)keep * sizeof f->defs[0]);
  f->defs[0] = name;
  f->ndefs = keep + 1;
  return SLOTS;
}

static uint64_t clampf(uint64_t v, uint64_t top) { return v > top ? top : v; }

static void put_location(ctf_writer *cw, wstream *w, uint8_t *b, size_t *n, uint64_t code)
{
  static const mpt_loc_entry unknown = { "<unknown>", "??", 1, 1, 1 };
  const mpt_location *l = cw->lookup(cw->u, code);
  const mpt_loc_entry *ents = l ? l->entries : NULL;
  uint32_t cnt = l ? l->n : 0;
  size_t worst = 9;
  for (uint32_t i = 0; i < cnt; i++)
    worst += 8 + strlen(ents[i].file ? ents[i].file : "") +
             strlen(ents[i].function ? ents[i].function : "");
  int reversed = 1;
  if (cnt > 255 || worst > 4096) { ents = &unknown; cnt = 1; reversed = 0; }
  put64(b, n, code);
  put8(b, n, (uint8_t)cnt);
  for (uint32_t k = 0; k < cnt; k++) {
    /* The model is innermost first; CTF records are outermost first. */
    const mpt_loc_entry *e = &ents[reversed ? cnt - 1 - k : k];
    const char *file = e->file ? e->file : "";
    const char *def = e->function ? e->function : "??";
    int fc = mtf_file(w, file);
    int dc = mtf_def(&w->files[0], def);
    uint64_t x = clampf(e->line, 0xFFFFF) | clampf(e->start_char, 0xFF) << 20 |
                 clampf(e->end_char, 0x3FF) << 28 | (uint64_t)fc << 38 | (uint64_t)dc << 43;
    put32(b, n, (uint32_t)x);
    put16(b, n, (uint16_t)(x >> 32));
    if (fc == SLOTS) putstr(b, n, file);
    if (dc == SLOTS) putstr(b, n, def);
  }
}

/* ---- packets ---- */

static void open_event_packet(ctf_writer *cw, wstream *w, int dummy)
{
  w->len = 0;
  if (dummy) {
    header(cw, w->pkt, &w->len, w->domain, 0xFFFF, 0, 0);
  } else {
    uint32_t ix = w->verify_ix;
    w->verify_ix = (ix + 5413) % NB;
    header(cw, w->pkt, &w->len, w->domain, (uint16_t)ix, w->next[ix], w->loc[ix]);
  }
}

/* v3: a new range of ids for [w] when its range is used up. */
static void take_ids(ctf_writer *cw, wstream *w)
{
  if (cw->info.version >= 3 && w->next_id >= w->range_end) {
    w->next_id = cw->next_range;
    w->range_end = cw->next_range += ID_RANGE;
  }
  w->first_id = w->next_id;
}

static void flush(ctf_writer *cw, wstream *w, uint64_t now)
{
  uint8_t *lp = cw->lpkt;
  size_t i = 0;
  while (i < w->npending) {
    size_t n = 0;
    header(cw, lp, &n, w->domain, 0xFFFF, 0, 0);
    while (i < w->npending && MAXP - n > 4096) {
      put32(lp, &n, (1u << 25) | (uint32_t)(w->t_start & LOW25));
      put_location(cw, w, lp, &n, w->pending[i]);
      i++;
    }
    finish_header(cw, lp, n, w->t_start, w->t_start, w->first_id, w->first_id);
    emit(cw, lp, n);
  }
  finish_header(cw, w->pkt, w->len, w->t_start, w->t_end, w->first_id, w->next_id);
  emit(cw, w->pkt, w->len);
  w->t_start = w->t_end = now;
  w->npending = 0;
  take_ids(cw, w);
  open_event_packet(cw, w, 0);
}

static void begin_event(ctf_writer *cw, wstream *w, unsigned kind, uint64_t now)
{
  if (MAXP - w->len < 4196 || w->npending > 128 || now - w->t_start > 30000000 ||
      (cw->info.version >= 3 && w->next_id >= w->range_end))
    flush(cw, w, now);
  w->t_end = now;
  w->order = ++cw->events;
  put32(w->pkt, &w->len, (kind << 25) | (uint32_t)(now & LOW25));
}

/* The stream of [domain] (version 2: the only one), created on first use. */
static wstream *stream(ctf_writer *cw, uint32_t domain)
{
  size_t k = cw->info.version >= 3 ? domain % MAX_STREAMS : 0;
  if (k >= cw->nstreams) {
    size_t old = cw->nstreams;
    grow_array((void **)&cw->streams, &cw->nstreams, k + 1, sizeof *cw->streams);
    memset(cw->streams + old, 0, (cw->nstreams - old) * sizeof *cw->streams);
  }
  wstream *w = cw->streams[k];
  if (w) return w;
  w = cw->streams[k] = xcalloc(1, sizeof *w);
  w->domain = (uint16_t)k;
  w->verify_ix = 4242;
  w->t_start = w->t_end = w->last_t = cw->info.start_us;
  take_ids(cw, w);
  open_event_packet(cw, w, 1);
  return w;
}

ctf_writer *ctf_writer_open(FILE *out, const ctf_winfo *info,
                            ctf_loc_lookup lookup, void *u)
{
  ctf_writer *w = xcalloc(1, sizeof *w);
  w->out = out;
  w->info = *info;
  if (w->info.version != 3) w->info.version = 2;
  w->lookup = lookup;
  w->u = u;
  uint8_t *b = w->lpkt;
  size_t n = 0;
  header(w, b, &n, info->initial_domain, 0xFFFF, 0, 0);
  put32(b, &n, (uint32_t)(info->start_us & LOW25));
  memcpy(b + n, &info->sample_rate, 8);    /* little-endian hosts */
  n += 8;
  put8(b, &n, (uint8_t)info->word_size_bits);
  /* Strings are cut so that packet 0 stays far below the 32 KiB limit. */
  const char *strs[3] = { info->executable, info->host, info->runtime_params };
  for (int k = 0; k < 4; k++) {
    if (k == 3) put64(b, &n, info->pid);
    const char *s = k < 3 ? strs[k] : info->context;
    size_t l = strnlen(s ? s : "", 4096);
    memcpy(b + n, s ? s : "", l);
    n += l;
    put8(b, &n, 0);
  }
  finish_header(w, b, n, info->start_us, info->start_us, 0, 0);
  emit(w, b, n);
  /* The initial domain's stream exists from the start (it takes the
     first id range), as in the reference writer. */
  stream(w, info->initial_domain);
  return w;
}

/* Times never go backwards: over the file in version 2, per stream in
   version 3. */
static uint64_t clamp_time(ctf_writer *cw, wstream *w, uint64_t t)
{
  wstream *c = cw->info.version >= 3 ? w : cw->streams[0];
  if (t < c->last_t) t = c->last_t;
  c->last_t = t;
  return t;
}

static void bucket_candidates(uint64_t x, uint32_t *h1, uint32_t *h2)
{
  const uint64_t m = (1ULL << 63) - 1;
  *h1 = (uint32_t)((((x * 0x4983723ULL) & m) >> 11) & (NB - 1));
  *h2 = (uint32_t)((((x * 0xFDEA731ULL) & m) >> 21) & (NB - 1));
}

static void emit_hit(wstream *w, uint32_t b, uint32_t n)
{
  if (n < 2) put16(w->pkt, &w->len, (uint16_t)(b << 2 | n));
  else { put16(w->pkt, &w->len, (uint16_t)(b << 2 | 2)); put8(w->pkt, &w->len, (uint8_t)n); }
}

/* Spec 9.7: returns the number of codewords written. */
static uint32_t encode_frames(wstream *w, uint64_t oid, const uint64_t *s, size_t m)
{
  size_t limit = w->len + 4096 - 10;
  uint32_t codewords = 0, p = 0, first = 0, n = 0, hit = 0;
  size_t i = 0;
  enum { A, HIT, B } state = A;
  for (;;) {
    if (state == A) {
      if (i == m || w->len > limit) return codewords;
      uint64_t x = s[i];
      uint32_t h1, h2;
      bucket_candidates(x, &h1, &h2);
      if (w->loc[h1] == x) { hit = h1; state = HIT; }
      else if (w->loc[h2] == x) { hit = h2; state = HIT; }
      else {
        uint32_t b = w->date[h1] < w->date[h2] ? h1 : h2;
        w->loc[b] = x;
        w->date[b] = oid;
        w->next[p] = (uint16_t)b;
        put16(w->pkt, &w->len, (uint16_t)(b << 2 | 3));
        put64(w->pkt, &w->len, x);
        grow_array((void **)&w->pending, &w->pending_cap, w->npending + 1, sizeof *w->pending);
        w->pending[w->npending++] = x;
        p = b; i++; codewords++;
      }
    } else if (state == HIT) {
      w->date[hit] = oid;
      w->next[p] = (uint16_t)hit;
      first = hit; p = hit; n = 0; i++; codewords++;
      state = B;
    } else {
      if (i == m || w->len + 2 > limit) { emit_hit(w, first, n); return codewords; }
      if (w->loc[w->next[p]] == s[i]) {
        if (n == 255) { emit_hit(w, first, 255); hit = w->next[p]; state = HIT; }
        else { p = w->next[p]; n++; i++; }
      } else {
        emit_hit(w, first, n);
        state = A;
      }
    }
  }
}

uint64_t ctf_writer_alloc(ctf_writer *cw, uint32_t domain, uint64_t t_us, uint64_t length,
                          uint32_t nsamples, int source,
                          const uint64_t *codes, uint32_t ncodes)
{
  wstream *w = stream(cw, domain);
  t_us = clamp_time(cw, w, t_us);
  size_t common = 0;
  while (common < ncodes && common < w->prev_len && codes[common] == w->prev[common])
    common++;
  /* An empty backtrace (an allocation made with no OCaml frame) may come
     as codes == NULL: no arithmetic or copy on it then. */
  size_t m = ncodes - common;
  const uint64_t *todo = m ? codes + common : NULL;
  if (ncodes) {
    grow_array((void **)&w->prev, &w->prev_cap, ncodes, sizeof *w->prev);
    memcpy(w->prev, codes, ncodes * sizeof *codes);
  }
  w->prev_len = ncodes;
  int is_short = length >= 1 && length <= 16 && source == 0 && nsamples == 1 && m < 256;
  begin_event(cw, w, is_short ? 100 + (unsigned)length : 2, t_us);
  uint64_t oid = w->next_id++;
  size_t count_at;
  if (is_short) {
    putvint(w->pkt, &w->len, (int64_t)common);
    count_at = w->len;
    put8(w->pkt, &w->len, 0);
  } else {
    putvint(w->pkt, &w->len, (int64_t)length);
    putvint(w->pkt, &w->len, nsamples);
    put8(w->pkt, &w->len, (uint8_t)source);
    putvint(w->pkt, &w->len, (int64_t)common);
    count_at = w->len;
    put16(w->pkt, &w->len, 0);
  }
  uint32_t cw_ = encode_frames(w, oid, todo, m);
  if (is_short) w->pkt[count_at] = (uint8_t)cw_;
  else { w->pkt[count_at] = (uint8_t)cw_; w->pkt[count_at + 1] = (uint8_t)(cw_ >> 8); }
  return oid;
}

static void mark(ctf_writer *cw, uint32_t domain, unsigned kind, uint64_t t_us, uint64_t id)
{
  wstream *w = stream(cw, domain);
  t_us = clamp_time(cw, w, t_us);
  begin_event(cw, w, kind, t_us);
  putvint(w->pkt, &w->len, (int64_t)(w->next_id - 1 - id));
}

void ctf_writer_promote(ctf_writer *w, uint32_t domain, uint64_t t_us, uint64_t id)
{ mark(w, domain, 3, t_us, id); }
void ctf_writer_collect(ctf_writer *w, uint32_t domain, uint64_t t_us, uint64_t id)
{ mark(w, domain, 4, t_us, id); }

int ctf_writer_close(ctf_writer *cw)
{
  /* Streams in the order of their latest event (each stream's is its last
     and t_end), so that the file ends with the latest event of all. */
  for (;;) {
    wstream *first = NULL;
    for (size_t k = 0; k < cw->nstreams; k++) {
      wstream *w = cw->streams[k];
      if (w && (!first || w->t_end < first->t_end ||
                (w->t_end == first->t_end && w->order < first->order)))
        first = w;
    }
    if (!first) break;
    flush(cw, first, first->t_end);
    cw->streams[first->domain] = NULL;
    free(first->prev);
    free(first->pending);
    free(first);
  }
  int rc = cw->io_error ? -1 : 0;
  free(cw->streams);
  free(cw);
  return rc;
}
