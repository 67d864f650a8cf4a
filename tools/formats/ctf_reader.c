/* ctf_reader.c: memtrace CTF (versions 1-3) -> mpt_event stream.

   Design
   - Input is read one packet at a time into a 32 KiB buffer (the format's
     packet limit), from a FILE* or from memory, so memory does not depend
     on the file size.
   - Decoder state is per domain (spec section 12): backtrace cache
     (loc/next, 16384 buckets), move-to-front file/definition tables, the
     previous backtrace and the last timestamp.  Domains are found by a
     linear search with a one-entry cache: files have one domain or a few.
   - Next to each bucket's CTF code we keep the code's dense location id,
     so a cache hit produces an id without a hash look-up; only misses
     (new codes) touch the code -> id map.
   - The backtrace lives in a per-domain buffer filled from its END: the
     k-th outermost frame is at buf[cap-1-k].  The common prefix with the
     previous backtrace is therefore already in place, new frames are
     appended below it, and the innermost-first array the event model wants
     is simply buf + cap - len.  No copy, no reversal.
   - Location names are interned in a string pool, so entries of the
     location table are stable pointers for the reader's lifetime.
   Every read is bounds-checked against the packet content; every spec
   reader check that can be made on the fly is made (section 15). */

#include "ctf_reader.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define NBUCKETS 16384
#define MTF_SLOTS 31
#define CODE_MASK 0x7FFFFFFFFFFFFFFFULL   /* readers keep 63 bits */

typedef struct {
  const char *name;                  /* NULL: empty slot */
  const char *defs[MTF_SLOTS];
} mtf_file;

typedef struct {
  uint16_t domain;
  uint64_t last_time;
  uint64_t loc[NBUCKETS];
  uint32_t locid[NBUCKETS];          /* 0: bucket never filled */
  uint16_t next[NBUCKETS];
  uint32_t *stack;                   /* frames stored from the end */
  uint32_t cap, prev_len;
  mtf_file files[MTF_SLOTS];
} dstate;

typedef struct {
  mpt_location loc;
  int defined;
} locrec;

struct ctf_reader {
  FILE *f;
  const uint8_t *mem;
  size_t mem_len, mem_pos;
  uint64_t consumed, total;

  ctf_header hdr;
  ctf_stats stats;
  strpool *names;
  char err[256];
  int failed, truncated, ended;
  int follow;                        /* ctf_reader_follow */

  /* locations: id -> record, code -> id */
  locrec *locs;
  size_t nlocs, locs_cap;
  u64map codes;

  dstate **doms;
  size_t ndoms;
  dstate *cur_dom;

  /* current packet */
  uint8_t buf[CTF_MAX_PACKET];
  size_t pos, end;                   /* content cursor within buf */
  uint64_t tb, te, id_begin, id_end, cursor;
  uint64_t events_in_packet, non_loc_events;
};

static int fail(ctf_reader *r, const char *fmt, ...)
{
  if (!r->failed) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, sizeof r->err, fmt, ap);
    va_end(ap);
    r->failed = 1;
  }
  return CTF_ERR;
}

