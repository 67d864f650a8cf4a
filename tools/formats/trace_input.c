/* trace_input.c: format detection and dispatch to the two decoders.

   A ti_trace is a tagged union of an mpt_reader (the shared codec, which
   owns our format; we never decode it ourselves) and a ctf_reader.  The
   header of either is copied into one ti_header at open time so callers
   see a single description of the trace.  The magic is sniffed from the
   first 8 bytes; the file is then opened by the chosen decoder, which
   reads it from the beginning. */

#include "trace_input.h"

#include <errno.h>
#include <lz4frame.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ctf_reader.h"
#include "util.h"

struct ti_trace {
  ti_format format;
  mpt_reader *mpt;
  ctf_reader *ctf;
  ti_header hdr;
  uint64_t size;
  char *path;                   /* or data/len for ti_open_mem */
  const uint8_t *data;
  size_t len;
  int after_end;                /* a second trace follows the first */
  int have_id;                  /* dev, ino: the file opened (ti_file_change) */
  dev_t dev;
  ino_t ino;
  char err[160];
};

static const uint8_t lz4_magic[4] = { 0x04, 0x22, 0x4D, 0x18 };

static int is_memprof(const uint8_t *p, size_t n)
{
  return (n >= 4 && memcmp(p, lz4_magic, 4) == 0) ||
         (n >= MPT_MAGIC_LEN && memcmp(p, MPT_MAGIC, MPT_MAGIC_LEN) == 0);
}

/* Which format do the first [n] bytes announce?  Returns the format, or
   0 after writing the reason in [err]: an empty file, a file cut inside a
   magic number (truncated header), or a foreign file. */
static int sniff(const uint8_t *p, size_t n, char *err, size_t errlen)
{
  static const uint8_t ctf_magic[4] = { 0xC1, 0x1F, 0xFC, 0xC1 };
  if (is_memprof(p, n)) return TI_FORMAT_MEMPROF;
  if (ctf_probe(p, n)) return TI_FORMAT_CTF;
  if (n == 0) snprintf(err, errlen, "empty file (no trace header)");
  else if ((n < 4 && (!memcmp(p, lz4_magic, n) || !memcmp(p, ctf_magic, n))) ||
           (n < MPT_MAGIC_LEN && !memcmp(p, MPT_MAGIC, n)))
    snprintf(err, errlen, "truncated header: the file ends inside the magic number");
  else snprintf(err, errlen, "not a trace (neither the 5.3.0+memprof format nor memtrace CTF)");
  return 0;
}

/* "PATH: message" for an error of a reader that does not name the file. */
static void name_error(const char *path, char *err, size_t errlen)
{
  size_t k = strlen(path);
  if (!strncmp(err, path, k) && err[k] == ':') return;
  char tmp[512];
  snprintf(tmp, sizeof tmp, "%s", err);
  snprintf(err, errlen, "%s: %s", path, tmp);
}

static void fill_from_mpt(ti_trace *t)
{
  const mpt_trace_info *i = mpt_reader_info(t->mpt);
  ti_header *h = &t->hdr;
  h->format = TI_FORMAT_MEMPROF;
  h->version = (int)i->format_version;
  h->sampling_rate = i->sampling_rate;
  h->word_bytes = i->word_size / 8 ? i->word_size / 8 : 8;
  h->flags = i->flags;
  h->pid = i->pid;
  h->ppid = i->ppid;
  h->start_wall_ns = i->start_wall_ns;
  h->executable = i->executable ? i->executable : "";
  h->hostname = i->hostname ? i->hostname : "";
  h->ocaml_version = i->ocaml_version ? i->ocaml_version : "";
  h->command_line = i->command_line ? i->command_line : "";
  h->runtime_params = "";
  h->context = "";
}

static void fill_from_ctf(ti_trace *t)
{
  const ctf_header *c = ctf_reader_header(t->ctf);
  ti_header *h = &t->hdr;
  h->format = TI_FORMAT_CTF;
  h->version = c->version;
  h->sampling_rate = c->sample_rate;
  h->word_bytes = c->word_size / 8;
  h->pid = c->pid;
  h->start_wall_ns = c->start_us * 1000;
  h->executable = c->executable;
  h->hostname = c->host;
  h->ocaml_version = "";
  h->command_line = "";
  h->runtime_params = c->runtime_params;
  h->context = c->context;
  h->initial_domain = c->initial_domain;
}

