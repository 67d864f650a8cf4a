/* memprof_trace_writer.c: the trace file of the 5.3.0+memprof tracer.

   Design
   - State: one file descriptor, the path template, the start time, and a
     mutex that serialises appends.  Domains never write to the file
     directly: each hands a whole chunk (see memprof_tracer.c), which is
     compressed here into one independent LZ4 frame *outside* the mutex
     (into the domain's own buffer), then appended with write(2) under it.
     Frames are therefore never interleaved, and a file cut at any byte
     decodes up to its last complete frame.
   - Errors: the first failing write (full disk, I/O error, file removed
     on a read-only mount...) prints one line on stderr and closes the
     writer; callers see -1 and stop tracing.  The program's own behaviour
     and exit status never change.  Bytes already written stay readable.
   - Fork: the child must never append to the parent's file.  The tracer's
     atfork handler calls caml_trace_writer_forget_after_fork, which drops
     the descriptor in the child (closing our copy does not affect the
     parent's); with %p in the template the child then opens its own file.
   - Time: CLOCK_MONOTONIC since the trace started, in microseconds. */

#define CAML_INTERNALS
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "caml/memprof_trace_writer.h"

static pthread_mutex_t writer_lock = PTHREAD_MUTEX_INITIALIZER;
static int trace_fd = -1;
static int compress = 1;
static char *path_template;   /* as given in OCAMLRUNPARAM / Gc API */
static char *path;            /* expanded */
static uint64_t start_ns;

static uint64_t mono_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t caml_trace_writer_now(void)
{
  return (mono_ns() - start_ns) / CAML_TRACE_TIME_UNIT_NS;
}

int caml_trace_writer_is_open(void) { return trace_fd >= 0; }
int caml_trace_writer_compressed(void) { return compress; }

static char *expand(const char *t, const char *exe)
{
  const char *base = strrchr(exe ? exe : "", '/');
  base = base ? base + 1 : (exe ? exe : "");
  size_t cap = strlen(t) * 20 + 64 + strlen(base) * 4;
  char *out = malloc(cap), *o = out;
  if (!out) return NULL;
  for (const char *p = t; *p; p++) {
    if (*p == '%' && p[1] == 'p') { o += sprintf(o, "%ld", (long)getpid()); p++; }
    else if (*p == '%' && p[1] == 't') { o += sprintf(o, "%ld", (long)time(NULL)); p++; }
    else if (*p == '%' && p[1] == 'e') { o += sprintf(o, "%s", base); p++; }
    else if (*p == '%' && p[1] == '%') { *o++ = '%'; p++; }
    else *o++ = *p;
  }
  *o = 0;
  return out;
}

/* Append [len] bytes; on failure report once and close. */
static int append(const uint8_t *p, size_t len)
{
  while (len > 0) {
    ssize_t n = write(trace_fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      fprintf(stderr, "memprof: cannot write trace %s: %s; tracing stopped, "
              "the trace so far stays readable\n", path,
              n < 0 ? strerror(errno) : "short write");
      close(trace_fd);
      trace_fd = -1;
      return -1;
    }
    p += n; len -= (size_t)n;
  }
  return 0;
}

/* Compress (or not) [plain] and append it: one frame, one write. */
static int append_frame(const uint8_t *plain, size_t len, uint8_t *zbuf, size_t zcap)
{
  if (!compress) return append(plain, len);
  size_t z = mpt_frame_compress(zbuf, zcap, plain, len);
  if (z == 0) return -1;
  return append(zbuf, z);
}

int caml_trace_writer_open(const char *template, const mpt_trace_info *info)
{
  int rc = -1;
  pthread_mutex_lock(&writer_lock);
  if (trace_fd >= 0) { rc = 0; goto out; }
  if (template != path_template) {
    free(path_template);
    path_template = strdup(template);
  }
  free(path);
  path = expand(template, info->executable);
  if (!path || !path_template) goto out;
  compress = (info->flags & MPT_FLAG_COMPRESSED) != 0;
  trace_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (trace_fd < 0) {
    fprintf(stderr, "memprof: cannot create trace %s: %s; running untraced\n",
            path, strerror(errno));
    goto out;
  }
  start_ns = mono_ns();
  size_t cap = MPT_MAGIC_LEN + MPT_CHUNK_HEADER_BYTES + 128 + 4 * (MPT_MAX_STRING + 10);
  uint8_t *hdr = malloc(cap), *z = malloc(mpt_frame_bound(cap));
  if (hdr && z) {
    size_t n = mpt_write_header_chunk(hdr, cap, info);
    rc = append_frame(hdr, n, z, mpt_frame_bound(cap));
  }
  free(hdr); free(z);
 out:
  pthread_mutex_unlock(&writer_lock);
  return rc;
}

int caml_trace_writer_chunk(uint16_t stream, uint8_t *chunk, size_t body_len,
                            uint8_t *zbuf, size_t zcap)
{
  mpt_chunk_header(chunk, MPT_CHUNK_EVENTS, stream, (uint32_t)body_len);
  size_t len = MPT_CHUNK_HEADER_BYTES + body_len;
  const uint8_t *out = chunk;
  if (compress) {
    /* Compress before taking the lock: domains compress in parallel. */
    len = mpt_frame_compress(zbuf, zcap, chunk, len);
    out = zbuf;
    if (len == 0) return -1;
  }
  pthread_mutex_lock(&writer_lock);
  int rc = trace_fd >= 0 ? append(out, len) : -1;
  pthread_mutex_unlock(&writer_lock);
  return rc;
}

void caml_trace_writer_close(uint64_t total_samples, uint64_t lost_samples)
{
  pthread_mutex_lock(&writer_lock);
  if (trace_fd >= 0) {
    uint8_t end[64];
    size_t n = mpt_write_end_chunk(end, sizeof end, caml_trace_writer_now(),
                                   total_samples, lost_samples);
    size_t zcap = mpt_frame_bound(n);
    uint8_t *z = malloc(zcap);
    if (z && append_frame(end, n, z, zcap) == 0) {
      close(trace_fd);
      trace_fd = -1;
    }
    free(z);
  }
  pthread_mutex_unlock(&writer_lock);
}

int caml_trace_writer_forget_after_fork(void)
{
  /* Only this thread exists in the child; the lock may have been held by
     another thread of the parent at fork time. */
  pthread_mutex_init(&writer_lock, NULL);
  if (trace_fd >= 0) close(trace_fd);
  trace_fd = -1;
  return path_template && strstr(path_template, "%p") != NULL;
}