static inline uint16_t rd16(const uint8_t *p)
{ return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t rd32(const uint8_t *p)
{ return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
         ((uint32_t)p[3] << 24); }
static inline uint64_t rd64(const uint8_t *p)
{ return (uint64_t)rd32(p) | ((uint64_t)rd32(p + 4) << 32); }

/* Read up to n bytes from the input; returns the count actually read. */
static size_t input_read(ctf_reader *r, uint8_t *dst, size_t n)
{
  size_t got;
  if (r->f) {
    got = fread(dst, 1, n, r->f);
  } else {
    size_t left = r->mem_len - r->mem_pos;
    got = n < left ? n : left;
    memcpy(dst, r->mem + r->mem_pos, got);
    r->mem_pos += got;
  }
  r->consumed += got;
  return got;
}

int ctf_probe(const uint8_t *p, size_t n)
{
  return n >= 4 && rd32(p) == CTF_MAGIC;
}

/* ---- locations ---- */

static uint32_t loc_id_of_code(ctf_reader *r, uint64_t code)
{
  uint32_t *v = u64map_get(&r->codes, code);
  if (v) return *v;
  grow_array((void **)&r->locs, &r->locs_cap, r->nlocs + 2, sizeof *r->locs);
  if (r->nlocs == 0) r->nlocs = 1;                  /* id 0 is unused */
  uint32_t id = (uint32_t)r->nlocs++;
  locrec *l = &r->locs[id];
  memset(l, 0, sizeof *l);
  l->loc.address = code;
  u64map_put(&r->codes, code, id);
  return id;
}

/* ---- domains ---- */

static dstate *domain_state(ctf_reader *r, uint16_t domain)
{
  if (r->cur_dom && r->cur_dom->domain == domain) return r->cur_dom;
  for (size_t i = 0; i < r->ndoms; i++)
    if (r->doms[i]->domain == domain) return r->cur_dom = r->doms[i];
  if (r->ndoms >= CTF_MAX_DOMAINS) return NULL;
  dstate *d = xcalloc(1, sizeof *d);
  d->domain = domain;
  d->last_time = r->hdr.start_us;
  d->cap = 1024;
  d->stack = xmalloc(d->cap * sizeof *d->stack);
  r->doms = xrealloc(r->doms, (r->ndoms + 1) * sizeof *r->doms);
  r->doms[r->ndoms++] = d;
  return r->cur_dom = d;
}

/* ---- packet reading ---- */

/* Reads the next packet header and content into r->buf.  Returns 1 on a
   packet, 0 at a clean or truncated end, -1 on error.  *hlen gets the
   header length and ver, dom, pid the header fields. */
static int cut_packet(ctf_reader *r, uint64_t start);

static int read_packet(ctf_reader *r, size_t *hlen, int *ver, uint16_t *dom,
                       uint64_t *pid)
{
  uint64_t start = r->consumed;
  size_t got = input_read(r, r->buf, 30);
  if (got == 0) return cut_packet(r, start);
  if (got < 30) return cut_packet(r, start);
  if (rd32(r->buf) != CTF_MAGIC)
    return fail(r, "not a CTF packet at byte %llu",
                (unsigned long long)(r->consumed - got));
  int v = rd16(r->buf + 28);
  if (v < 1 || v > 3)
    return fail(r, "unsupported trace format version %d", v);
  size_t h = v == 3 ? 68 : 66;
  got = input_read(r, r->buf + 30, h - 30);
  if (got < h - 30) return cut_packet(r, start);
  int32_t bits = (int32_t)rd32(r->buf + 4);
  if (bits < 0) return fail(r, "bad packet size %d", bits);
  size_t bytes = (size_t)bits / 8;
  if (bytes < h) return fail(r, "packet size %zu smaller than its header", bytes);
  if (bytes > CTF_MAX_PACKET)
    return fail(r, "packet of %zu bytes exceeds the 32768-byte limit", bytes);
  got = input_read(r, r->buf + h, bytes - h);
  if (got < bytes - h) return cut_packet(r, start);
  *hlen = h;
  *ver = v;
  *pid = rd64(r->buf + 30);
  *dom = v == 3 ? rd16(r->buf + 38) : 0;
  r->tb = rd64(r->buf + 8);
  r->te = rd64(r->buf + 16);
  r->pos = h;
  r->end = bytes;
  r->stats.packets++;
  if (bytes > r->stats.largest_packet) r->stats.largest_packet = bytes;
  if (r->tb > r->te) return fail(r, "packet timestamps not monotone");
  return 1;
}

/* The input ended inside the packet starting at byte [start] (or right
   before it): truncation, or, when following a file being written, a
   packet still being written: rewind to its start for a later attempt.
   Returns 0 (the end, for now). */
static int cut_packet(ctf_reader *r, uint64_t start)
{
  if (r->follow && r->f) {
    clearerr(r->f);
    if (fseeko(r->f, (off_t)start, SEEK_SET) == 0) { r->consumed = start; return 0; }
  }
  if (r->consumed > start) r->truncated = 1;
  return 0;
}

/* ---- bounded cursor helpers on the current packet ---- */

#define NEED(n) do { if (r->end - r->pos < (size_t)(n)) \
  return fail(r, "event runs past the end of its packet"); } while (0)

