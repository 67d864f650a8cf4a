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
   - Exec, and other processes: a program that runs another OCaml program
     passes OCAMLRUNPARAM on, so the child expands the same template.  A
     trace is never truncated or interleaved while a live process writes
     it: the writer holds an exclusive flock(2) on its file for the trace's
     lifetime (the descriptor is close-on-exec; a forked child's copy
     shares the lock and is closed at once).  A file that is locked gets a
     distinct name instead, PATH.PID, announced in one stderr line; an
     unlocked file (a previous run's) is replaced, as users expect.
   - Names: one process never writes two traces under one name (a trace
     restarted by the toggle signal within %t's second, a second
     Gc.Memprof_trace.start on the same path, or a program that exec's
     another without forking: same pid, and the close-on-exec descriptor
     took the lock with it): a name this process already used, or whose
     header names this pid, gets a suffix .2, .3, ...  A restart within
     one program image is announced in one stderr line; after exec it is
     silent, since fork then exec with %p in the path (what every build
     tool does) always meets the trace of the forked child's first image,
     and a line on stderr would change the output of the programs run.
   - A header that cannot be written leaves no file behind.
   - Time: CLOCK_MONOTONIC since the trace started, in the process's time
     unit (its first trace's: see caml_trace_writer_open).  Read
     once per sample: clock_gettime costs 19 ns on the development machine
     (the vDSO reads the TSC, the kernel's scale and a sequence lock),
     reading the TSC 8.  Where the kernel's clock source is the TSC
     (x86-64, current_clocksource "tsc": the kernel has checked that it is
     invariant and synchronised across CPUs) and rdtsc is allowed, the
     writer reads it and scales it itself: time = base + (tsc - tsc0) *
     scale, in time units.  The scale is measured over the process's first
     5 to 100 ms of tracing, as long as the readings' precision needs for
     20 ppm (clock_gettime serves meanwhile; see TSC_MIN_CALIBRATION_NS),
     against CLOCK_MONOTONIC_RAW, which NTP does not slew, then published
     once, release/acquire, and never changed: a reader that sees it ready
     sees all of it, and forked children keep it (same TSC).  Its error is
     the readings' (at most 20 ppm; about 10 natively, after 5 ms); from
     then on times advance at the hardware's rate, within NTP's frequency
     correction of CLOCK_MONOTONIC's (tens of ppm).  base moves at each
     open (a restart); it is read relaxed, so a time read during a restart
     may belong to either trace, as with clock_gettime.  A time may step
     back by a unit at the switch, which streams clamp
     (mpt_enc_alloc_shared).  A TSC found far behind (reset by a resume)
     sends every thread back to clock_gettime.  Where the TSC is not
     read, the sample trap reads CLOCK_MONOTONIC itself, through the
     vDSO's clock_gettime found at the first open (memprof_trace_
     writer.h says why not glibc's), into the same units.
   - Companion file: a forked heap snapshot's child process (see
     memprof_heap_snapshot.c) cannot take writer_lock (another thread of
     the parent may have held it at the fork) nor share the trace's end
     with the parent (a child killed in the middle of a write would leave
     a cut frame inside the trace).  It writes its frames to TRACE.snapshot
     instead, with plain write(2)s; the parent, having reaped it, appends
     the frames it completed to the trace under writer_lock, in one go (a
     snapshot is a few MB at most once compressed: 0.02 bytes per block on
     the bench heap), and removes the file.  A file left behind by a
     process killed before that holds no part of the trace. */

#define CAML_INTERNALS
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <stdatomic.h>
#include "caml/memprof_trace_writer.h"
#include "caml/memprof_trap.h"
#ifdef CAML_TRACE_TSC_CLOCK       /* memprof_trace_writer.h: x86-64 */
#include <elf.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#endif

static pthread_mutex_t writer_lock = PTHREAD_MUTEX_INITIALIZER;
static int trace_fd = -1;
static int compress = 1;
static int events_acceleration = 1; /* events_acceleration_for */
static char *path_template;   /* as given in OCAMLRUNPARAM / Gc API */
static char *path;            /* expanded */

static uint64_t mono_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The trace's start, and the time unit of every trace of this process:
   the first trace's (mpt_trace_info.time_unit_ns at the first open),
   since the TSC's scale is in it and never changes; microseconds until
   then (the clock also seeds the domains' random streams). */
struct caml_trace_mono caml_trace_mono = { NULL, 0, 1000 };
static int time_unit_fixed;

uint32_t caml_trace_writer_time_unit_ns(void)
{
  return caml_trace_mono.unit_ns;
}

#ifdef CAML_TRACE_TSC_CLOCK
/* The calibration ends at the first clock reading TSC_MIN_CALIBRATION_NS
   or more after its start when its two TSC readings' uncertainty (the
   mean of their pairs' gaps) is then within TSC_MAX_ERROR_PPM of the
   interval; else at TSC_CALIBRATION_NS, where it is refused (clock_
   gettime then serves for good) if that uncertainty exceeds
   TSC_MAX_READING_ERROR_NS, the same 20 ppm.  Natively the pairs are
   about 50 ns apart, so the TSC serves after 5 ms instead of 100: a
   program's samples meanwhile take the ordinary path (the sample trap
   needs the TSC), a tenth of a one-second program's.  Under valgrind
   (1 us) it is 50 ms. */
#define TSC_MIN_CALIBRATION_NS 5000000
#define TSC_CALIBRATION_NS 100000000
#define TSC_MAX_ERROR_PPM 20
#define TSC_MAX_READING_ERROR_NS \
  (TSC_CALIBRATION_NS / 1000000 * TSC_MAX_ERROR_PPM)
/* A TSC this far behind tsc0 was reset (a resume from suspend on some
   machines): clock_gettime serves from then on. */
#define TSC_BACK_TICKS ((int64_t)1 << 30)
static _Atomic uint64_t cal_ns;       /* the calibration's start (MONOTONIC) */
static _Atomic uint64_t cal_next_ns;  /* its next try, ns after the start */
static uint64_t cal_tsc, cal_raw, cal_gap;
/* The clock's state and, once ready, its scale (units per tick, 24.40)
   and base (the trace's time at tsc0): memprof_trace_writer.h's, for
   caml_trace_writer_now_tsc, inline. */
struct caml_trace_tsc caml_trace_tsc;
/* Serialises the writes of start_ns and the base (an open and the
   publication); never held while taking another lock. */
static pthread_mutex_t time_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t raw_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A TSC reading with CLOCK_MONOTONIC's and CLOCK_MONOTONIC_RAW's times at
   that moment: the middle of two TSC readings around the clocks', the
   closest pair of eight (a preemption in between would skew the scale);
   [*gap] is that pair's distance in ticks. */
static uint64_t tsc_and_clocks(uint64_t *ns, uint64_t *raw, uint64_t *gap)
{
  uint64_t best = 0;
  *gap = UINT64_MAX;
  for (int k = 0; k < 8; k++) {
    uint64_t a = __rdtsc(), m = mono_ns(), r = raw_ns(), b = __rdtsc();
    if (b - a < *gap) { *gap = b - a; best = a + *gap / 2; *ns = m; *raw = r; }
  }
  return best;
}

/* In a forked child: time_lock may have been held by another thread of
   the parent (an open, on any machine), or a publication left half done
   (it starts again). */
static void tsc_after_fork(void)
{
  pthread_mutex_init(&time_lock, NULL);
  if (atomic_load(&caml_trace_tsc.state) == CAML_TSC_PUBLISHING)
    atomic_store(&caml_trace_tsc.state, CAML_TSC_CALIBRATING);
}

static void register_tsc_after_fork(void)
{
  pthread_atfork(NULL, NULL, tsc_after_fork);
}

/* Whether this process may read the TSC: the kernel keeps time with it
   (so it checked that it is invariant and synchronised across CPUs), and
   rdtsc does not fault (prctl PR_SET_TSC). */
static int tsc_usable(void)
{
  char src[16] = "";
  /* open and read, which the writer binds anyway: each other libc
     function a traced run calls costs it a lazy binding (about 700
     instructions), and stdio a buffer */
  int fd = open("/sys/devices/system/clocksource/clocksource0/"
                "current_clocksource", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t r = read(fd, src, sizeof src - 1);
    src[r > 0 ? r : 0] = 0;
    close(fd);
  }
  int mode = PR_TSC_ENABLE;
  return strcmp(src, "tsc\n") == 0
    && (prctl(PR_GET_TSC, &mode, 0, 0, 0) != 0 || mode == PR_TSC_ENABLE);
}

/* At an open, with time_lock: the trace starts now.  The first open
   starts the calibration if the TSC is usable. */
static void tsc_open(void)
{
  int st = atomic_load(&caml_trace_tsc.state);
  if (st == CAML_TSC_READY) {
    int64_t d = (int64_t)(__rdtsc() - caml_trace_tsc.tsc0);
    atomic_store_explicit(&caml_trace_tsc.base,
                          -(int64_t)caml_trace_tsc_units(d > 0 ? d : 0),
                          memory_order_relaxed);
    return;
  }
  if (st != CAML_TSC_UNUSED) return;
  if (!tsc_usable()) {
    atomic_store(&caml_trace_tsc.state, CAML_TSC_OFF);
    return;
  }
  uint64_t ns;
  cal_tsc = tsc_and_clocks(&ns, &cal_raw, &cal_gap);
  atomic_store_explicit(&cal_ns, ns, memory_order_relaxed);
  atomic_store_explicit(&cal_next_ns, TSC_MIN_CALIBRATION_NS,
                        memory_order_relaxed);
  atomic_store(&caml_trace_tsc.state, CAML_TSC_CALIBRATING);
}

/* Called while calibrating, with a CLOCK_MONOTONIC time read after the
   state was: the first caller TSC_MIN_CALIBRATION_NS after the start
   whose readings are precise enough (see TSC_MIN_CALIBRATION_NS), or
   the first TSC_CALIBRATION_NS after it, publishes the scale, measured
   against CLOCK_MONOTONIC_RAW (not slewed by NTP: a slew during the
   calibration would stay in the scale), and the base, CLOCK_MONOTONIC's
   time since the start at tsc0.  A caller whose readings are not precise
   enough yet leaves the calibration to a later one, after the interval
   that their precision needs (cal_next_ns). */
static void tsc_calibrate(uint64_t ns)
{
  int expected = CAML_TSC_CALIBRATING;
  uint64_t start = atomic_load_explicit(&cal_ns, memory_order_relaxed);
  if ((int64_t)(ns - start)
        < (int64_t)atomic_load_explicit(&cal_next_ns, memory_order_relaxed)
      || !atomic_compare_exchange_strong(&caml_trace_tsc.state, &expected,
                                         CAML_TSC_PUBLISHING))
    return;
  uint64_t ns0, raw0, gap0;
  pthread_mutex_lock(&time_lock);
  caml_trace_tsc.tsc0 = tsc_and_clocks(&ns0, &raw0, &gap0);
  int st = CAML_TSC_OFF;
  if (caml_trace_tsc.tsc0 > cal_tsc && raw0 > cal_raw) {
    double ns_per_tick = (double)(raw0 - cal_raw)
                         / (double)(caml_trace_tsc.tsc0 - cal_tsc);
    double error_ns = (double)(gap0 + cal_gap) / 2 * ns_per_tick;
    double needed_ns = error_ns * (1e6 / TSC_MAX_ERROR_PPM);
    if (error_ns <= TSC_MAX_READING_ERROR_NS
        && (needed_ns <= (double)(raw0 - cal_raw)
            || ns0 - start >= TSC_CALIBRATION_NS)) {
      caml_trace_tsc.scale =
        (uint64_t)(ns_per_tick / caml_trace_mono.unit_ns * 0x1p40);
      atomic_store_explicit(&caml_trace_tsc.base,
                            (int64_t)caml_trace_mono_units(ns0),
                            memory_order_relaxed);
      st = CAML_TSC_READY;
    } else if (ns0 - start < TSC_CALIBRATION_NS) {
      /* Not precise enough yet: again once the interval is long enough
         for readings like these, by TSC_CALIBRATION_NS at the latest. */
      atomic_store_explicit(&cal_next_ns,
                            needed_ns < TSC_CALIBRATION_NS
                            ? (uint64_t)needed_ns : TSC_CALIBRATION_NS,
                            memory_order_relaxed);
      st = CAML_TSC_CALIBRATING;
    }
  }
  atomic_store_explicit(&caml_trace_tsc.state, st, memory_order_release);
  pthread_mutex_unlock(&time_lock);
}
#endif

static __attribute__((noinline)) uint64_t now_by_clock_gettime(void)
{
#ifdef CAML_TRACE_TSC_CLOCK
  /* the state before the clock: see tsc_calibrate */
  int st = atomic_load(&caml_trace_tsc.state);
  uint64_t ns = mono_ns();
  if (st == CAML_TSC_CALIBRATING) tsc_calibrate(ns);
  return caml_trace_mono_units(ns);
#else
  return caml_trace_mono_units(mono_ns());
#endif
}

/* The time when the TSC is not read: not (yet) in use, or read before
   tsc0 (a CPU's few ticks of skew, or a reset). */
static __attribute__((noinline)) uint64_t now_not_tsc(void)
{
#ifdef CAML_TRACE_TSC_CLOCK
  if (atomic_load_explicit(&caml_trace_tsc.state, memory_order_acquire)
      == CAML_TSC_READY) {
    int64_t ticks = (int64_t)(__rdtsc() - caml_trace_tsc.tsc0);
    if (ticks > -TSC_BACK_TICKS)
      return (uint64_t)atomic_load_explicit(&caml_trace_tsc.base,
                                            memory_order_relaxed);
    atomic_store(&caml_trace_tsc.state, CAML_TSC_OFF);
    return caml_trace_mono_units(mono_ns());
  }
#endif
  return now_by_clock_gettime();
}

uint64_t caml_trace_writer_now(void)
{
  uint64_t now;
  if (__builtin_expect(caml_trace_writer_now_tsc(&now), 1)) return now;
  return now_not_tsc();
}

int caml_trace_writer_uses_tsc(void)
{
#ifdef CAML_TRACE_TSC_CLOCK
  return atomic_load(&caml_trace_tsc.state) == CAML_TSC_READY;
#else
  return 0;
#endif
}

/* The address of the vDSO's function [name], or NULL: from its dynamic
   symbol table, found through its section headers (the kernel maps the
   whole image; it is not untrusted input). */
static void *vdso_function(const char *name)
{
  uintptr_t base = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
  if (base == 0) return NULL;                 /* none: valgrind hides it */
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0
      || eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shoff == 0
      || eh->e_shentsize != sizeof(Elf64_Shdr)
      || eh->e_phentsize != sizeof(Elf64_Phdr))
    return NULL;
  const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff);
  uintptr_t bias = 0;
  int loaded = 0;
  for (unsigned i = 0; i < eh->e_phnum && !loaded; i++)
    if (ph[i].p_type == PT_LOAD) {
      bias = base + ph[i].p_offset - ph[i].p_vaddr;
      loaded = 1;
    }
  if (!loaded) return NULL;
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(base + eh->e_shoff);
  for (unsigned i = 0; i < eh->e_shnum; i++) {
    if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum
        || sh[i].sh_entsize != sizeof(Elf64_Sym))
      continue;
    const Elf64_Sym *sym = (const Elf64_Sym *)(base + sh[i].sh_offset);
    const char *names = (const char *)(base + sh[sh[i].sh_link].sh_offset);
    for (size_t k = 0; k < sh[i].sh_size / sizeof(Elf64_Sym); k++)
      if (ELF64_ST_TYPE(sym[k].st_info) == STT_FUNC
          && sym[k].st_shndx != SHN_UNDEF
          && strcmp(names + sym[k].st_name, name) == 0)
        return (void *)(bias + sym[k].st_value);
  }
  return NULL;
}