/* Common checks on the header the analyses divide by. */
static ti_trace *finish_open(ti_trace *t, char *err, size_t errlen)
{
  if (t->format == TI_FORMAT_MEMPROF) fill_from_mpt(t);
  else fill_from_ctf(t);
  /* A 5.x+memprof trace of heap snapshots only has rate 0 (no samples). */
  double min_rate = t->format == TI_FORMAT_MEMPROF ? 0 : 0x1p-1074;
  if (!(t->hdr.sampling_rate >= min_rate && t->hdr.sampling_rate <= 1)) {
    snprintf(err, errlen, "trace header has an invalid sampling rate %g",
             t->hdr.sampling_rate);
    ti_close(t);
    return NULL;
  }
  return t;
}

ti_trace *ti_open(const char *path, char *err, size_t errlen)
{
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return NULL;
  }
  uint8_t m[8];
  size_t n = fread(m, 1, sizeof m, f);
  if (ferror(f)) {                  /* EISDIR for a directory */
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    fclose(f);
    return NULL;
  }
  uint64_t size = 0;
  if (fseek(f, 0, SEEK_END) == 0) {
    long sz = ftell(f);
    if (sz > 0) size = (uint64_t)sz;
  }
  /* The decoder opens the path again just below: the identity is that of
     the file sniffed, which it is unless the path changed in between. */
  struct stat st;
  int have_id = fstat(fileno(f), &st) == 0;
  fclose(f);
  int fmt = sniff(m, n, err, errlen);
  if (!fmt) { name_error(path, err, errlen); return NULL; }
  ti_trace *t = xcalloc(1, sizeof *t);
  t->size = size;
  t->path = xstrdup(path);
  t->format = (ti_format)fmt;
  t->have_id = have_id;
  if (have_id) { t->dev = st.st_dev; t->ino = st.st_ino; }
  if (fmt == TI_FORMAT_MEMPROF) t->mpt = mpt_reader_open(path, err, errlen);
  else t->ctf = ctf_reader_open(path, err, errlen);
  if (!t->mpt && !t->ctf) { free(t->path); free(t); name_error(path, err, errlen); return NULL; }
  t = finish_open(t, err, errlen);
  if (!t) name_error(path, err, errlen);
  return t;
}

ti_trace *ti_open_mem(const uint8_t *data, size_t len, char *err, size_t errlen)
{
  int fmt = sniff(data, len, err, errlen);
  if (!fmt) return NULL;
  ti_trace *t = xcalloc(1, sizeof *t);
  t->size = len;
  t->data = data;
  t->len = len;
  t->format = (ti_format)fmt;
  if (fmt == TI_FORMAT_MEMPROF) t->mpt = mpt_reader_open_mem(data, len, err, errlen);
  else t->ctf = ctf_reader_open_mem(data, len, err, errlen);
  if (!t->mpt && !t->ctf) { free(t); return NULL; }
  return finish_open(t, err, errlen);
}

const ti_header *ti_get_header(const ti_trace *t) { return &t->hdr; }

/* ---- concatenated traces ----
   The codec stops at a trace's END chunk, so a file holding several traces
   (`cat a.trace b.trace`) would silently read as its first one.  Once a
   trace has ended cleanly, count the traces in the file: raw files by
   walking the chunk headers, LZ4 files by walking the frames and decoding
   the start of each (a trace starts a frame with its magic).  More than
   one is an error. */

static int rd_at(FILE *f, uint64_t off, uint8_t *b, size_t n)
{
  return fseeko(f, (off_t)off, SEEK_SET) == 0 && fread(b, 1, n, f) == n;
}