static int read_vint(ctf_reader *r, int64_t *out)
{
  NEED(1);
  uint8_t t = r->buf[r->pos++];
  if (t <= 252) { *out = t; return 0; }
  if (t == 253) { NEED(2); *out = rd16(r->buf + r->pos); r->pos += 2; }
  else if (t == 254) { NEED(4); *out = (int32_t)rd32(r->buf + r->pos); r->pos += 4; }
  else { NEED(8); *out = (int64_t)rd64(r->buf + r->pos); r->pos += 8; }
  return 0;
}

static int read_string(ctf_reader *r, const char **out)
{
  const uint8_t *s = r->buf + r->pos;
  const uint8_t *z = memchr(s, 0, r->end - r->pos);
  if (!z) return fail(r, "unterminated string in packet");
  *out = strpool_get(r->names,
                     strpool_intern(r->names, (const char *)s, (size_t)(z - s)));
  r->pos += (size_t)(z - s) + 1;
  return 0;
}

/* Reconstruct the full time of an event whose header word is W. */
static int event_time(ctf_reader *r, uint32_t w, uint64_t *t)
{
  uint64_t low = w & 0x1FFFFFFu;
  uint64_t base = r->tb & ~(uint64_t)0x1FFFFFF;
  uint64_t l0 = r->tb & 0x1FFFFFF;
  *t = low >= l0 ? base + low : base + low + (1ULL << 25);
  if (*t < r->tb || *t > r->te) return fail(r, "event time outside its packet bounds");
  return 0;
}

static int read_trace_info(ctf_reader *r, int version)
{
  NEED(4);
  uint32_t w = rd32(r->buf + r->pos);
  r->pos += 4;
  if ((w >> 25) != 0) return fail(r, "first packet does not hold the trace info");
  uint64_t t;
  if (event_time(r, w, &t) < 0) return CTF_ERR;
  if (t != r->tb) return fail(r, "trace info time differs from its packet");
  NEED(9);
  memcpy(&r->hdr.sample_rate, r->buf + r->pos, 8);   /* LE hosts only */
  r->hdr.word_size = r->buf[r->pos + 8];
  r->pos += 9;
  if (read_string(r, &r->hdr.executable) < 0 || read_string(r, &r->hdr.host) < 0 ||
      read_string(r, &r->hdr.runtime_params) < 0) return CTF_ERR;
  NEED(8);
  r->hdr.pid = rd64(r->buf + r->pos);
  r->pos += 8;
  r->hdr.context = "";
  if (version >= 2 && read_string(r, &r->hdr.context) < 0) return CTF_ERR;
  if (r->pos != r->end) return fail(r, "trailing bytes after the trace info");
  if (!(r->hdr.sample_rate > 0) || !isfinite(r->hdr.sample_rate) || r->hdr.sample_rate > 1)
    return fail(r, "bad sample rate %g", r->hdr.sample_rate);
  if (r->hdr.word_size != 32 && r->hdr.word_size != 64)
    return fail(r, "bad word size %u", r->hdr.word_size);
  return 0;
}

static ctf_reader *open_common(ctf_reader *r, char *err, size_t errlen)
{
  r->names = strpool_new();
  u64map_init(&r->codes, 1024);
  size_t h; int v; uint16_t dom; uint64_t pid;
  int k = read_packet(r, &h, &v, &dom, &pid);
  if (k > 0 && read_trace_info(r, v) < 0) k = -1;
  if (k <= 0) {
    if (!r->failed)
      snprintf(r->err, sizeof r->err, "truncated header: the file ends inside the memtrace trace-info packet");
    snprintf(err, errlen, "%s", r->err);
    ctf_reader_close(r);
    return NULL;
  }
  r->hdr.version = v;
  r->hdr.start_us = r->tb;
  r->hdr.initial_domain = dom;
  (void)pid;
  r->pos = r->end = 0;            /* no current data packet */
  return r;
}

ctf_reader *ctf_reader_open(const char *path, char *err, size_t errlen)
{
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return NULL;
  }
  ctf_reader *r = xcalloc(1, sizeof *r);
  r->f = f;
  setvbuf(f, NULL, _IOFBF, 1 << 16);
  if (fseek(f, 0, SEEK_END) == 0) {
    long sz = ftell(f);
    if (sz > 0) r->total = (uint64_t)sz;
    rewind(f);
  }
  return open_common(r, err, errlen);
}