static void find_vdso_clock(void)
{
  caml_trace_mono.vdso_gettime = (int (*)(clockid_t, struct timespec *))
    vdso_function("__vdso_clock_gettime");
}

/* At an open: the trace starts now. */
static void start_clock(void)
{
#ifdef CAML_TRACE_TSC_CLOCK
  static pthread_once_t fork_handler = PTHREAD_ONCE_INIT,
    vdso_clock = PTHREAD_ONCE_INIT;
  pthread_once(&fork_handler, register_tsc_after_fork);
  pthread_once(&vdso_clock, find_vdso_clock);
  pthread_mutex_lock(&time_lock);
  atomic_store_explicit(&caml_trace_mono.start_ns, mono_ns(),
                        memory_order_relaxed);
  tsc_open();
  pthread_mutex_unlock(&time_lock);
#else
  atomic_store_explicit(&caml_trace_mono.start_ns, mono_ns(),
                        memory_order_relaxed);
#endif
}

int caml_trace_writer_is_open(void) { return trace_fd >= 0; }
int caml_trace_writer_compressed(void) { return compress; }

/* Expand the template: %p pid, %t Unix time, %e executable basename, %%.
   Two passes: the first measures, so any template fits (no fixed bound
   per directive). */
static char *expand(const char *t, const char *exe)
{
  const char *base = strrchr(exe ? exe : "", '/');
  base = base ? base + 1 : (exe ? exe : "");
  char pid[24], now[24];
  snprintf(pid, sizeof pid, "%ld", (long)getpid());
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);         /* bound anyway, as open */
  snprintf(now, sizeof now, "%ld", (long)ts.tv_sec);
  char *out = NULL;
  size_t len = 0;
  for (int pass = 0; pass < 2; pass++) {
    size_t o = 0;
#define PUT(str, n) do { if (out) memcpy(out + o, (str), (n)); o += (n); } while (0)
    for (const char *p = t; *p; p++) {
      const char *ins = NULL;
      if (*p == '%') {
        switch (p[1]) {
        case 'p': ins = pid; break;
        case 't': ins = now; break;
        case 'e': ins = base; break;
        case '%': ins = "%"; break;
        }
      }
      if (ins) { PUT(ins, strlen(ins)); p++; }
      else PUT(p, 1);
    }
#undef PUT
    if (pass == 0) {
      len = o;
      out = malloc(len + 1);
      if (!out) return NULL;
    }
  }
  out[len] = 0;
  return out;
}