static uint32_t le32(const uint8_t *p)
{ return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

/* Does the LZ4 frame at [off] decode to content starting with the magic?
   Sets *next to the frame's end.  -1 when [off] holds no valid frame. */
static int lz4_frame_starts_trace(FILE *f, uint64_t off, uint64_t *next)
{
  uint8_t h[19];
  if (!rd_at(f, off, h, 7) || memcmp(h, lz4_magic, 4)) return -1;
  uint8_t flg = h[4];
  size_t hl = 7 + (flg & 8 ? 8 : 0) + (flg & 1 ? 4 : 0);
  uint64_t p = off + hl;
  size_t first_block = 0;
  for (int b = 0;; b++) {
    uint8_t w[4];
    if (!rd_at(f, p, w, 4)) return -1;
    uint32_t bs = le32(w);
    p += 4;
    if (bs == 0) break;
    if (b == 0) first_block = (size_t)(p - off) + (bs & 0x7FFFFFFFu) + (flg & 16 ? 4 : 0);
    p += (bs & 0x7FFFFFFFu) + (flg & 16 ? 4 : 0);
    if (p > ((uint64_t)1 << 62)) return -1;
  }
  *next = p + (flg & 4 ? 4 : 0);
  if (!first_block || first_block > (8u << 20)) return 0;
  uint8_t *in = malloc(first_block), out[MPT_MAGIC_LEN];
  int starts = 0;
  LZ4F_dctx *dc = NULL;
  if (in && rd_at(f, off, in, first_block) &&
      !LZ4F_isError(LZ4F_createDecompressionContext(&dc, LZ4F_VERSION))) {
    size_t dst = sizeof out, src = first_block;
    size_t r = LZ4F_decompress(dc, out, &dst, in, &src, NULL);
    starts = !LZ4F_isError(r) && dst == MPT_MAGIC_LEN && !memcmp(out, MPT_MAGIC, MPT_MAGIC_LEN);
  }
  if (dc) LZ4F_freeDecompressionContext(dc);
  free(in);
  return starts;
}

/* 1 when something other than the end of the file follows the first
   trace's END chunk (said in t->err). */
static int check_after_end(ti_trace *t)
{
  /* The check reads the file at the path: not the one decoded when that
     has been deleted, replaced or truncated since (top --follow). */
  if (t->path && ti_file_change(t) != TI_FILE_SAME) return 0;
  FILE *f = t->path ? fopen(t->path, "rb") : fmemopen((void *)t->data, t->len, "rb");
  if (!f) return 0;
  uint8_t b[MPT_MAGIC_LEN];
  int traces = 0, junk = 0;
  if (t->hdr.flags & MPT_FLAG_COMPRESSED) {
    uint64_t off = 0, next;
    int k;
    while ((k = lz4_frame_starts_trace(f, off, &next)) >= 0) {
      traces += k;
      off = next;
    }
    junk = rd_at(f, off, b, 1);
  } else {
    uint64_t off = MPT_MAGIC_LEN;
    traces = 1;
    for (;;) {
      uint8_t h[MPT_CHUNK_HEADER_BYTES];
      if (!rd_at(f, off, h, sizeof h)) { junk = 0; break; }
      if (!memcmp(h, MPT_MAGIC, MPT_MAGIC_LEN)) { traces++; off += MPT_MAGIC_LEN; continue; }
      if (h[4] < MPT_CHUNK_HEADER || h[4] > MPT_CHUNK_SNAPSHOT) { junk = 1; break; }
      off += MPT_CHUNK_HEADER_BYTES + le32(h);
    }
  }
  fclose(f);
  if (traces > 1)
    snprintf(t->err, sizeof t->err, "the file holds %d concatenated traces; give each"
             " trace its own file (memprof=PATH with %%p)", traces);
  else if (junk)
    snprintf(t->err, sizeof t->err, "unexpected bytes after the end of the trace");
  return traces > 1 || junk;
}

int ti_next(ti_trace *t, mpt_event *ev)
{
  if (t->after_end) return TI_ERR;
  if (t->mpt) {
    int k = mpt_reader_next(t->mpt, ev);
    uint64_t e, n, l;
    if (k == MPT_END && mpt_reader_end_info(t->mpt, &e, &n, &l) && check_after_end(t)) {
      t->after_end = 1;
      return TI_ERR;
    }
    return k == MPT_OK ? TI_OK : k == MPT_END ? TI_END : TI_ERR;
  }
  int k = ctf_reader_next(t->ctf, ev);
  return k == CTF_OK ? TI_OK : k == CTF_END ? TI_END : TI_ERR;
}

uint32_t ti_location_count(const ti_trace *t)
{
  return t->mpt ? mpt_reader_location_count(t->mpt)
                : ctf_reader_location_count(t->ctf);
}

const mpt_location *ti_location(const ti_trace *t, uint32_t id)
{
  return t->mpt ? mpt_reader_location(t->mpt, id)
                : ctf_reader_location(t->ctf, id);
}

const char *ti_error(const ti_trace *t)
{
  if (t->after_end) return t->err;
  return t->mpt ? mpt_reader_error(t->mpt) : ctf_reader_error(t->ctf);
}

int ti_truncated(const ti_trace *t)
{
  return t->mpt ? mpt_reader_truncated(t->mpt) : ctf_reader_truncated(t->ctf);
}

int ti_end_info(const ti_trace *t, uint64_t *end_time_ns,
                uint64_t *total_samples, uint64_t *lost_samples)
{
  if (!t->mpt) return 0;
  return mpt_reader_end_info(t->mpt, end_time_ns, total_samples, lost_samples);
}

void ti_progress(ti_trace *t, uint64_t *done, uint64_t *total)
{
  if (t->ctf) { ctf_reader_progress(t->ctf, done, total); return; }
  *done = mpt_reader_bytes_read(t->mpt);
  *total = t->size;
  if (*done > *total) *done = *total;
}

uint64_t ti_bytes_read(const ti_trace *t)
{
  uint64_t done, total;
  if (t->ctf) { ctf_reader_progress(t->ctf, &done, &total); return done; }
  return mpt_reader_bytes_read(t->mpt);
}

ti_file_change_kind ti_file_change(const ti_trace *t)
{
  struct stat st;
  if (!t->path || !t->have_id) return TI_FILE_SAME;
  if (stat(t->path, &st) != 0) return errno == ENOENT ? TI_FILE_DELETED : TI_FILE_SAME;
  if (st.st_dev != t->dev || st.st_ino != t->ino) return TI_FILE_REPLACED;
  if ((uint64_t)st.st_size < ti_bytes_read(t)) return TI_FILE_TRUNCATED;
  return TI_FILE_SAME;
}

void ti_follow(ti_trace *t, int on)
{
  if (t->mpt) mpt_reader_follow(t->mpt, on);
  else ctf_reader_follow(t->ctf, on);
}

const void *ti_ctf_stats(const ti_trace *t)
{
  return t->ctf ? (const void *)ctf_reader_stats(t->ctf) : NULL;
}

void ti_close(ti_trace *t)
{
  if (!t) return;
  if (t->mpt) mpt_reader_close(t->mpt);
  if (t->ctf) ctf_reader_close(t->ctf);
  free(t->path);
  free(t);
}

const char *ti_format_name(ti_format f)
{
  return f == TI_FORMAT_MEMPROF ? "5.3.0+memprof" : "memtrace CTF";
}

const char *ti_source_name(enum mpt_source s)
{
  switch (s) {
  case MPT_SRC_MINOR: return "minor";
  case MPT_SRC_MAJOR: return "major";
  case MPT_SRC_CUSTOM: return "external";
  case MPT_SRC_MARSHAL: return "marshal";
  default: return "?";
  }
}

const char *ti_kind_name(enum mpt_event_kind k)
{
  switch (k) {
  case MPT_EV_ALLOC: return "alloc";
  case MPT_EV_PROMOTE: return "promote";
  case MPT_EV_COLLECT: return "collect";
  case MPT_EV_MINOR_GC: return "minor_gc";
  case MPT_EV_MAJOR_CYCLE: return "major_cycle";
  case MPT_EV_COMPACT_BEGIN: return "compact_begin";
  case MPT_EV_COMPACT_END: return "compact_end";
  case MPT_EV_DOMAIN_START: return "domain_start";
  case MPT_EV_DOMAIN_STOP: return "domain_stop";
  case MPT_EV_TRACE_START: return "trace_start";
  case MPT_EV_TRACE_STOP: return "trace_stop";
  case MPT_EV_FORK: return "fork";
  case MPT_EV_LOST: return "lost";
  default: return "unknown";
  }
}