ctf_reader *ctf_reader_open_mem(const uint8_t *data, size_t len,
                                char *err, size_t errlen)
{
  ctf_reader *r = xcalloc(1, sizeof *r);
  r->mem = data;
  r->mem_len = len;
  r->total = len;
  return open_common(r, err, errlen);
}

/* ---- events ---- */

static int read_location(ctf_reader *r, dstate *d)
{
  NEED(9);
  uint64_t code = rd64(r->buf + r->pos) & CODE_MASK;
  unsigned n = r->buf[r->pos + 8];
  r->pos += 9;
  mpt_loc_entry tmp[255];
  for (unsigned i = 0; i < n; i++) {
    NEED(6);
    uint64_t x = (uint64_t)rd32(r->buf + r->pos) |
                 ((uint64_t)rd16(r->buf + r->pos + 4) << 32);
    r->pos += 6;
    unsigned fc = (unsigned)(x >> 38) & 31, dc = (unsigned)(x >> 43) & 31;
    mtf_file *ft = d->files;
    if (fc == 31) {
      const char *name;
      if (read_string(r, &name) < 0) return CTF_ERR;
      mtf_file nf;
      if (ft[30].name) memcpy(nf.defs, ft[30].defs, sizeof nf.defs);
      else memset(nf.defs, 0, sizeof nf.defs);
      nf.name = name;
      memmove(&ft[1], &ft[0], 30 * sizeof *ft);
      ft[0] = nf;
    } else {
      if (!ft[fc].name) return fail(r, "location names an empty file slot");
      mtf_file e = ft[fc];
      memmove(&ft[1], &ft[0], fc * sizeof *ft);
      ft[0] = e;
    }
    const char **dt = ft[0].defs;
    const char *def;
    if (dc == 31) {
      if (read_string(r, &def) < 0) return CTF_ERR;
      memmove(&dt[1], &dt[0], 30 * sizeof *dt);
      dt[0] = def;
    } else {
      if (!dt[dc]) return fail(r, "location names an empty definition slot");
      def = dt[dc];
      memmove(&dt[1], &dt[0], dc * sizeof *dt);
      dt[0] = def;
    }
    /* CTF records are outermost first; the model is innermost first. */
    mpt_loc_entry *e = &tmp[n - 1 - i];
    e->file = ft[0].name;
    e->function = def;
    e->line = (uint32_t)(x & 0xFFFFF);
    e->start_char = (uint32_t)(x >> 20) & 0xFF;
    e->end_char = (uint32_t)(x >> 28) & 0x3FF;
  }
  uint32_t id = loc_id_of_code(r, code);
  locrec *l = &r->locs[id];
  if (l->defined) {
    int same = l->loc.n == n;
    for (unsigned i = 0; same && i < n; i++) {
      const mpt_loc_entry *a = &l->loc.entries[i], *b = &tmp[i];
      same = a->file == b->file && a->function == b->function &&
             a->line == b->line && a->start_char == b->start_char &&
             a->end_char == b->end_char;
    }
    if (!same)
      return fail(r, "inconsistent location info for code 0x%llx",
                  (unsigned long long)code);
  } else {
    mpt_loc_entry *ents = NULL;
    if (n) {
      ents = xmalloc(n * sizeof *ents);
      memcpy(ents, tmp, n * sizeof *ents);
    }
    l->loc.entries = ents;
    l->loc.n = n;
    l->defined = 1;
  }
  r->stats.location_events++;
  return 0;
}

static int grow_stack(dstate *d)
{
  if (d->cap >= CTF_MAX_FRAMES) return -1;
  uint32_t ncap = d->cap * 2;
  uint32_t *ns = xmalloc((size_t)ncap * sizeof *ns);
  memcpy(ns + (ncap - d->cap), d->stack, (size_t)d->cap * sizeof *ns);
  free(d->stack);
  d->stack = ns;
  d->cap = ncap;
  return 0;
}