/* Names of the traces this process has written (see "Names" above). */
static char **used_names;
static size_t used_count, used_cap;

/* The pid in the header of the trace at [name], or 0. */
static uint64_t header_pid(const char *name)
{
  uint8_t buf[16384];
  int fd = open(name, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  if (n <= 0) return 0;
  char err[64];
  mpt_reader *r = mpt_reader_open_mem(buf, (size_t)n, err, sizeof err);
  if (!r) return 0;
  uint64_t pid = mpt_reader_info(r)->pid;
  mpt_reader_close(r);
  return pid;
}

/* 1: this program image wrote [name]; 2: this pid's image before an
   exec did; 0: neither. */
static int name_used(const char *name)
{
  for (size_t i = 0; i < used_count; i++)
    if (strcmp(used_names[i], name) == 0) return 1;
  return header_pid(name) == (uint64_t)getpid() ? 2 : 0;
}

static void remember_name(const char *name)
{
  if (used_count == used_cap) {
    size_t cap = used_cap ? 2 * used_cap : 8;
    char **n = realloc(used_names, cap * sizeof *n);
    if (!n) return;
    used_names = n; used_cap = cap;
  }
  char *copy = strdup(name);
  if (copy) used_names[used_count++] = copy;
}

/* [base] followed by [sep] and [n] (a fresh string), or NULL. */
static char *suffixed(const char *base, char sep, long n)
{
  size_t len = strlen(base) + 24;
  char *s = malloc(len);
  if (s) snprintf(s, len, "%s%c%ld", base, sep, n);
  return s;
}

/* Open [*name] for a new trace, exclusively (see the design comment);
   may replace [*name] by the name actually used.  Returns the descriptor
   or -1 with errno set. */
static int open_exclusive(char **name)
{
  for (int attempt = 0; attempt < 2; attempt++) {
    int fd = open(*name, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    struct stat st;
    int regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    if (!regular) return fd;                /* a device or a pipe: as is */
    if (flock(fd, LOCK_EX | LOCK_NB) == 0 || errno != EWOULDBLOCK) {
      /* Ours (or a file system without flock): replace what was there. */
      if (ftruncate(fd, 0) == 0) return fd;
      int e = errno; close(fd); errno = e;
      return -1;
    }
    close(fd);
    if (attempt == 1) break;
    char *alt = suffixed(*name, '.', (long)getpid());
    if (!alt) { errno = ENOMEM; return -1; }
    fprintf(stderr, "memprof: %s is being written by another process; "
            "tracing into %s\n", *name, alt);
    free(*name);
    *name = alt;
  }
  errno = EWOULDBLOCK;
  return -1;
}

/* Append [len] bytes: 0, or -1 with errno set (0 for a short write). */
static int append(const uint8_t *p, size_t len)
{
  while (len > 0) {
    ssize_t n = write(trace_fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) { if (n == 0) errno = 0; return -1; }
    p += n; len -= (size_t)n;
  }
  return 0;
}

/* A write failed: say so once and close the trace. */
static void write_failed(void)
{
  fprintf(stderr, "memprof: cannot write trace %s: %s; tracing stopped, "
          "the trace so far stays readable\n", path,
          errno ? strerror(errno) : "short write");
  close(trace_fd);
  trace_fd = -1;
}

/* Append [plain], written once (the header, END), in an LZ4 frame that
   stores it as is when the trace is compressed: it would hardly shrink
   (the header is mostly names, END a few numbers), and compressing it
   cleared 16 KB of LZ4 state each time, 33,000 instructions of a trace's
   fixed cost.  One frame, one write. */
static int append_frame(const uint8_t *plain, size_t len, uint8_t *zbuf, size_t zcap)
{
  if (!compress) return append(plain, len);
  size_t z = mpt_frame_store(zbuf, zcap, plain, len);
  if (z == 0) { errno = ENOMEM; return -1; }
  return append(zbuf, z);
}

/* The LZ4 acceleration of a trace's event chunks, by its sampling rate.
   Compression is on the sample path (a stream compresses its own chunks):
   at 1e-3, short_lived in bench/ spent 85 instructions per sample in LZ4
   at acceleration 1, 43 at 4 and 29 at 16, for 6 % and 17 % larger
   frames.  At 1e-3 and above, a run's cost is its instructions, so 32:
   against 16, 8 instructions fewer per sample on short_lived and 6 on
   leaky_server, for traces 3 % and 7 % larger (long_lived: 7.7 to 8.2
   bytes per sample; 64 would save 5 instructions more for another 6 %).
   At 1e-4, where traces are longer-lived, 4 (16 took long_lived from 8.4
   to 10.0 bytes per sample); below, where samples are rare and a trace's
   size is what matters, 1.  The header and heap snapshots, written once,
   always take 1. */
static int events_acceleration_for(double sampling_rate)
{
  return sampling_rate >= 1e-3 ? 32 : sampling_rate >= 1e-4 ? 4 : 1;
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
  int used = name_used(path);
  if (used) {
    char *alt = NULL;
    for (long n = 2; !alt || name_used(alt); n++) {
      free(alt);
      if (!(alt = suffixed(path, '.', n))) goto out;
    }
    if (used == 1)
      fprintf(stderr, "memprof: this process already wrote %s; "
              "tracing into %s\n", path, alt);
    free(path);
    path = alt;
  }
  compress = (info->flags & MPT_FLAG_COMPRESSED) != 0;
  events_acceleration = events_acceleration_for(info->sampling_rate);
  trace_fd = open_exclusive(&path);
  if (trace_fd < 0) {
    fprintf(stderr, "memprof: cannot create trace %s: %s; running untraced\n",
            path, strerror(errno));
    goto out;
  }
  remember_name(path);
  if (!time_unit_fixed) {
    caml_trace_mono.unit_ns = info->time_unit_ns;
    time_unit_fixed = 1;
  }
  start_clock();
  mpt_trace_info header = *info;
  header.time_unit_ns = caml_trace_mono.unit_ns;
#define HEADER_CAP \
  (MPT_MAGIC_LEN + MPT_CHUNK_HEADER_BYTES + 128 + 4 * (MPT_MAX_STRING + 10))
  _Static_assert(HEADER_CAP <= MPT_STORED_FRAME_MAX,
                 "the header fits in a stored frame");
  size_t cap = HEADER_CAP, zcap = MPT_STORED_FRAME_OVERHEAD + cap;
#undef HEADER_CAP
  uint8_t *hdr = malloc(cap), *z = malloc(zcap);
  errno = ENOMEM;
  if (hdr && z)
    rc = append_frame(hdr, mpt_write_header_chunk(hdr, cap, &header), z, zcap);
  free(hdr); free(z);
  if (rc < 0) {
    /* No header, no trace: leave no empty or cut file behind. */
    fprintf(stderr, "memprof: cannot write trace %s: %s; running untraced\n",
            path, errno ? strerror(errno) : "short write");
    struct stat st;
    if (fstat(trace_fd, &st) == 0 && S_ISREG(st.st_mode)) unlink(path);
    close(trace_fd);
    trace_fd = -1;
  }
 out:
  pthread_mutex_unlock(&writer_lock);
  return rc;
}

int caml_trace_writer_chunk(uint16_t stream, uint8_t *chunk, size_t body_len,
                            mpt_frame_state *zstate,
                            uint8_t *zbuf, size_t zcap)
{
  return caml_trace_writer_typed_chunk(MPT_CHUNK_EVENTS, stream, chunk,
                                       body_len, zstate, zbuf, zcap);
}

int caml_trace_writer_typed_chunk(enum mpt_chunk_type type, uint16_t stream,
                                  uint8_t *chunk, size_t body_len,
                                  mpt_frame_state *zstate,
                                  uint8_t *zbuf, size_t zcap)
{
  mpt_chunk_header(chunk, type, stream, (uint32_t)body_len);
  size_t len = MPT_CHUNK_HEADER_BYTES + body_len;
  const uint8_t *out = chunk;
  if (compress) {
    /* Compress before taking the lock: domains compress in parallel. */
    len = mpt_frame_compress(zstate, zbuf, zcap, chunk, len,
                             type == MPT_CHUNK_EVENTS
                             ? events_acceleration : 1);
    out = zbuf;
    if (len == 0) return -1;
  }
  pthread_mutex_lock(&writer_lock);
  int rc = -1;
  if (trace_fd >= 0 && (rc = append(out, len)) < 0) write_failed();
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
    size_t zcap = MPT_STORED_FRAME_OVERHEAD + n;
    uint8_t *z = malloc(zcap);
    if (z && append_frame(end, n, z, zcap) == 0) {
      close(trace_fd);
      trace_fd = -1;
    } else if (z) {
      write_failed();
    }
    free(z);
  }
  pthread_mutex_unlock(&writer_lock);
}

static char *companion_path;   /* of the trace being written, or NULL */

int caml_trace_writer_companion_open(void)
{
  int fd = -1;
  pthread_mutex_lock(&writer_lock);
  if (trace_fd >= 0 && path) {
    free(companion_path);
    size_t n = strlen(path) + sizeof ".snapshot";
    companion_path = malloc(n);
    if (companion_path) {
      snprintf(companion_path, n, "%s.snapshot", path);
      fd = open(companion_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    }
  }
  pthread_mutex_unlock(&writer_lock);
  return fd;
}

static int append_fd(int fd, const uint8_t *p, size_t len)
{
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    p += n; len -= (size_t)n;
  }
  return 0;
}

int caml_trace_writer_companion_chunk(int fd, enum mpt_chunk_type type,
                                      uint16_t stream, uint8_t *chunk,
                                      size_t body_len, uint8_t *zbuf,
                                      size_t zcap)
{
  mpt_chunk_header(chunk, type, stream, (uint32_t)body_len);
  size_t len = MPT_CHUNK_HEADER_BYTES + body_len;
  const uint8_t *out = chunk;
  if (compress) {
    /* No state: LZ4F_compressFrame's lives on the stack (no malloc). */
    len = mpt_frame_compress(NULL, zbuf, zcap, chunk, len, 1);
    out = zbuf;
    if (len == 0) return -1;
  }
  return append_fd(fd, out, len);
}

int caml_trace_writer_companion_merge(int fd, uint64_t len)
{
  int rc = 0;
  size_t cap = 1 << 20;
  uint8_t *buf = len ? malloc(cap) : NULL;
  pthread_mutex_lock(&writer_lock);
  for (uint64_t off = 0; trace_fd >= 0 && off < len; ) {
    size_t want = len - off < cap ? (size_t)(len - off) : cap;
    /* Pieces are not whole frames: one that fails ends the trace there,
       as a failed write does. */
    ssize_t n = buf ? pread(fd, buf, want, (off_t)off) : -1;
    if (n <= 0) { if (n == 0) errno = 0; rc = -1; write_failed(); break; }
    if ((rc = append(buf, (size_t)n)) < 0) { write_failed(); break; }
    off += (uint64_t)n;
  }
  if (companion_path) unlink(companion_path);
  pthread_mutex_unlock(&writer_lock);
  free(buf);
  close(fd);
  return rc;
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