/* Decode [ncodes] codewords (spec 9.4) into d's backtrace buffer. */
static int read_backtrace(ctf_reader *r, dstate *d, uint64_t c, unsigned ncodes,
                          mpt_event *ev)
{
  int keep = c <= d->prev_len;
  uint32_t len = (uint32_t)(keep ? c : 0);
  uint32_t p = 0;
  const uint8_t *buf = r->buf;
  for (unsigned k = 0; k < ncodes; k++) {
    NEED(2);
    uint32_t cw = rd16(buf + r->pos);
    r->pos += 2;
    uint32_t b = cw >> 2, tag = cw & 3, n = 0;
    d->next[p] = (uint16_t)b;
    if (tag == 3) {
      NEED(8);
      uint64_t v = rd64(buf + r->pos) & CODE_MASK;
      r->pos += 8;
      d->loc[b] = v;
      d->locid[b] = loc_id_of_code(r, v);
    } else if (tag == 2) {
      NEED(1);
      n = buf[r->pos++];
    } else {
      n = tag;
    }
    p = b;
    for (uint32_t j = 0;; j++) {
      uint32_t id = d->locid[p];
      if (id == 0) return fail(r, "backtrace uses an empty cache bucket");
      if (keep) {
        if (len >= d->cap && grow_stack(d) < 0)
          return fail(r, "backtrace longer than %u frames", CTF_MAX_FRAMES);
        d->stack[d->cap - 1 - len] = id;
        len++;
      }
      if (j == n) break;
      p = d->next[p];
    }
  }
  if (keep) d->prev_len = len;
  if (d->prev_len > r->stats.max_backtrace) r->stats.max_backtrace = d->prev_len;
  ev->stack = d->stack + (d->cap - d->prev_len);
  ev->stack_len = d->prev_len;
  return 0;
}

/* Start the next data packet.  Returns 1, 0 (end) or -1. */
static int next_packet(ctf_reader *r)
{
  for (;;) {
    size_t h; int v; uint16_t dom; uint64_t pid;
    int k = read_packet(r, &h, &v, &dom, &pid);
    if (k <= 0) return k;
    r->id_begin = rd64(r->buf + h - 16);
    r->id_end = rd64(r->buf + h - 8);
    if (r->id_begin > r->id_end) return fail(r, "packet alloc ids not monotone");
    if (pid != r->hdr.pid) {          /* a forked child's packet: skip */
      r->stats.skipped_packets++;
      continue;
    }
    dstate *d = domain_state(r, dom);
    if (!d) return fail(r, "more than %d domains", CTF_MAX_DOMAINS);
    size_t vo = h - 28;
    uint16_t vix = rd16(r->buf + vo);
    if (vix != 0xFFFF) {
      if (vix >= NBUCKETS || d->next[vix] != rd16(r->buf + vo + 2) ||
          d->loc[vix] != (rd64(r->buf + vo + 4) & CODE_MASK))
        return fail(r, "cache verification failed");
      r->stats.verified_packets++;
    }
    r->cursor = r->id_begin;
    r->events_in_packet = r->non_loc_events = 0;
    return 1;
  }
}

static int finish_packet(ctf_reader *r)
{
  if (r->cursor != r->id_end) return fail(r, "alloc id sync: packet count differs");
  if (r->events_in_packet && !r->non_loc_events) r->stats.location_packets++;
  return 0;
}

int ctf_reader_next(ctf_reader *r, mpt_event *ev)
{
  if (r->failed) return CTF_ERR;
  if (r->ended) return CTF_END;
  for (;;) {
    if (r->pos >= r->end) {
      if (r->end && finish_packet(r) < 0) return CTF_ERR;
      int k = next_packet(r);
      if (k < 0) return CTF_ERR;
      if (k == 0) { r->ended = !r->follow; r->pos = r->end = 0; return CTF_END; }
      continue;
    }
    dstate *d = r->cur_dom;
    NEED(4);
    uint32_t w = rd32(r->buf + r->pos);
    r->pos += 4;
    uint64_t t;
    if (event_time(r, w, &t) < 0) return CTF_ERR;
    if ((w >> 25) == 0 && r->id_begin == 0 && r->id_end == 0)
      return fail(r, "a second trace-info packet: the file holds concatenated traces;"
                  " give each trace its own file");
    if (t < d->last_time) return fail(r, "event timestamps not monotone");
    if (t - r->hdr.start_us > UINT64_MAX / 1000)
      return fail(r, "event time too far from the trace start");
    d->last_time = t;
    r->events_in_packet++;
    unsigned type = w >> 25;
    ev->stream = d->domain;
    ev->time_ns = (t - r->hdr.start_us) * 1000;
    if (type == 1) {
      if (read_location(r, d) < 0) return CTF_ERR;
      continue;
    }
    r->non_loc_events++;
    if (type == 2 || (type >= 101 && type <= 116)) {
      int64_t len, ns = 1, c;
      unsigned src = 0, ncodes;
      if (type == 2) {
        if (read_vint(r, &len) < 0 || read_vint(r, &ns) < 0) return CTF_ERR;
        NEED(1);
        src = r->buf[r->pos++];
        if (read_vint(r, &c) < 0) return CTF_ERR;
        NEED(2);
        ncodes = rd16(r->buf + r->pos);
        r->pos += 2;
      } else {
        len = type - 100;
        if (read_vint(r, &c) < 0) return CTF_ERR;
        NEED(1);
        ncodes = r->buf[r->pos++];
      }
      if (src > 2) return fail(r, "bad allocation source %u", src);
      if (len < 0 || len > (1LL << 54)) return fail(r, "bad block length %lld", (long long)len);
      if (ns < 1 || ns > UINT32_MAX) return fail(r, "bad sample count %lld", (long long)ns);
      if (c < 0) return fail(r, "negative common prefix");
      if (read_backtrace(r, d, (uint64_t)c, ncodes, ev) < 0) return CTF_ERR;
      ev->kind = MPT_EV_ALLOC;
      ev->id = r->cursor++;
      if (r->cursor > r->id_end) return fail(r, "alloc id sync: more allocations than the packet declares");
      ev->wosize = (uint64_t)len;
      ev->nsamples = (uint32_t)ns;
      ev->source = src == 0 ? MPT_SRC_MINOR : src == 1 ? MPT_SRC_MAJOR : MPT_SRC_CUSTOM;
      return CTF_OK;
    }
    if (type == 3 || type == 4) {
      int64_t delta;
      if (read_vint(r, &delta) < 0) return CTF_ERR;
      if (type == 3 && delta < 0) return fail(r, "promote id sync: negative delta");
      ev->kind = type == 3 ? MPT_EV_PROMOTE : MPT_EV_COLLECT;
      ev->id = r->cursor - 1 - (uint64_t)delta;
      ev->stack_len = 0;
      ev->stack = NULL;
      return CTF_OK;
    }
    if (type == 0) return fail(r, "multiple trace-info events present");
    return fail(r, "unknown event code %u", type);
  }
}

const ctf_header *ctf_reader_header(const ctf_reader *r) { return &r->hdr; }
const ctf_stats *ctf_reader_stats(const ctf_reader *r) { return &r->stats; }
uint32_t ctf_reader_location_count(const ctf_reader *r)
{ return r->nlocs ? (uint32_t)r->nlocs - 1 : 0; }

const mpt_location *ctf_reader_location(const ctf_reader *r, uint32_t id)
{
  return id >= 1 && id < r->nlocs ? &r->locs[id].loc : NULL;
}

const char *ctf_reader_error(const ctf_reader *r) { return r->err; }
int ctf_reader_truncated(const ctf_reader *r) { return r->truncated; }
void ctf_reader_follow(ctf_reader *r, int on) { r->follow = on; }

void ctf_reader_progress(const ctf_reader *r, uint64_t *done, uint64_t *total)
{
  *done = r->consumed;
  *total = r->total;
}

void ctf_reader_close(ctf_reader *r)
{
  if (!r) return;
  if (r->f) fclose(r->f);
  for (size_t i = 1; i < r->nlocs; i++) free((void *)r->locs[i].loc.entries);
  free(r->locs);
  if (r->codes.e) u64map_free(&r->codes);
  for (size_t i = 0; i < r->ndoms; i++) { free(r->doms[i]->stack); free(r->doms[i]); }
  free(r->doms);
  strpool_free(r->names);
  free(r);
}
