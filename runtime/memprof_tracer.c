/* memprof_tracer.c: native memory tracing for 5.3.0+memprof.

   What it does
   OCAMLRUNPARAM=memprof=PATH (or Gc.Memprof_trace.start) turns on
   statmemprof-style Poisson sampling of every allocation, at rate lambda
   per word, done here in C: no OCaml callback runs and nothing is
   allocated on the OCaml heap per sample.  Each sample becomes an ALLOC
   event with its callstack; the sampled block is then tracked, and its
   promotion and collection become events too.  GC context (minor
   collections with tracked blocks, major cycle ends with heap statistics,
   compactions), domain start/stop, tracing start/stop and fork are
   recorded alongside.  The encoding is memprof_trace_codec.c's; the file
   is memprof_trace_writer.c's.

   Independence from Gc.Memprof
   Upstream memprof.c keeps its own trigger, RNG and tables.  We keep a
   second minor-heap trigger in the domain state (memprof_tracer_trigger);
   caml_reset_young_limit takes the highest of the three triggers, and
   caml_alloc_small_dispatch calls us after upstream's memprof has done its
   own sampling (its callbacks may run a GC, so only then is young_ptr
   final).  Both samplers thus see every allocation with their own rates.
   When our trigger is the only reason an allocation left the fast path,
   caml_garbage_collection (from OCaml) or the start of caml_alloc_small_
   dispatch (from C) takes the sample at once (sample_fast).  On amd64
   Linux, an allocation from OCaml gets there only when the sample trap
   (memprof_trap.c, from caml_call_gc's entry) could not take the sample
   itself: this file notes what the trap needs for next time; and one
   from C first tries the trap's quick sample (caml_memprof_tracer_
   sample_c), then the ordinary path.

   Data structures (one tracer_domain per domain slot, kept across the
   lives of the domains that use the slot, since a slot is one stream of
   the trace and its location table must stay valid; its definition is in
   memprof_tracer_domain.h, shared with the trap)
   - encoder and event buffer (the body of the next EVENTS chunk), plus a
     compression buffer and LZ4 state; a full buffer is compressed and
     written by the domain itself, so the event path takes no global lock;
   - location table: backtrace slot -> location id, and debuginfo string
     pointer -> string id, both open addressing; a location is defined in
     the stream the first time the stream uses it (and again, under a new
     id, after the toplevel freed bytecode: see code_releases);
   - previous encoded raw callstack: frames shared with it (counted from
     main) are neither looked up nor compared again by the encoder, which
     holds the matching location ids;
   - sampling state: xoshiro256+ RNG, the minor trigger and where it was
     drawn (it is valid until the domain's minor heap is emptied: see
     trigger_drawn), whether it is parked (statmemprof suspended, see
     caml_memprof_tracer_statmemprof_suspended), the countdown (in words)
     to the next sample outside the minor heap;
   - tracked blocks: [young] (sampled in this domain's minor heap, checked
     after each minor GC, after the minor-GC barrier so that every domain
     has finished promoting: forwarded = promoted, else collected) and
     [major] (checked at each major cycle end: unmarked = collected; their
     addresses are updated by compaction through the weak-root scan).

   Synchronisation
   - Each tracer_domain has a lock, taken by its own domain around each
     sample and each GC batch, and by whoever stops/flushes the trace (exit
     from another domain, Gc.Memprof_trace.stop, the toggle signal).  It is
     uncontended in the common case.
   - [active] and [generation] are atomics: a generation is one trace
     file; a domain whose state belongs to an older generation resets its
     stream (locations, deltas, tracked blocks) before its next event.
   - Object ids come from a global counter, 256 at a time per domain, so
     they are unique across domains.
   - Blocks tracked by a terminating domain are handed to a global orphan
     list (orphan_lock) while the domain is still in the STW participant
     set (caml_memprof_tracer_leave_stw, under all_domains_lock), and
     adopted, under the lock, by the first domain that looks in the next
     STW section (cycle end or compaction), before it processes its own
     table: every orphan is filtered at every cycle end and updated at
     every compaction exactly once.
   - A flusher thread (plain C, all signals blocked) writes every stream's
     buffered events each memprof_flush_ms, taking the stream locks.
   - Fork: an atfork child handler re-initialises every lock (only the
     forking thread survives) and either starts a fresh trace for the child
     (%p in the path) or stops tracing; never writes to the parent's file.
*/

#define CAML_INTERNALS
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "caml/alloc.h"
#include "caml/backtrace.h"
#include "caml/backtrace_prim.h"
#include "caml/domain.h"
#include "caml/domain_state.h"
#include "caml/fail.h"
#include "caml/frame_descriptors.h"
#include "caml/gc_stats.h"
#include "caml/major_gc.h"
#include "caml/memory.h"
#include "caml/memprof.h"
#include "caml/minor_gc.h"
#include "caml/mlvalues.h"
#include "caml/osdeps.h"
#include "caml/shared_heap.h"
#ifdef NATIVE_CODE
#include "caml/fiber.h"
#include "caml/stack.h"
#endif
#include "caml/version.h"
#ifndef NATIVE_CODE
#include "caml/fix_code.h"
#endif
#include "caml/memprof_callbacks.h"
#include "caml/memprof_callstack.h"
#include "caml/memprof_trace_codec.h"
#include "caml/memprof_trace_writer.h"
#include "caml/memprof_tracer.h"
#include "caml/memprof_tracer_domain.h"
#include "caml/memprof_heap_snapshot.h"

/* ------------------------------------------------------------------ */
/* Parameters (OCAMLRUNPARAM)                                          */

#define DEFAULT_RATE 1e-5
#define DEFAULT_FRAMES 1024
#define BUFFER_BYTES (256 * 1024)
/* Streams pack deep stacks' frames below this rate (see reset_stream). */
#define PACK_RATE_MAX 1e-4
/* The flusher writes every stream's buffered events this often, so a
   process killed at time t keeps what it did up to about t - 200 ms. */
#define DEFAULT_FLUSH_MS 200
/* memprof_callbacks=N: at most this many frames scanned for closures. */
#define MAX_CALLBACK_FRAMES 256

static struct {
  char *path;           /* memprof=PATH: tracing on                        */
  double rate;          /* memprof_rate=R, samples per word, in (0, 1]    */
  uintnat frames;       /* memprof_frames=N, callstack depth, 1..4096      */
  uintnat compress;     /* memprof_compress=0|1                            */
  uintnat seed;         /* memprof_seed=N: reproducible sampling           */
  int seeded;
  int signal;           /* memprof_signal=SIGNAME|N: toggle tracing        */
  uintnat flush_ms;     /* memprof_flush_ms=N: periodic flush              */
  uintnat verify;       /* memprof_verify=1: check each callstack against
                           upstream's walk (tests); 2: also say at exit
                           how often marks spared a check             */
  uintnat callbacks;    /* memprof_callbacks=N: callback frames from the
                           closures the innermost N frames hold, 0: none  */
} params = { NULL, DEFAULT_RATE, DEFAULT_FRAMES, 1, 0, 0, 0, DEFAULT_FLUSH_MS, 0, 0 };

static void bad_param(const char *key, const char *val, const char *why)
{
  fprintf(stderr, "memprof: OCAMLRUNPARAM: ignoring %s=%s: %s\n", key, val, why);
}

/* A number has one spelling: a leading zero is refused (is 010 ten, or
   eight as strtoul's base 0 would read it?), as is any other form the
   documentation does not give. */
static int leading_zero(const char *val)
{
  return val[0] == '0' && val[1] >= '0' && val[1] <= '9';
}

/* Decimal digits only: no sign, no blank, no base prefix, no leading zero,
   no overflow. */
static int parse_uint(const char *val, uintnat lo, uintnat hi, uintnat *out)
{
  if (!*val || leading_zero(val)) return 0;
  uintnat v = 0;
  for (const char *p = val; *p; p++) {
    if (*p < '0' || *p > '9') return 0;
    uintnat d = (uintnat)(*p - '0');
    if (v > (CAML_UINTNAT_MAX - d) / 10) return 0;
    v = v * 10 + d;
  }
  if (v < lo || v > hi) return 0;
  *out = v;
  return 1;
}

/* A decimal number as documented: digits, an optional fraction and an
   optional exponent (1e-5, 0.001, 1); no sign, blank, hex, inf/nan or
   leading zero. */
static int parse_rate(const char *val, double *out)
{
  const char *p = val;
  if (leading_zero(val)) return 0;
  int digits = 0;
  while (*p >= '0' && *p <= '9') { p++; digits++; }
  if (*p == '.') { p++; while (*p >= '0' && *p <= '9') { p++; digits++; } }
  if (!digits) return 0;
  if (*p == 'e' || *p == 'E') {
    p++;
    if (*p == '+' || *p == '-') p++;
    if (!(*p >= '0' && *p <= '9')) return 0;
    while (*p >= '0' && *p <= '9') p++;
  }
  if (*p) return 0;
  *out = strtod(val, NULL);
  return 1;
}

static int parse_signal(const char *val)
{
  static const struct { const char *name; int sig; } names[] = {
    { "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "PROF", SIGPROF },
    { "URG", SIGURG }, { "WINCH", SIGWINCH }, { "HUP", SIGHUP } };
  const char *n = strncmp(val, "SIG", 3) == 0 ? val + 3 : val;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(n, names[i].name) == 0) return names[i].sig;
  uintnat v;
  if (parse_uint(val, 1, 64, &v) && v != SIGKILL && v != SIGSTOP
      && v != SIGSEGV && v != SIGBUS && v != SIGFPE && v != SIGILL)
    return (int)v;
  return 0;
}

static void set_param(const char *key, const char *val)
{
  uintnat u;
  if (strcmp(key, "memprof") == 0) {
    free(params.path);
    params.path = val[0] ? strdup(val) : NULL;
  } else if (strcmp(key, "memprof_rate") == 0) {
    double r;
    /* 0: no sampling, for a trace of heap snapshots only */
    if (!parse_rate(val, &r) || !(r >= 0.0 && r <= 1.0))
      bad_param(key, val, "expected a sampling rate in [0, 1], e.g. 1e-5 (0: snapshots only)");
    else params.rate = r;
  } else if (strcmp(key, "memprof_frames") == 0) {
    if (parse_uint(val, 1, MPT_MAX_FRAMES, &u)) params.frames = u;
    else bad_param(key, val, "expected a callstack depth from 1 to 4096");
  } else if (strcmp(key, "memprof_verify") == 0) {
    if (parse_uint(val, 0, 2, &u)) params.verify = u;
    else bad_param(key, val, "expected 0, 1 or 2");
  } else if (strcmp(key, "memprof_callbacks") == 0) {
    if (parse_uint(val, 0, MAX_CALLBACK_FRAMES, &u)) params.callbacks = u;
    else bad_param(key, val, "expected a number of frames from 0 to 256 (0: no callback frames)");
  } else if (strcmp(key, "memprof_compress") == 0) {
    if (parse_uint(val, 0, 1, &u)) params.compress = u;
    else bad_param(key, val, "expected 0 or 1");
  } else if (strcmp(key, "memprof_seed") == 0) {
    if (parse_uint(val, 0, (uintnat)-1, &u)) { params.seed = u; params.seeded = 1; }
    else bad_param(key, val, "expected an integer from 0 to 2^64-1");
  } else if (strcmp(key, "memprof_signal") == 0) {
    int s = parse_signal(val);
    if (s) params.signal = s;
    else bad_param(key, val, "expected USR1, USR2, PROF, URG, WINCH, HUP or a signal number");
  } else if (strcmp(key, "memprof_flush_ms") == 0) {
    if (parse_uint(val, 1, 86400000, &u)) params.flush_ms = u;
    else bad_param(key, val, "expected milliseconds from 1 to 86400000");
  } else if (strcmp(key, "memprof_snapshot_at_exit") == 0) {
    if (parse_uint(val, 0, 1, &u)) caml_heap_snapshot_params.at_exit = (int)u;
    else bad_param(key, val, "expected 0 or 1");
  } else if (strcmp(key, "memprof_snapshot_signal") == 0) {
    int s = parse_signal(val);
    if (s) caml_heap_snapshot_params.signal = s;
    else bad_param(key, val, "expected USR1, USR2, PROF, URG, WINCH, HUP or a signal number");
  } else if (strcmp(key, "memprof_snapshot_every_s") == 0) {
    if (parse_uint(val, 1, 86400 * 365, &u)) caml_heap_snapshot_params.every_s = u;
    else bad_param(key, val, "expected seconds from 1 to 31536000");
  } else if (strcmp(key, "memprof_snapshot_every_cycles") == 0) {
    if (parse_uint(val, 1, (uintnat)1 << 40, &u)) caml_heap_snapshot_params.every_cycles = u;
    else bad_param(key, val, "expected a number of major cycles from 1 to 2^40");
  } else if (strcmp(key, "memprof_snapshot_fork") == 0) {
    if (parse_uint(val, 0, 1, &u)) caml_heap_snapshot_params.fork = (int)u;
    else bad_param(key, val, "expected 0 (walk in the pause) or 1 (in a forked child)");
  } else if (strcmp(key, "memprof_snapshot_sweep") == 0) {
    if (parse_uint(val, 0, 1, &u)) caml_heap_snapshot_params.sweep = (int)u;
    else bad_param(key, val, "expected 0 (walk from the roots) or 1 (sweep the heap)");
  } else {
    fprintf(stderr, "memprof: OCAMLRUNPARAM: unknown key %s ignored (known: "
            "memprof, memprof_rate, memprof_frames, memprof_compress, "
            "memprof_seed, memprof_signal, memprof_flush_ms, memprof_verify, "
            "memprof_callbacks, "
            "memprof_snapshot_at_exit, memprof_snapshot_signal, "
            "memprof_snapshot_every_s, memprof_snapshot_every_cycles, "
            "memprof_snapshot_fork, memprof_snapshot_sweep)\n", key);
  }
}

int caml_memprof_tracer_parse_option(char_os **optp)
{
  const char *opt = *optp;
  /* "memprof" alone (before ',' or the end) is ours too: upstream would
     read it as m (custom_minor_ratio) with a garbage value. */
  if (strncmp(opt, "memprof", 7) != 0
      || (opt[7] != '=' && opt[7] != '_' && opt[7] != ',' && opt[7] != 0))
    return 0;
  const char *eq = strchr(opt, '='), *comma = strchr(opt, ',');
  const char *stop = comma ? comma : opt + strlen(opt);
  char key[64], val[4096];
  if (!eq || eq > stop) {
    size_t n = (size_t)(stop - opt) < sizeof key ? (size_t)(stop - opt) : sizeof key - 1;
    memcpy(key, opt, n); key[n] = 0;
    fprintf(stderr, "memprof: OCAMLRUNPARAM: ignoring %s: expected %s=VALUE%s\n",
            key, key, strcmp(key, "memprof") == 0 ? " (memprof=PATH traces)" : "");
  } else if ((size_t)(eq - opt) >= sizeof key || (size_t)(stop - eq - 1) >= sizeof val) {
    fprintf(stderr, "memprof: OCAMLRUNPARAM: ignoring an over-long memprof option\n");
  } else {
    memcpy(key, opt, (size_t)(eq - opt)); key[eq - opt] = 0;
    memcpy(val, eq + 1, (size_t)(stop - eq - 1)); val[stop - eq - 1] = 0;
    set_param(key, val);
  }
  *optp = (char_os *)(comma ? comma + 1 : stop);
  return 1;
}

/* ------------------------------------------------------------------ */
/* Global state                                                        */

/* Published with release by the domain that creates a slot's state, read
   with acquire by the flusher and by stop/flush from any thread (a race
   found by `make tsan`). */
static _Atomic(tracer_domain *) domains[Max_domains_max];
#define DOMAIN_AT(i) atomic_load_explicit(&domains[i], memory_order_acquire)
/* One more than the highest slot a domain was created in (with a state,
   unless its allocation failed): loops over the slots stop there
   (Max_domains_max is 4096). */
static atomic_int slots_used;
atomic_int caml_memprof_tracer_active;    /* tracing now                  */
atomic_uintnat caml_memprof_tracer_generation; /* one per trace file        */
/* Bytecode freed by the toplevel (Meta.release_bytecode, after a phrase
   that defines no function): a later phrase's code may take its address,
   and then a return address means another location.  Each stream empties
   its tables of code addresses when this count moves (bytecode only:
   native code is never freed). */
static atomic_uintnat code_releases;
static double lambda, one_log1m;          /* 1 / log(1 - lambda)          */
static uint32_t max_frames;
static uint32_t callback_frames;          /* memprof_callbacks, this trace */
_Atomic uint64_t caml_memprof_tracer_next_id_block = 1; /* see fresh_id */
static pthread_mutex_t control_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t orphan_lock = PTHREAD_MUTEX_INITIALIZER;
static entry_table orphans;               /* under orphan_lock            */
static uintnat orphans_gen;               /* generation of [orphans]      */
static atomic_int orphans_pending;        /* orphans.len > 0, lock-free   */
/* Streams whose domains left [orphans]: their last events (the ALLOCs of
   the orphans among them) may still be in the slot's buffer. */
static uint64_t orphan_origins[(Max_domains_max + 63) / 64];
static uint64_t carried_samples, carried_lost; /* from domains gone */
static char *exe_name;
static char *command_line;
static volatile sig_atomic_t toggle_requested;
static int handlers_installed;
static int flusher_started;

/* ------------------------------------------------------------------ */
/* Random numbers: geometric gaps, drawn GEOM_BATCH at a time          */

/* Each domain draws its gaps in batches from GEOM_LANES independent
   xoshiro128+ generators, one per lane, in three loops without branches
   or calls (uniform variates, their logarithms, the gaps) that the
   compiler can turn into vector code; a gap then costs a load.  A batch
   is GEOM_BATCH / GEOM_LANES rounds of the lanes, in order: the same
   gaps as that many batches of one round.  The lanes are independent
   and each gives independent uniform variates, so the gaps are
   independent and geometric: the same Poisson process as one generator
   drawing them one at a time. */

static inline uint32_t rotl32(uint32_t x, int k) { return (x << k) | (x >> (32 - k)); }

/* The lanes' states from splitmix64, lane by lane (the same values as a
   loop over the 256 words in that order with i % 4 and i / 4 for
   indices, which GCC compiled to 9,000 instructions at every domain's
   start: 2 to 4 per sample in the bench's shorter runs). */
static void rng_seed(tracer_domain *d, uint64_t seed)
{
  for (int i = 0; i < GEOM_LANES; i++)
    for (int w = 0; w < 4; w++) {
      uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      d->rng[w][i] = (uint32_t)(z ^ (z >> 31)) | (w == 0);  /* never all 0 */
    }
  d->geom_next = GEOM_BATCH;
}

/* log(u) for u in (0, 1) in single precision (relative error about 1e-7,
   the variate's own resolution): u = m 2^e with m in [2/3, 4/3), split by
   integer arithmetic on the bits (no branch, for vector code), log m =
   2 atanh(t), t = (m - 1) / (m + 1), |t| < 0.2, by its series to t^11. */
static inline float log_unit(float u)
{
  uint32_t bits;
  memcpy(&bits, &u, sizeof bits);
  int32_t e = ((int32_t)bits - 0x3f2aaaab) >> 23;
  bits -= (uint32_t)e << 23;
  float m;
  memcpy(&m, &bits, sizeof m);
  float t = (m - 1.0f) / (m + 1.0f), t2 = t * t;
  float p = 1.0f / 11;
  p = p * t2 + 1.0f / 9; p = p * t2 + 1.0f / 7; p = p * t2 + 1.0f / 5;
  p = p * t2 + 1.0f / 3; p = p * t2 + 1.0f;
  return 2.0f * t * p + (float)e * 0.69314718f;
}

/* d->quick_gen, after a change of the stream's generation, of its
   batch's or of its packing. */
static inline void update_quick_gen(tracer_domain *d)
{
  d->quick_gen = d->gen == d->geom_gen && d->enc.pack_min_fresh == UINT32_MAX
    && callback_frames == 0 ? d->gen : (uintnat)-1;
}

/* One round of the lanes: a uniform variate in (0, 1) from each, into
   [f] (called once per round: in a loop of rounds, GCC 12 at -O2 no
   longer vectorised it). */
static inline __attribute__((always_inline)) void
draw_uniforms(uint32_t rng[4][GEOM_LANES], float *f)
{
  uint32_t *s0 = rng[0], *s1 = rng[1], *s2 = rng[2], *s3 = rng[3];
  for (int i = 0; i < GEOM_LANES; i++) {
    uint32_t r = s0[i] + s3[i], t = s1[i] << 9;
    s2[i] ^= s0[i]; s3[i] ^= s1[i]; s1[i] ^= s2[i]; s0[i] ^= s3[i];
    s2[i] ^= t; s3[i] = rotl32(s3[i], 11);
    /* 24 random bits and half a step, never 0 (log 0). */
    f[i] = (float)(int32_t)(r >> 8) * 0x1.0p-24f + 0x1.0p-25f;
  }
}

/* Compiled twice, for x86-64's baseline and for AVX2 (twice as many lanes
   per instruction), chosen at load time: the same arithmetic, so the same
   gaps either way.  Not under a sanitizer: the choice (an ifunc resolver)
   runs while the program is relocated, before the sanitizer's run-time is
   up, and its instrumented code crashed every TSan program at start. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) \
    && defined(__linux__) && !defined(__SANITIZE_THREAD__) \
    && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("avx2", "default")))
#endif
static void refill_gaps(tracer_domain *d)
{
  float *f = d->geom_scratch;
  _Static_assert(GEOM_BATCH == 4 * GEOM_LANES, "four rounds a batch");
  draw_uniforms(d->rng, f);
  draw_uniforms(d->rng, f + GEOM_LANES);
  draw_uniforms(d->rng, f + 2 * GEOM_LANES);
  draw_uniforms(d->rng, f + 3 * GEOM_LANES);
  for (int i = 0; i < GEOM_BATCH; i++) f[i] = log_unit(f[i]);
  /* log u / log(1 - lambda) >= 0, at most 17.4 / lambda (u >= 2^-25).
     Below 2^31 (lambda above 1e-8), the same double product is truncated
     to 32 bits, which SSE2 does two at a time (cvttpd2dq); to 64 bits it
     is one at a time. */
  if (-one_log1m < 0x1p31 / 17.5) {
    for (int i = 0; i < GEOM_BATCH; i++)
      d->geom[i] = 1 + (uintnat)(uint32_t)(int32_t)((double)f[i] * one_log1m);
  } else {
    for (int i = 0; i < GEOM_BATCH; i++) {
      double g = (double)f[i] * one_log1m;
      d->geom[i] = g < 1e18 ? 1 + (uintnat)g : (uintnat)1e18;
    }
  }
  d->geom_next = 0;
  d->geom_gen = atomic_load_relaxed(&caml_memprof_tracer_generation);
  update_quick_gen(d);
}

/* Words up to and including the next sampled word: Geometric(lambda).
   A batch drawn for an earlier trace may be for another rate. */
static inline uintnat rand_geom(tracer_domain *d)
{
  if (d->geom_next == GEOM_BATCH
      || d->geom_gen != atomic_load_relaxed(&caml_memprof_tracer_generation))
    refill_gaps(d);
  return d->geom[d->geom_next++];
}

/* ------------------------------------------------------------------ */
/* Streams: buffers, flushing, location tables                         */

static void flush_locked(tracer_domain *d)
{
  size_t used = mpt_enc_used(&d->enc);
  if (used == 0) return;
  if (caml_trace_writer_chunk(d->stream, d->buf, used, d->zstate,
                              d->zbuf, d->zcap) < 0)
    atomic_store(&caml_memprof_tracer_active, 0); /* the writer said why, once */
  d->small_ticks = 0;
  mpt_enc_reset_buffer(&d->enc, d->buf + MPT_CHUNK_HEADER_BYTES,
                       BUFFER_BYTES - MPT_CHUNK_HEADER_BYTES);
}

static inline int ensure_space(tracer_domain *d, size_t n)
{
  if (mpt_enc_space(&d->enc) < n) flush_locked(d);
  return mpt_enc_space(&d->enc) >= n;
}

/* Make [d]'s stream state belong to the current trace.  Returns 0 if the
   buffers cannot be allocated (the sample is then lost). */
static int reset_stream(tracer_domain *d, uintnat gen);
static uint32_t define_location(void *ctx, backtrace_slot slot);
static inline int ensure_stream(tracer_domain *d)
{
  uintnat gen = atomic_load(&caml_memprof_tracer_generation);
  if (d->gen == gen && d->buf) return 1;
  return reset_stream(d, gen);
}

static int reset_stream(tracer_domain *d, uintnat gen)
{
  if (!d->buf) {
    d->zcap = mpt_frame_bound(BUFFER_BYTES);
    d->buf = malloc(BUFFER_BYTES);
    d->zbuf = malloc(d->zcap);
    d->enc_stack = malloc(2 * MPT_MAX_WINDOW * sizeof(uint32_t));
    d->ids = malloc((MPT_MAX_FRAMES + 1) * sizeof(uint32_t));
    if (!d->buf || !d->zbuf || !d->enc_stack || !d->ids) {
      free(d->buf); free(d->zbuf); free(d->enc_stack); free(d->ids);
      d->buf = NULL;
      return 0;
    }
    /* NULL (out of memory) is fine: each frame then clears its own. */
    d->zstate = mpt_frame_state_new();
  }
  mpt_enc_init(&d->enc, d->buf + MPT_CHUNK_HEADER_BYTES,
               BUFFER_BYTES - MPT_CHUNK_HEADER_BYTES, d->enc_stack, MPT_MAX_FRAMES);
  /* Twice the room of a window's stack (STACK_WINDOW, MPT_MAX_WINDOW
     frames, twice an ALLOC's): a cut stack's window moves where the
     previous stack starts rather than its entries (about 3,500
     instructions a cut sample on deep_list in bench/). */
  mpt_enc_stack_room(&d->enc, d->enc_stack, 2 * MPT_MAX_WINDOW);
  /* Packed frames save bytes on deep recursion for about as many
     instructions again as writing the frames plain.  Below 1e-4 a sample
     is rare enough that its bytes weigh more (a trace's size then grows
     with the run's length more than with its samples); from 1e-4 up,
     its instructions do. */
  if (lambda >= PACK_RATE_MAX) d->enc.pack_min_fresh = UINT32_MAX;
  if (d->locs) memset(d->locs, 0, d->loc_cap * sizeof *d->locs);
  if (d->strs) memset(d->strs, 0, d->str_cap * sizeof *d->strs);
  d->loc_used = d->loc_count = d->str_used = d->str_count = 0;
  d->small_ticks = 0;
  d->code_releases = atomic_load_relaxed(&code_releases);
  caml_memprof_callstack_cache_clear(&d->frames);
  /* Stacks are captured and written up to 4 times the cap (at most
     MPT_MAX_FRAMES, d->ids's room); readers show the innermost
     max_frames of each (the header's), cut (format version 6).  Cut at
     the cap itself, a sample whose stack changed depth wrote the frames
     that entered the kept window again, and its walk found fewer frames
     of the previous capture: on deep_list in bench/ (4,000 frames, 1e-3)
     a cut sample cost 30,500 instructions against 22,000 whole.  Written
     to 4 times the cap, a stack that deep costs what a whole one does
     and is written as one, but for the reader's cut. */
  uint32_t capture_max = 4 * max_frames < MPT_MAX_FRAMES ? 4 * max_frames
                                                         : MPT_MAX_FRAMES;
  caml_memprof_callstack_configure(&d->frames, d->ids, capture_max,
                                   define_location, d, &d->enc.prev_stack);
  d->verify = params.verify != 0;
  d->trap_capture_pending = 0;
  d->young.len = d->major.len = 0;
  d->samples = d->lost = 0;
  d->next_id = d->id_end = 0;
  d->last_stats = 0;
  d->samples_at_stats = 0;
  d->gen = gen;
  update_quick_gen(d);
  return 1;
}

static inline uintnat hash_word(uintnat x)
{
  x ^= x >> 33; x *= 0xff51afd7ed558ccdull; x ^= x >> 33;
  return x;
}

/* Grow an open-addressing table of [T] to [cap] slots (64 at first: it
   is used only to define locations and strings); 0 on failure. */
#define REHASH(T, tab, cap, count, keyexpr)                                 \
  do {                                                                       \
    uint32_t ncap = (cap) ? 2 * (cap) : 64;                                  \
    T *nt = calloc(ncap, sizeof(T));                                         \
    if (!nt) return 0;                                                       \
    for (uint32_t i = 0; i < (cap); i++)                                     \
      if ((tab)[i].id) {                                                     \
        uintnat h = hash_word(keyexpr((tab)[i].key)) & (ncap - 1);           \
        while (nt[h].id) h = (h + 1) & (ncap - 1);                           \
        nt[h] = (tab)[i];                                                    \
      }                                                                      \
    free(tab); (tab) = nt; (cap) = ncap;                                     \
  } while (0)

/* FNV-1a, then hash_word mixes it. */
static uintnat string_hash(const char *s)
{
  uintnat h = 0xcbf29ce484222325ull;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
  return h;
}

/* String id of a debuginfo string, defining it in the stream on first
   use.  Keyed by content: the debug information of different functions
   has copies of the same name (long_lived in bench/ defined
   "Long_lived.(fun)" twice among its 15 strings).  Looked up only when a
   location is defined.  The table keeps upstream's pointers, forgotten
   when code is released (forget_code_addresses). */
static uint32_t string_id(tracer_domain *d, const char *s)
{
  if (!s) return 0;
  if (2 * (d->str_used + 1) > d->str_cap)
    REHASH(str_slot, d->strs, d->str_cap, d->str_used, string_hash);
  uintnat h = hash_word(string_hash(s)) & (d->str_cap - 1);
  while (d->strs[h].id) {
    if (strcmp(d->strs[h].key, s) == 0) return d->strs[h].id;
    h = (h + 1) & (d->str_cap - 1);
  }
  size_t len = strlen(s);
  if (!ensure_space(d, MPT_MAX_STRING + 32)) return 0;
  uint32_t id = ++d->str_count;
  d->str_used++;
  d->strs[h].key = s; d->strs[h].id = id;
  mpt_enc_string(&d->enc, id, s, len);
  return id;
}

#ifndef NATIVE_CODE
/* The code released since the stream last looked (see code_releases):
   every code address is looked up and decoded again.  The strings of
   its debug information are not looked at again either: upstream (5.3,
   5.4) keeps them when it releases the code, but nothing promises it,
   and string_id compares their contents.  The stream's definitions
   stay; a location or string used again gets a new id. */
static void forget_code_addresses(tracer_domain *d)
{
  if (d->locs) memset(d->locs, 0, d->loc_cap * sizeof *d->locs);
  if (d->strs) memset(d->strs, 0, d->str_cap * sizeof *d->strs);
  d->loc_used = d->str_used = 0;
  caml_memprof_callstack_cache_clear(&d->frames);
  d->code_releases = atomic_load_relaxed(&code_releases);
}
#endif

void caml_memprof_tracer_code_released(void)
{
  atomic_fetch_add(&code_releases, 1);
}

/* The location table's entry for [key]: its id when there is one, else 0
   and, in [*empty], the slot where loc_table_add puts it (the table has
   room for it: string_id, called in between, may flush the buffer but
   never touches this table). */
static uint32_t loc_table_find(tracer_domain *d, uintnat key, uintnat *empty)
{
  if (2 * (d->loc_used + 1) > d->loc_cap)
    REHASH(loc_slot, d->locs, d->loc_cap, d->loc_used, );
  uintnat h = hash_word(key) & (d->loc_cap - 1);
  while (d->locs[h].id) {
    if (d->locs[h].key == key) return d->locs[h].id;
    h = (h + 1) & (d->loc_cap - 1);
  }
  *empty = h;
  return 0;
}

static void loc_table_add(tracer_domain *d, uintnat h, uintnat key, uint32_t id)
{
  d->loc_used++;
  d->locs[h].key = key; d->locs[h].id = id;
}

/* Location id of a backtrace slot, decoding and defining it on first use.
   Keyed by the slot (a code address): valid while the code stays where it
   is, see forget_code_addresses. */
static uint32_t location_id(tracer_domain *d, backtrace_slot slot)
{
  uintnat key = (uintnat)slot, h;
  uint32_t known = loc_table_find(d, key, &h);
  if (known) return known;
  mpt_loc_entry_ids en[MPT_MAX_INLINED];
  uint32_t n = 0;
#ifndef NATIVE_CODE
  /* Bytecode debug information is read lazily by upstream, through OCaml
     allocations: only decode once it has been loaded (caml_sys_init). */
  if (caml_debug_info_status() == 1)
#endif
  for (debuginfo dbg = caml_debuginfo_extract(slot);
       dbg && n < MPT_MAX_INLINED; dbg = caml_debuginfo_next(dbg)) {
    struct caml_loc_info li;
    caml_debuginfo_location(dbg, &li);
    if (!li.loc_valid) break;
    en[n].file = string_id(d, li.loc_filename);
    en[n].function = string_id(d, li.loc_defname);
    en[n].line = (uint32_t)li.loc_start_lnum;
    en[n].start_char = (uint32_t)li.loc_start_chr;
    en[n].end_char = (uint32_t)li.loc_end_chr;
    n++;
  }
  if (!ensure_space(d, MPT_MAX_DEF_BYTES)) return 0;
  uint32_t id = ++d->loc_count;
  loc_table_add(d, h, key, id);
  mpt_enc_location(&d->enc, id, (uint64_t)key, en, n);
  return id;
}

static uint32_t define_location(void *ctx, backtrace_slot slot)
{
  return location_id((tracer_domain *)ctx, slot);
}

/* ---- Callback frames (memprof_callbacks=N, memprof_callbacks.c) ---- */

/* The marker that ends a callback frame's location: an entry of its own,
   outermost, with no file (docs/trace-format.md, "Callback frames"). */
static const char callback_marker[] = MPT_CALLBACK_MARKER;
/* A callback's key in the location table: its code pointer, tagged so
   that it meets no backtrace slot (a frame descriptor or debuginfo
   address: data, never code, and never with bit 62 set in user space). */
#define CALLBACK_KEY(code) ((uintnat)(code) | ((uintnat)1 << 62))
/* How far from a function's entry its first call or allocation point is
   looked for: the longest OCaml functions are a few kB before their
   first call; beyond, the callback has no location. */
#define CALLBACK_SEARCH_BYTES 16384
/* MAX_CALLBACK_FRAMES (memprof_callbacks' largest value) is defined with
   the parameters. */

/* The location id of the callback frame for the function at [code]: the
   function's own debug information (the outermost entry of its first
   call or allocation point's: the function that holds the point), then
   the marker.  0 when the function has no such point or on failure (the
   frame is then left out). */
static uint32_t callback_location_id(tracer_domain *d, uintnat code)
{
  uintnat key = CALLBACK_KEY(code), h;
  uint32_t known = loc_table_find(d, key, &h);
  if (known) return known;
  backtrace_slot slot = caml_memprof_callbacks_code_slot(code, CALLBACK_SEARCH_BYTES);
  struct caml_loc_info outer = { 0 };
  for (debuginfo dbg = slot ? caml_debuginfo_extract(slot) : NULL; dbg;
       dbg = caml_debuginfo_next(dbg)) {
    struct caml_loc_info li;
    caml_debuginfo_location(dbg, &li);
    if (!li.loc_valid) break;
    outer = li;
  }
  uint32_t id = 0;
  if (outer.loc_valid) {
    mpt_loc_entry_ids en[2];
    en[0].file = string_id(d, outer.loc_filename);
    en[0].function = string_id(d, outer.loc_defname);
    en[0].line = (uint32_t)outer.loc_start_lnum;
    en[0].start_char = (uint32_t)outer.loc_start_chr;
    en[0].end_char = (uint32_t)outer.loc_end_chr;
    en[1].file = string_id(d, "");
    en[1].function = string_id(d, callback_marker);
    en[1].line = en[1].start_char = en[1].end_char = 0;
    if (en[0].file && en[0].function && en[1].function
        && ensure_space(d, MPT_MAX_DEF_BYTES)) {
      id = ++d->loc_count;
      mpt_enc_location(&d->enc, id, (uint64_t)code, en, 2);
    }
  }
  /* A function with no location is remembered too (UINT32_MAX: none):
     its search is not done again. */
  loc_table_add(d, h, key, id ? id : UINT32_MAX);
  return id;
}

/* The sample's stack, [n] location ids in d->ids, with the callback
   frames of the closures its innermost frames hold, each inserted just
   inside the frame that holds it: into d->cb_ids, returning its length
   (n alone when none is found or there is no room).  [from_caml]: the
   sample is an allocation from OCaml, in caml_call_gc (its registers are
   in Caml_state->gc_regs). */
static uint32_t add_callback_frames(tracer_domain *d, uint32_t n, int from_caml)
{
  caml_memprof_held_closure held[CAML_MEMPROF_MAX_HELD_CLOSURES];
  uint32_t scanned = n < callback_frames ? n : callback_frames;
  int m = caml_memprof_callbacks_scan(scanned, from_caml ? Caml_state->gc_regs : NULL,
                                      held, CAML_MEMPROF_MAX_HELD_CLOSURES);
  if (m == 0) return n;
  if (!d->cb_ids && !(d->cb_ids = malloc(MPT_MAX_FRAMES * sizeof(uint32_t))))
    return n;
  uint32_t len = 0, i = 0;
  /* held[] is in frame order; within a frame, a closure comes before the
     closures of its environment, which go inside it: each frame's group
     is taken from its end. */
  for (int g = 0, next; g < m; g = next) {
    for (next = g + 1; next < m && held[next].frame == held[g].frame; next++) {}
    for (int j = next - 1; j >= g; j--) {
      uint32_t loc = callback_location_id(d, held[j].code);
      if (loc == 0 || loc == UINT32_MAX || held[j].frame >= n) continue;
      if (n + (len - i) + 1 > MPT_MAX_FRAMES) break;
      while (i < held[j].frame) d->cb_ids[len++] = d->ids[i++];
      d->cb_ids[len++] = loc;
    }
  }
  while (i < n) d->cb_ids[len++] = d->ids[i++];
  return len;
}

/* Frame [i] (innermost first) of the stack just captured, [n] ids and
   [common] frames shared: past the ids, the encoder's previous stack
   (kept outermost first) as the capture's window, if any, moves it. */
static uint32_t captured_frame(tracer_domain *d, int n, int common, int i)
{
  if (i < n) return d->ids[i];
  caml_memprof_callstack_cache *c = &d->frames;
  uint32_t len = d->enc.prev_len;
  uint32_t drop = c->window ? c->window_drop : 0;
  uint32_t added = c->window ? c->window_n : 0;
  if (drop > len) drop = len;
  uint32_t keep = len - drop;
  uint32_t x = keep + added - (uint32_t)common + (uint32_t)(i - n);
  return x < keep ? d->enc.prev_stack[len - 1 - x]
                  : d->ids[c->window_at + x - keep];
}

/* memprof_verify=1, after the record of a stack that verify_callstack
   checked: the encoder's previous stack, what the next record's shared
   frames count from (and what a reader holds then), must be upstream's
   stack too.  It is written by the encoder from what the capture gave
   (a window, then the fresh ids and the common count), so this checks
   the encoder's side of that exchange (a window it could not hold lost
   the root frames of every later stack, and the runtime's check of the
   capture alone did not see it). */
static void verify_encoded_stack(tracer_domain *d)
{
  if (d->ref_ids == NULL) return;       /* verify_callstack had no room */
  uint32_t len = d->enc.prev_len;
  int ok = (int)len == d->ref_len;
  for (uint32_t i = 0; ok && i < len; i++)
    ok = d->enc.prev_stack[len - 1 - i] == d->ref_ids[i];
  if (!ok)
    fprintf(stderr, "memprof: verify: the encoder's previous stack differs "
            "from caml_get_callstack's (%u and %d frames)\n",
            len, d->ref_len);
}

/* memprof_verify=1: the stack just captured must be upstream's.  With
   [common] >= 0 it is d->ids then the outermost [common] frames of the
   encoder's previous stack, moved by the capture's window. */
static void verify_callstack(tracer_domain *d, int n, int common,
                             int truncated, ptrdiff_t alloc_idx)
{
  if (!d->ref_ids && !(d->ref_ids = malloc(MPT_MAX_FRAMES * sizeof(uint32_t))))
    return;
  int ref_truncated;
  int m = caml_memprof_capture_callstack_reference(
    &d->frames, d->ref_ids, alloc_idx, &ref_truncated);
  d->ref_len = m;
  int len = n + (common > 0 ? common : 0), i = 0;
  while (i < len && i < m
         && captured_frame(d, n, common, i) == d->ref_ids[i])
    i++;
  if (i != len || i != m || truncated != ref_truncated)
    fprintf(stderr, "memprof: verify: the callstack walk differs from "
            "caml_get_callstack at frame %d (%d and %d frames, cut %d and %d)\n",
            i, len, m, truncated, ref_truncated);
}

static inline int push_entry(entry_table *t, value block, uint64_t id)
{
  if (t->len == t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 256;
    entry *n = realloc(t->t, cap * sizeof *n);
    if (!n) return 0;
    t->t = n; t->cap = cap;
  }
  t->t[t->len].block = block;
  t->t[t->len].id = id;
  t->len++;
  return 1;
}

/* Record one sampled block.  Called with no lock held; never allocates
   on the OCaml heap and never runs OCaml code. */
static inline void record(tracer_domain *d, value block, uintnat wosize,
                   uintnat nsamples, enum mpt_source src,
                   ptrdiff_t alloc_idx, int young)
{
  stream_lock(d);
  if (!atomic_load(&caml_memprof_tracer_active) || !ensure_stream(d)) goto out;
  /* The capture may fail to reach the encoder (not_encoded). */
  caml_memprof_callstack_sync_encoder(&d->frames);
#ifndef NATIVE_CODE
  if (d->code_releases != atomic_load_relaxed(&code_releases))
    forget_code_addresses(d);
#endif
  caml_memprof_capture cap = caml_memprof_capture_callstack(&d->frames, alloc_idx);
  int n = cap.n, truncated = cap.truncated, common = cap.common;
  if (n < 0) { d->lost += nsamples; goto out; }
  if (d->verify) verify_callstack(d, n, common, truncated, alloc_idx);
  /* With callback frames, every stack goes to the encoder whole (common
     is -1: see caml_memprof_callstack_not_encoded below). */
  const uint32_t *stack = d->ids;
  uint32_t len = (uint32_t)n;
  if (callback_frames && common < 0 && n > 0) {
    len = add_callback_frames(d, (uint32_t)n, alloc_idx >= 0);
    if (len != (uint32_t)n) stack = d->cb_ids;
  }
  uint64_t id;
  /* An untracked sample would never be collected: drop it instead. */
  if (!ensure_space(d, sample_room(d))
      || !push_entry(young ? &d->young : &d->major, block, id = fresh_id(d))) {
    caml_memprof_callstack_not_encoded(&d->frames);
    d->lost += nsamples;
    goto out;
  }
  if (d->frames.window) {
    mpt_enc_stack_window(&d->enc, d->frames.window_drop,
                         d->ids + d->frames.window_at, d->frames.window_n);
    d->frames.window = 0;
  }
  if (common >= 0)
    mpt_enc_alloc_shared(&d->enc, caml_trace_writer_now(), id, wosize,
                         (uint32_t)nsamples, src, truncated, d->ids,
                         (uint32_t)n, (uint32_t)common);
  else
    mpt_enc_alloc(&d->enc, caml_trace_writer_now(), id, wosize,
                  (uint32_t)nsamples, src, truncated, stack, len);
  /* The encoder's previous stack has the callback frames, the capture's
     previous stack has not: the next capture gives its stack whole. */
  if (callback_frames) caml_memprof_callstack_not_encoded(&d->frames);
  else if (d->verify) verify_encoded_stack(d);
  d->samples += nsamples;
 out:
  stream_unlock(d);
}

/* ------------------------------------------------------------------ */
/* Sampling hooks                                                      */

/* The trigger is a position in the minor heap: valid only until this
   domain's minor heap is emptied (or replaced).  Between two emptyings
   young_ptr only goes down (an allocation undone in caml_alloc_small_dispatch
   comes back at most to where it started), so a young_ptr above the point
   where the trigger was drawn means the heap was emptied since.  The global
   minor-collection count alone is not enough: the STW leader increments it
   before the other domains have stopped, so a domain may still draw in its
   old heap with the new count.  The count does catch a heap resized in
   place (Gc.set), where young_ptr may land below the old draw point. */
static void draw_minor_trigger(caml_domain_state *s, tracer_domain *d)
{
  uintnat geom = rand_geom(d);
  trigger_set(s, (uintnat)(s->young_ptr - s->young_start) > geom
                 ? s->young_ptr - (geom - 1) : s->young_start);
  trigger_drawn(s, d);
}

void caml_memprof_tracer_set_trigger(caml_domain_state *s)
{
  tracer_domain *d = s->memprof_tracer;
  if (d == NULL || !atomic_load_relaxed(&caml_memprof_tracer_active)) {
    trigger_set(s, s->young_start);
    if (d) d->trigger_valid = 0;
    return;
  }
  if (d->parked) {
    trigger_set(s, s->young_start);
    return;
  }
  value *t = trigger_get(s);
  /* A pending sample point stays where it is, even when young_ptr is
     already past it (upstream's memprof is handling the same allocation
     first): we sample it right after.  Only a minor collection or a new
     minor heap invalidates it; redrawing then is exact, the gaps being
     memoryless. */
  if (d->trigger_valid && s->young_ptr <= d->trigger_drawn_at
      && d->trigger_minor == atomic_load_relaxed(&caml_minor_collections_count)
      && t >= s->young_start && t <= s->young_end) return;
  draw_minor_trigger(s, d);
}

/* Statmemprof suspends itself while it captures callstacks and runs its
   callbacks (and on a thread switch to a thread that is doing so); it
   does not sample those allocations.  Neither do we: they would take our
   pending sample point with the stack of the allocation that statmemprof
   interrupted, and then die (false COLLECTs of the allocating site).  So
   while statmemprof is suspended our trigger is parked at young_start, and
   the remaining distance to the next sample is put back when it resumes:
   the Poisson process over the program's own allocations is unchanged.
   Statmemprof resumes before re-raising a callback's exception, so a
   cancelled allocation unparks too.
   One correction: for an allocation from OCaml that statmemprof samples,
   caml_memprof_sample_young undoes the allocation, parks us, runs the
   callbacks, redoes the allocation and only then unparks us, so the
   remaining distance was measured from the block's top but is put back
   from its base: after_statmemprof_sample (called only when the
   allocation was redone) moves the trigger up by the block's size. */
void caml_memprof_tracer_statmemprof_suspended(caml_domain_state *s, int on)
{
  tracer_domain *d = s->memprof_tracer;
  if (d == NULL || on == d->parked) return;
  if (on) {
    d->park_gap = trigger_get(s) - s->young_ptr;
    d->parked = 1;
    trigger_set(s, s->young_start);
  } else {
    d->parked = 0;
    d->unparked = 1;
    if (!atomic_load_relaxed(&caml_memprof_tracer_active)) return;
    value *t = s->young_ptr + d->park_gap;
    trigger_set(s, t < s->young_start ? s->young_start : t);
    trigger_drawn(s, d);
  }
}

void caml_memprof_tracer_before_statmemprof_sample(caml_domain_state *s)
{
  tracer_domain *d = s->memprof_tracer;
  if (d) d->unparked = 0;
}

void caml_memprof_tracer_after_statmemprof_sample(caml_domain_state *s,
                                                  uintnat wosize)
{
  tracer_domain *d = s->memprof_tracer;
  if (d == NULL || !d->unparked || d->parked
      || !atomic_load_relaxed(&caml_memprof_tracer_active))
    return;
  d->unparked = 0;
  value *t = trigger_get(s) + Whsize_wosize(wosize);
  trigger_set(s, t > s->young_end ? s->young_end : t);
  trigger_drawn(s, d);
  caml_reset_young_limit(s);
}

/* Sample an allocation already performed at young_ptr, of [wosize] (a
   combined allocation of [nallocs] blocks when from OCaml), and draw the
   next sample point.  Leaves young_limit to the caller. */
static inline void sample_minor(caml_domain_state *s, tracer_domain *d,
                         uintnat wosize, int flags, int nallocs,
                         unsigned char *lens)
{
  /* The allocation is done: blocks occupy [young_ptr, young_ptr + whsize).
     Walk the sub-blocks from the highest address down, as they were
     "allocated", counting the sample points that fall in each. */
  int from_caml = (flags & CAML_FROM_CAML) != 0;
  int n = from_caml && lens ? nallocs : 1;
  intnat trigger_ofs = trigger_get(s) - s->young_ptr;
  intnat alloc_ofs = (intnat)Whsize_wosize(wosize);
  do {
    --n;
    uintnat wosz = from_caml && lens ? Wosize_encoded_alloc_len(lens[n]) : wosize;
    alloc_ofs -= (intnat)Whsize_wosize(wosz);
    if (alloc_ofs < trigger_ofs) {
      uintnat samples = 0;
      do {
        samples++;
        trigger_ofs -= (intnat)rand_geom(d);
      } while (alloc_ofs < trigger_ofs);
      record(d, Val_hp(s->young_ptr + alloc_ofs), wosz, samples, MPT_SRC_MINOR,
             from_caml ? n : -1, 1);
    }
    /* A sample point at or below young_ptr is in no lower block. */
  } while (n > 0 && trigger_ofs > 0);
  value *t = s->young_ptr + trigger_ofs;
  trigger_set(s, t < s->young_start ? s->young_start : t);
  trigger_drawn(s, d);
}

/* The end of caml_alloc_small_dispatch, after its pending actions: an
   interrupt that arrives meanwhile (a signal recorded during the sample)
   is kept in young_limit by reset_young_limit_after_sample, where
   caml_reset_young_limit's exchange would drop it, leaving only
   action_pending, which the program's polls do not look at: a signal
   handler then waited for the next minor collection or C call, forever
   in a loop that only polls (testsuite/programs/signal_window.ml). */
void caml_memprof_tracer_sample_young(caml_domain_state *s, uintnat wosize,
                                      int flags, int nallocs,
                                      unsigned char *lens)
{
  tracer_domain *d = s->memprof_tracer;
  int active = atomic_load_relaxed(&caml_memprof_tracer_active);
  if (d == NULL || !active || !(flags & CAML_DO_TRACK)) {
    /* Not sampled: move the trigger past this allocation. */
    if (d && active) draw_minor_trigger(s, d);
    else caml_memprof_tracer_set_trigger(s);
    reset_young_limit_after_sample(s);
    return;
  }
  sample_minor(s, d, wosize, flags, nallocs, lens);
  reset_young_limit_after_sample(s);
}

#ifdef CAML_MEMPROF_TRAP
/* memprof_verify=1: compare the stack of the trap's last sample with
   upstream's walk (the trap cannot call it). */
static void verify_trap_capture(tracer_domain *d)
{
  stream_lock(d);
  d->trap_capture_pending = 0;
  caml_memprof_callstack_sync_encoder(&d->frames);
  verify_callstack(d, d->trap_capture.n, d->trap_capture.common,
                   d->trap_capture.truncated, d->trap_alloc_idx);
  stream_unlock(d);
}
#endif

/* The fast path.  When our sample point is the only reason the
   allocation left the allocation fast path (only_the_sample_point),
   caml_alloc_small_dispatch's round trip (undoing the allocation, running
   pending actions, redoing it) has nothing to do, and the sample is taken
   right here.
   Called by caml_garbage_collection for allocations from OCaml, before it
   would call caml_alloc_small_dispatch (about 10 instructions per sample
   fewer than from the dispatch), and at the start of caml_alloc_small_
   dispatch for the others (Alloc_small from C, and OCaml's when we return
   0 here: the conditions are the same, the second call returns 0 too).
   Where the sample trap is built (memprof_trap.h), an allocation from
   OCaml comes here when the trap could not take its sample: this notes
   the allocation point's lengths for the trap's next time. */
int caml_memprof_tracer_sample_fast(caml_domain_state *s, uintnat wosize,
                                    int flags, int nallocs,
                                    unsigned char *lens)
{
  tracer_domain *d = s->memprof_tracer;
#ifdef CAML_MEMPROF_TRAP
  if (d != NULL && d->trap_capture_pending && (flags & CAML_FROM_CAML)) {
    /* memprof_verify=1: the trap took this allocation's sample and came
       here (caml_call_gc's ordinary path) for the comparison only.  The
       block stays where it is: caml_alloc_small_dispatch, which may undo
       and redo the allocation elsewhere, is not called. */
    verify_trap_capture(d);
    return 1;
  }
  /* Alloc_small from C: the trap's quick sample, when it can take it
     (memprof_verify=1: then verified here). */
  if (flags == CAML_DO_TRACK) {
    int taken = caml_memprof_tracer_sample_c(s, wosize);
    if (taken == 2) verify_trap_capture(d);
    if (taken) return 1;
  }
#endif
  if (!(flags & CAML_DO_TRACK) || !only_the_sample_point(s, d)) return 0;
  /* Allocations from OCaml (caml_garbage_collection's call) get a copy of
     sample_minor where flags and lens are known. */
  if (flags == (CAML_DO_TRACK | CAML_FROM_CAML) && lens != NULL) {
#ifdef CAML_MEMPROF_TRAP
    char *sp = First_frame((char *)s->current_stack->sp);
    stream_lock(d);
    caml_memprof_callstack_note_alloc(&d->frames, Saved_return_address(sp),
                                      lens - 1);
    stream_unlock(d);
#endif
    sample_minor(s, d, wosize, CAML_DO_TRACK | CAML_FROM_CAML, nallocs, lens);
  } else {
    sample_minor(s, d, wosize, flags, nallocs, lens);
  }
  reset_young_limit_after_sample(s);
  return 1;
}

/* The sample points in a block of caml_memprof_tracer_sample_block (or
   the countdown drawn for a new trace), out of line: the common cases,
   tracing off or no point in the block, then save no register (with
   record inlined here, they saved six). */
static __attribute__((noinline)) void
sample_block_points(tracer_domain *d, value block, size_t allocated_words,
                    size_t sampled_words, int source)
{
  uintnat gen = atomic_load_relaxed(&caml_memprof_tracer_generation);
  if (d->countdown_gen != gen) {
    d->countdown = rand_geom(d); d->countdown_gen = gen;
    if (sampled_words < d->countdown) { d->countdown -= sampled_words; return; }
  }
  uintnat rem = sampled_words - d->countdown, samples = 1, g;
  while ((g = rand_geom(d)) <= rem) { rem -= g; samples++; }
  d->countdown = g - rem;
  int young = Is_young(block);
  enum mpt_source src =
    source == CAML_MEMPROF_SRC_MARSHAL ? MPT_SRC_MARSHAL
    : source == CAML_MEMPROF_SRC_CUSTOM ? MPT_SRC_CUSTOM
    : young ? MPT_SRC_MINOR : MPT_SRC_MAJOR;
  record(d, block, allocated_words, samples, src, -1, young);
}

void caml_memprof_tracer_sample_block(value block, size_t allocated_words,
                                      size_t sampled_words, int source)
{
  if (!atomic_load_relaxed(&caml_memprof_tracer_active)) return;
  tracer_domain *d = Caml_state->memprof_tracer;
  if (d == NULL || d->parked) return;     /* see statmemprof_suspended */
  if (sampled_words < d->countdown
      && d->countdown_gen == atomic_load_relaxed(&caml_memprof_tracer_generation)) {
    d->countdown -= sampled_words;
    return;
  }
  sample_block_points(d, block, allocated_words, sampled_words, source);
}

/* ------------------------------------------------------------------ */
/* GC hooks                                                            */

static void toggle_tracing(void);

static int stream_live(tracer_domain *d)
{
  return atomic_load(&caml_memprof_tracer_active) && d->buf
    && d->gen == atomic_load(&caml_memprof_tracer_generation);
}

/* What one tracked young block writes at most at a minor collection: the
   COLLECT_RUN pending before it (tag, id delta, count) and its PROMOTE
   (tag, id delta). */
#define MINOR_ENTRY_BYTES 32
#define MINOR_ROOM_ENTRIES 32
_Static_assert(MINOR_ENTRY_BYTES >= 1 + 10 + 3 + 1 + 10
               && MINOR_ROOM_ENTRIES * MINOR_ENTRY_BYTES
                  <= BUFFER_BYTES - MPT_CHUNK_HEADER_BYTES,
               "a minor collection's room per entry");

/* Whether the young samples [t, t + n) have ids that follow each other.
   A young table's ids strictly increase (fresh_id's order, one push per
   id), so the span of its ids says it; they follow each other unless the
   domain took a new block of ids, or lost a sample, meanwhile. */
static inline int consecutive_ids(const entry *t, size_t n)
{
  return t[n - 1].id - t[0].id == n - 1;
}

/* The longest prefix of [t, t + n), n >= 1, whose ids follow each
   other: (id[k] - id[0]) - k never decreases, so a binary search. */
static size_t consecutive_prefix(const entry *t, size_t n)
{
  if (consecutive_ids(t, n)) return n;         /* the common case */
  size_t lo = 1, hi = n - 1;      /* [t, t + lo) is, [t, t + hi + 1) not */
  while (lo < hi) {
    size_t mid = lo + (hi - lo + 1) / 2;
    if (consecutive_ids(t, mid)) lo = mid; else hi = mid - 1;
  }
  return lo;
}

/* A minor collection's young samples, when there are 1 to MPT_MAX_FATES
   and their ids follow each other: written by mpt_enc_minor_gc_fates,
   which may make their fates bits.  Returns 0, having written nothing,
   for the others. */
static int young_fates(tracer_domain *d)
{
  entry *young = d->young.t;
  size_t n = d->young.len;
  if (n == 0 || n > MPT_MAX_FATES || !consecutive_ids(young, n)) return 0;
  uint64_t fates = 0;
  for (size_t i = 0; i < n; i++)
    if (Hd_val(young[i].block) == 0) fates |= (uint64_t)1 << i;  /* forwarded */
  /* MINOR_GC, then at most one record (PROMOTE or COLLECT_RUN, with an id
     delta) per fate */
  if (!ensure_space(d, MPT_MAX_EVENT_BYTES(0) + MPT_MAX_FATES * 21))
    return 0;
  mpt_enc_minor_gc_fates(&d->enc, caml_trace_writer_now(),
                         atomic_load_relaxed(&caml_minor_collections_count),
                         young[0].id, fates, (uint32_t)n);
  for (size_t i = 0; i < n; i++)
    if (((fates >> i) & 1)
        && !push_entry(&d->major, Field(young[i].block, 0), young[i].id))
      d->lost++;
  return 1;
}

/* The collected young samples [from, to), whose ids follow each other,
   as one COLLECT_RUN (none when the span is empty). */
static inline void collect_span(tracer_domain *d, entry *from, entry *to)
{
  if (to > from)
    mpt_enc_collect_run(&d->enc, from->id, (uint32_t)(to - from));
}

/* The fates of young samples [t, t + n), n >= 1, whose ids follow each
   other, one by one: a PROMOTE for each promoted block; the collected
   ones between two, a span of the table, in one COLLECT_RUN (at most
   MPT_MAX_COLLECT_RUN).  So a collected sample costs a test of its
   header and nothing else (about 7 instructions; tracking its id and
   the run cost 15).  The room is asked for once per MINOR_ROOM_ENTRIES
   entries, each of which writes at most the run before it and its
   PROMOTE.  Returns 0 when the buffer had no room (the rest is lost). */
static int young_segment(tracer_domain *d, entry *t, size_t n)
{
  entry *e = t, *end = t + n, *run = t;          /* collected: [run, e) */
  while (e < end) {
    if (!ensure_space(d, MINOR_ROOM_ENTRIES * MINOR_ENTRY_BYTES)) return 0;
    if (e - run > MPT_MAX_COLLECT_RUN - MINOR_ROOM_ENTRIES) {
      collect_span(d, run, e);
      run = e;
    }
    entry *batch_end =
      end - e > MINOR_ROOM_ENTRIES ? e + MINOR_ROOM_ENTRIES : end;
    for (; e < batch_end; e++) {
      if (Hd_val(e->block) != 0) continue;         /* not forwarded */
      collect_span(d, run, e);
      mpt_enc_promote(&d->enc, e->id);
      if (!push_entry(&d->major, Field(e->block, 0), e->id)) d->lost++;
      run = e + 1;
    }
  }
  collect_span(d, run, end);
  return 1;
}

void caml_memprof_tracer_after_minor_gc(caml_domain_state *s)
{
  tracer_domain *d = s->memprof_tracer;
  if (d == NULL) return;
  stream_lock(d);
  if (stream_live(d) && d->young.len && !young_fates(d)) {
    if (ensure_space(d, MPT_MAX_EVENT_BYTES(0)))
      mpt_enc_simple(&d->enc, MPT_EV_MINOR_GC, caml_trace_writer_now(),
                     atomic_load_relaxed(&caml_minor_collections_count));
    /* By the spans of consecutive ids (one, but for a new block of ids
       or a lost sample). */
    entry *t = d->young.t;
    for (size_t i = 0, n = d->young.len, k; i < n; i += k) {
      k = consecutive_prefix(t + i, n - i);
      if (!young_segment(d, t + i, k)) break;
    }
  }
  d->young.len = 0;
  stream_unlock(d);
  if (toggle_requested && s->id == 0) {
    toggle_requested = 0;
    toggle_tracing();
  }
}

/* The whole program's heap: caml_compute_gc_stats, which sums the stats
   of every domain slot (max_domains, 128 by default: about 8,000
   instructions, 10 per sample on leaky_server in bench/ at its callgrind
   scale).  Where no domain but this one (slot 0) ever ran, the other
   slots' stats are zero and nothing was orphaned (no domain terminated):
   the sum is this domain's heap and allocations, read directly (its heap
   as it is now, where the sum has it as of the last stop-the-world
   section). */
static void heap_stats(mpt_heap_stats *h)
{
  struct heap_stats hs;
  uint64_t promoted;
  if (atomic_load(&slots_used) == 1 && Caml_state->id == 0) {
    struct alloc_stats as;
    caml_collect_heap_stats_sample(Caml_state->shared_heap, &hs);
    caml_collect_alloc_stats_sample(Caml_state, &as);
    promoted = as.promoted_words;
  } else {
    struct gc_stats g;
    caml_compute_gc_stats(&g);
    hs = g.heap_stats;
    promoted = g.alloc_stats.promoted_words;
  }
  h->heap_words = (uint64_t)(hs.pool_words + hs.large_words);
  h->live_words = (uint64_t)(hs.pool_live_words + hs.large_words);
  h->minor_collections = atomic_load_relaxed(&caml_minor_collections_count);
  h->major_collections = caml_major_cycles_completed;
  h->compactions = atomic_load_relaxed(&caml_compactions_count);
  h->promoted_words = promoted;
}

/* Heap statistics at most this often (10 ms) and at most
   once per STATS_SAMPLES of the stream's samples.  The second bound ties
   the statistics to what the trace samples: a timeline of the heap gets
   a point every 10 ms where samples are dense (rates 1e-4 and up), and
   no more points than a sixteenth of its samples where they are sparse.
   Statistics every 10 ms alone were a quarter of a slowly allocating
   program's trace at 1e-5 (systhreads in bench/: 186 of them, 13 bytes
   each, for 775 samples); they cost at most ~0.8 bytes per sample now. */
#define STATS_INTERVAL_NS 10000000
#define STATS_SAMPLES 16
static uint64_t stats_interval;          /* STATS_INTERVAL_NS in time units */

static int stats_due(const tracer_domain *d, uint64_t now)
{
  return d->last_stats == 0
    || (now - d->last_stats >= stats_interval
        && d->samples - d->samples_at_stats >= STATS_SAMPLES);
}

/* Mark a cycle end in [d]'s stream: with heap statistics when they are
   due (stats_due), else a bare mark (a program whose sampled blocks die
   in the major heap marks every cycle; full statistics each time were
   40 % of its trace at low rates). */
static int mark_cycle(tracer_domain *d, uint64_t now)
{
  if (!ensure_space(d, MPT_MAX_EVENT_BYTES(0))) return 1;
  if (stats_due(d, now)) {
    mpt_heap_stats h;
    heap_stats(&h);
    mpt_enc_major_cycle(&d->enc, now, &h);
    d->last_stats = now;
    d->samples_at_stats = d->samples;
  } else {
    mpt_enc_major_cycle_mark(&d->enc, now, caml_major_cycles_completed);
  }
  return 1;
}

/* Blocks tracked by domains that have terminated (handed over in
   caml_memprof_tracer_leave_stw, while they were still in the STW set) are
   adopted by the first domain that looks, inside a STW section, before it
   processes its own table: so at every cycle end and every compaction,
   each orphan is processed exactly once.  Called without [d]'s lock. */
static void adopt_orphans(tracer_domain *d)
{
  if (!atomic_load_explicit(&orphans_pending, memory_order_acquire)) return;
  pthread_mutex_lock(&orphan_lock);
  /* First the streams the orphans come from: a COLLECT we write for one
     must follow its ALLOC in the file.  (Their domains are gone; a domain
     that reuses a slot takes only its own stream's lock, never
     orphan_lock while holding it, so the order orphan_lock -> stream lock
     cannot deadlock.) */
  for (int w = 0; w < (Max_domains_max + 63) / 64; w++)
    for (uint64_t bits = orphan_origins[w]; bits; bits &= bits - 1) {
      tracer_domain *o = DOMAIN_AT(w * 64 + __builtin_ctzll(bits));
      if (!o || o == d) continue;
      stream_lock(o);
      if (atomic_load(&caml_memprof_tracer_active) && o->buf
          && o->gen == orphans_gen)
        flush_locked(o);
      stream_unlock(o);
    }
  memset(orphan_origins, 0, sizeof orphan_origins);
  stream_lock(d);
  if (orphans.len && atomic_load(&caml_memprof_tracer_active) && ensure_stream(d)
      && orphans_gen == d->gen)
    for (size_t i = 0; i < orphans.len; i++)
      if (!push_entry(&d->major, orphans.t[i].block, orphans.t[i].id)) d->lost++;
  stream_unlock(d);
  orphans.len = 0;
  atomic_store_explicit(&orphans_pending, 0, memory_order_release);
  pthread_mutex_unlock(&orphan_lock);
}

void caml_memprof_tracer_after_major_gc(caml_domain_state *s)
{
  caml_heap_snapshot_at_cycle_end(s);
  tracer_domain *d = s->memprof_tracer;
  if (d == NULL) return;
  adopt_orphans(d);
  stream_lock(d);
  if (stream_live(d)) {
    /* A stream marks the cycle end when it has collections to time;
       stream 0 also records heap statistics when they are due
       (stats_due: programs allocating large blocks can end thousands of
       cycles a second).  Tools count a cycle once by its
       major_collections number. */
    uint64_t now = caml_trace_writer_now();
    int marked = 0;
    if (s->id == 0 && stats_due(d, now)) marked = mark_cycle(d, now);
    size_t kept = 0;
    for (size_t i = 0; i < d->major.len; i++) {
      entry e = d->major.t[i];
      if (is_unmarked(e.block)) {
        if (!marked) marked = mark_cycle(d, now);
        if (ensure_space(d, 16)) mpt_enc_collect(&d->enc, e.id);
      } else {
        d->major.t[kept++] = e;
      }
    }
    d->major.len = kept;
  } else {
    d->major.len = 0;
  }
  stream_unlock(d);
}

void caml_memprof_tracer_scan_weak(scanning_action f, void *fdata,
                                   caml_domain_state *s)
{
  tracer_domain *d = s->memprof_tracer;
  if (d == NULL) return;
  adopt_orphans(d);
  stream_lock(d);
  for (size_t i = 0; i < d->major.len; i++)
    f(fdata, d->major.t[i].block, &d->major.t[i].block);
  stream_unlock(d);
}

void caml_memprof_tracer_compaction(caml_domain_state *s, int begin)
{
  tracer_domain *d = s->memprof_tracer;
  if (d == NULL || s->id != 0) return;
  stream_lock(d);
  if (stream_live(d) && ensure_space(d, MPT_MAX_EVENT_BYTES(0)))
    mpt_enc_simple(&d->enc, begin ? MPT_EV_COMPACT_BEGIN : MPT_EV_COMPACT_END,
                   caml_trace_writer_now(), 0);
  stream_unlock(d);
}

/* ------------------------------------------------------------------ */
/* Domains                                                             */

static void emit_simple(tracer_domain *d, enum mpt_event_kind k, uint64_t arg)
{
  stream_lock(d);
  if (atomic_load(&caml_memprof_tracer_active) && ensure_stream(d)
      && ensure_space(d, MPT_MAX_EVENT_BYTES(0)))
    mpt_enc_simple(&d->enc, k, caml_trace_writer_now(), arg);
  stream_unlock(d);
}

void caml_memprof_tracer_new_domain(caml_domain_state *s)
{
  tracer_domain *d = DOMAIN_AT(s->id);
  /* The slot counts as used even if its stream cannot be allocated:
     heap_stats reads slots_used == 1 as "no domain but domain 0 ever
     ran". */
  int used = atomic_load(&slots_used);
  while (used <= s->id
         && !atomic_compare_exchange_weak(&slots_used, &used, s->id + 1)) ;
  if (d == NULL) {
    d = calloc(1, sizeof *d);
    if (d == NULL) { s->memprof_tracer = NULL; return; }
    d->stream = (uint16_t)s->id;
    d->gen = d->quick_gen = (uintnat)-1;
    d->countdown_gen = (uintnat)-1;
    atomic_store_explicit(&domains[s->id], d, memory_order_release);
  }
  /* Each domain its own random stream: with memprof_seed, streams differ
     by Domain.self () and are reproducible. */
  rng_seed(d, (params.seeded ? params.seed : (uint64_t)getpid() * 0x9e3779b97f4a7c15ull
               ^ (uint64_t)caml_trace_writer_now())
              + 0x100000001b3ull * (uint64_t)s->unique_id);
  d->trigger_valid = 0;
  d->state = s;
  s->memprof_tracer = d;
  if (atomic_load(&caml_memprof_tracer_active))
    emit_simple(d, MPT_EV_DOMAIN_START, (uint64_t)s->unique_id);
  /* The minor heap exists already: sample from the first allocation. */
  caml_memprof_tracer_set_trigger(s);
  caml_reset_young_limit(s);
}

/* The end of a domain's stream: DOMAIN_STOP, encoded only.  The stream
   belongs to the domain slot and outlives the domain: the flusher (or the
   end of the trace) writes it, and a later domain in the slot appends.  No
   I/O happens here: a terminating domain is inside upstream 5.3's window
   between holding all_domains_lock to leave the STW set and orphaning its
   heap pools, where a compaction misses those pools (ocaml/ocaml#13739,
   fixed in 5.4 by #14025); a flush here (compressing and writing a chunk)
   made a compacting domain wait for the lock and start its STW right in
   that window, and crashed about one run in a hundred of a program whose
   domains end while another compacts. */
static void stop_stream_locked(tracer_domain *d, caml_domain_state *s)
{
  if (ensure_space(d, MPT_MAX_EVENT_BYTES(0)))
    mpt_enc_simple(&d->enc, MPT_EV_DOMAIN_STOP, caml_trace_writer_now(),
                   (uint64_t)s->unique_id);
}

/* A terminating domain's last work, while it is still in the STW set. */
void caml_memprof_tracer_leave_stw(caml_domain_state *s)
{
  tracer_domain *d = s->memprof_tracer;
  if (d == NULL) return;
  stream_lock(d);
  /* The minor heap was emptied by the termination loop: young blocks have
     been promoted or collected, and reported. */
  d->young.len = 0;
  if (stream_live(d)) {
    stop_stream_locked(d, s);
    if (d->major.len) {
      pthread_mutex_lock(&orphan_lock);
      if (orphans_gen != d->gen) {
        orphans.len = 0; orphans_gen = d->gen;
        memset(orphan_origins, 0, sizeof orphan_origins);
      }
      orphan_origins[d->stream / 64] |= 1ull << (d->stream % 64);
      for (size_t i = 0; i < d->major.len; i++)
        if (!push_entry(&orphans, d->major.t[i].block, d->major.t[i].id)) d->lost++;
      atomic_store_explicit(&orphans_pending, orphans.len > 0, memory_order_release);
      pthread_mutex_unlock(&orphan_lock);
    }
  }
  d->major.len = 0;
  d->state = NULL;
  stream_unlock(d);
  s->memprof_tracer = NULL;          /* the domain is gone for the tracer */
}

/* Only reached with the tracer still attached when leave_stw did not run:
   a domain whose creation failed after it was announced. */
void caml_memprof_tracer_delete_domain(caml_domain_state *s)
{
  tracer_domain *d = s->memprof_tracer;
  if (d == NULL) return;
  stream_lock(d);
  if (stream_live(d)) stop_stream_locked(d, s);
  d->lost += d->major.len + d->young.len;
  d->major.len = d->young.len = 0;
  d->state = NULL;
  stream_unlock(d);
  s->memprof_tracer = NULL;
}

/* ------------------------------------------------------------------ */
/* Starting and stopping                                               */

static void at_exit_handler(void);
static void fork_parent(void);
static void fork_child(void);
static void on_toggle_signal(int sig) { (void)sig; toggle_requested = 1; }

static void install_handlers(void)
{
  if (handlers_installed) return;
  handlers_installed = 1;
  atexit(at_exit_handler);
  pthread_atfork(NULL, fork_parent, fork_child);
}

/* A stream holding fewer than FLUSH_SMALL_BYTES of events is written at
   every FLUSH_SMALL_TICKS-th tick of the flusher only.  Each write is a
   chunk (8 bytes of header) in an LZ4 frame of its own (15 bytes), and
   LZ4 finds little to match in a few hundred bytes: at 1e-5, writing
   every 200 ms made a slowly allocating program's trace a tenth frame
   overhead (long_lived in bench/, 294 samples: 3,360 bytes, 3,090 with
   every second).  Streams with more events are written at every tick,
   and those few events reach the file within 5 ticks. */
#define FLUSH_SMALL_BYTES 2048
#define FLUSH_SMALL_TICKS 5

/* Write the streams' buffered events (each under its lock): every
   stream's, or at a tick of the flusher ([tick]) those of the streams
   with FLUSH_SMALL_BYTES or whose events have waited FLUSH_SMALL_TICKS
   ticks. */
static void flush_streams(int tick)
{
  uintnat gen = atomic_load(&caml_memprof_tracer_generation);
  for (int i = 0, n = atomic_load(&slots_used); i < n; i++) {
    tracer_domain *d = DOMAIN_AT(i);
    if (!d) continue;
    stream_lock(d);
    size_t used = d->buf ? mpt_enc_used(&d->enc) : 0;
    if (atomic_load(&caml_memprof_tracer_active) && used > 0 && d->gen == gen
        && (!tick || used >= FLUSH_SMALL_BYTES
            || ++d->small_ticks >= FLUSH_SMALL_TICKS))
      flush_locked(d);
    stream_unlock(d);
  }
}

/* The flusher: a plain C thread (never an OCaml one, it touches no OCaml
   state) that writes the streams' buffered events each flush_ms (those
   of a stream with few events each 5 flush_ms, see flush_streams), so that
   events reach the file within about that long of happening whatever
   the program does (a program that stops allocating, or is killed, loses
   at most that much).  It takes each stream's lock like any writer; when
   tracing is off it only sleeps.  All signals are blocked in it, so the
   program's signal handling is unchanged. */
static void *flusher_main(void *arg)
{
  (void)arg;
  struct timespec period = { (time_t)(params.flush_ms / 1000),
                             (long)(params.flush_ms % 1000) * 1000000L };
  for (;;) {
    nanosleep(&period, NULL);
    if (atomic_load(&caml_memprof_tracer_active)) flush_streams(1);
    caml_heap_snapshot_reap(0);
  }
  return NULL;
}

int caml_memprof_tracer_start_thread(void *(*main)(void *), void *arg)
{
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  pthread_t th;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  int ok = pthread_create(&th, &attr, main, arg) == 0;
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return ok;
}

static void start_flusher(void)
{
  if (flusher_started) return;
  if (caml_memprof_tracer_start_thread(flusher_main, NULL)) flusher_started = 1;
  else fprintf(stderr, "memprof: cannot start the flusher thread; events are "
               "written when buffers fill and at exit\n");
}

/* Start a trace; control_lock held.  Returns 0, or -1 with a message in
   [err] (the writer has also printed it when the file was the problem). */
static int start_locked(const char *path, double rate, uintnat frames,
                        int compress, char *err, size_t errlen)
{
  if (atomic_load(&caml_memprof_tracer_active)) {
    snprintf(err, errlen, "tracing is already on");
    return -1;
  }
  lambda = rate;
  one_log1m = rate >= 1.0 ? 0.0 : 1.0 / log1p(-rate);
  max_frames = (uint32_t)frames;
  callback_frames = (uint32_t)params.callbacks;
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  /* The time unit.  An event's time is a varint of the time since its
     stream's previous event: at 1e-5, a few milliseconds, two bytes in
     microseconds, and timestamps were a quarter of a trace (systhreads
     in bench/).  Samples there are 100 us apart on average even at 1 G
     words a second, and milliseconds apart in most programs: 64 us
     units lose nothing a profile can show (a minor heap of 256 k words
     fills in 256 us at that speed) and take one byte up to 8 ms, where
     8 us units took two from 1 ms (long_lived in bench/, 294 samples:
     3,640 bytes -> 3,360).  So 1 us from 1e-4 up (and for snapshots
     alone), 8 us between 1e-5 and 1e-4, 64 us from 1e-5 down.  The
     writer keeps the first trace's unit for the process
     (caml_trace_writer_open). */
  uint32_t unit_ns = rate >= 1e-4 || rate == 0 ? 1000
                     : rate > 1e-5 ? 8000 : 64000;
  mpt_trace_info info = {
    .format_version = MPT_FORMAT_VERSION, .word_size = 8 * sizeof(value),
    .flags = (compress ? MPT_FLAG_COMPRESSED : 0)
#ifndef NATIVE_CODE
             | MPT_FLAG_BYTECODE
#endif
    , .sampling_rate = rate, .max_frames = (uint32_t)frames,
    .time_unit_ns = unit_ns, .pid = (uint64_t)getpid(),
    .ppid = (uint64_t)getppid(), .executable = exe_name ? exe_name : "",
    .hostname = host, .ocaml_version = OCAML_VERSION_STRING,
    .command_line = command_line ? command_line : "" };
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  info.start_wall_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  atomic_fetch_add(&caml_memprof_tracer_generation, 1);
  if (caml_trace_writer_open(path, &info) < 0) {
    snprintf(err, errlen, "cannot create the trace file (see stderr)");
    return -1;
  }
  stats_interval = STATS_INTERVAL_NS / caml_trace_writer_time_unit_ns();
  carried_samples = carried_lost = 0;
  install_handlers();
  start_flusher();
  atomic_store(&caml_memprof_tracer_active, 1);
  return 0;
}

/* Stop the trace: flush every stream and close the file; control_lock held.
   TRACE_STOP goes into [self]'s stream, or stream 0's when [self] is NULL:
   at exit the domain state may be gone already (OCAMLRUNPARAM=c frees it
   in caml_shutdown, before atexit handlers run), while our tracer_domain
   structures are never freed. */
static void stop_locked(tracer_domain *self)
{
  if (!caml_trace_writer_is_open()) {
    atomic_store(&caml_memprof_tracer_active, 0);
    return;
  }
  uintnat gen = atomic_load(&caml_memprof_tracer_generation);
  if (!self) self = DOMAIN_AT(0);
  if (self) emit_simple(self, MPT_EV_TRACE_STOP, 0);
  atomic_store(&caml_memprof_tracer_active, 0);
  uint64_t samples = carried_samples, lost = carried_lost;
  for (int i = 0, n = atomic_load(&slots_used); i < n; i++) {
    tracer_domain *d = DOMAIN_AT(i);
    if (!d) continue;
    stream_lock(d);
    if (d->buf && d->gen == gen) {
      flush_locked(d);
      samples += d->samples; lost += d->lost;
    }
    stream_unlock(d);
  }
  caml_heap_snapshot_reap(1);   /* a forked snapshot still walking */
  caml_trace_writer_close(samples, lost);
}

static void at_exit_handler(void)
{
#ifdef CAML_MEMPROF_STACK_MARKS
  /* memprof_verify=2 (tests): how often a mark spared the check of a
     stack's outer frames, in every domain slot. */
  if (params.verify == 2) {
    uint64_t skips = 0;
    int used = atomic_load(&slots_used);
    for (int i = 0; i < used; i++) {
      tracer_domain *d = DOMAIN_AT(i);
      if (d != NULL) skips += d->frames.marks_skips;
    }
    fprintf(stderr, "memprof: marks spared the check %llu times\n",
            (unsigned long long)skips);
  }
#endif
  caml_heap_snapshot_at_exit();
  pthread_mutex_lock(&control_lock);
  stop_locked(NULL);
  pthread_mutex_unlock(&control_lock);
}

static void toggle_tracing(void)
{
  pthread_mutex_lock(&control_lock);
  caml_domain_state *self = Caml_state_opt;
  if (atomic_load(&caml_memprof_tracer_active))
    stop_locked(self ? self->memprof_tracer : NULL);
  else if (params.path) {
    char err[128];
    if (start_locked(params.path, params.rate, params.frames,
                     (int)params.compress, err, sizeof err) == 0) {
      if (self && self->memprof_tracer)
        emit_simple(self->memprof_tracer, MPT_EV_TRACE_START, 0);
    }
  }
  pthread_mutex_unlock(&control_lock);
}

static void fork_parent(void)
{
  caml_domain_state *self = Caml_state_opt;
  if (atomic_load(&caml_memprof_tracer_active) && self && self->memprof_tracer)
    emit_simple(self->memprof_tracer, MPT_EV_FORK, 0);
}

static void fork_child(void)
{
  pthread_mutex_init(&control_lock, NULL);
  caml_heap_snapshot_forget_after_fork();
  pthread_mutex_init(&orphan_lock, NULL);
  orphans.len = 0;
  memset(orphan_origins, 0, sizeof orphan_origins);
  atomic_store(&orphans_pending, 0);
  flusher_started = 0;                /* threads do not survive fork */
  for (int i = 0, n = atomic_load(&slots_used); i < n; i++) {
    tracer_domain *d = DOMAIN_AT(i);
    if (!d) continue;
    atomic_store(&d->lock, 0);
    d->young.len = d->major.len = 0;
    d->small_ticks = 0;
    if (d->buf)                   /* the parent writes these, not us */
      mpt_enc_reset_buffer(&d->enc, d->buf + MPT_CHUNK_HEADER_BYTES,
                           BUFFER_BYTES - MPT_CHUNK_HEADER_BYTES);
  }
  if (!atomic_load(&caml_memprof_tracer_active)) return;
  atomic_store(&caml_memprof_tracer_active, 0);
  int own_file = caml_trace_writer_forget_after_fork();
  if (!own_file) {
    fprintf(stderr, "memprof: not tracing forked child %ld "
            "(put %%p in memprof=PATH to trace children)\n", (long)getpid());
    return;
  }
  char err[128];
  if (start_locked(params.path ? params.path : "", lambda, max_frames,
                   caml_trace_writer_compressed(), err, sizeof err) == 0) {
    caml_domain_state *self = Caml_state_opt;
    if (self && self->memprof_tracer)
      emit_simple(self->memprof_tracer, MPT_EV_FORK, (uint64_t)getppid());
  }
}

void caml_memprof_tracer_init(const char_os *exe, char_os **argv)
{
  free(exe_name);
  exe_name = exe ? strdup(exe) : NULL;
  size_t len = 0;
  for (char_os **a = argv; a && *a; a++) len += strlen(*a) + 1;
  if (len > MPT_MAX_STRING) len = MPT_MAX_STRING;
  free(command_line);
  command_line = calloc(1, len + 1);
  if (command_line)
    for (char_os **a = argv; a && *a; a++) {
      size_t used = strlen(command_line);
      if (used + 1 >= len) break;
      snprintf(command_line + used, len + 1 - used, "%s%s", used ? " " : "", *a);
    }
  if (params.signal) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_toggle_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(params.signal, &sa, NULL);
  }
  caml_heap_snapshot_init();
  if (!params.path) return;
#ifndef NATIVE_CODE
  /* Load the main program's debug information now, while allocating is
     allowed: samples must not trigger its (allocating) lazy loading. */
  if (caml_debug_info_available() && caml_debug_info_status() == 0) {
    struct caml_loc_info li;
    caml_debuginfo_location(caml_debuginfo_extract((backtrace_slot)caml_start_code), &li);
  }
#endif
  char err[128];
  pthread_mutex_lock(&control_lock);
  if (start_locked(params.path, params.rate, params.frames,
                   (int)params.compress, err, sizeof err) == 0
      && Caml_state->memprof_tracer) {
    emit_simple(Caml_state->memprof_tracer, MPT_EV_TRACE_START, 0);
    caml_memprof_tracer_set_trigger(Caml_state);
    caml_reset_young_limit(Caml_state);
  }
  pthread_mutex_unlock(&control_lock);
}

/* ------------------------------------------------------------------ */
/* For heap snapshots (memprof_heap_snapshot.c)                         */

int caml_memprof_tracer_tracing(void)
{
  return atomic_load(&caml_memprof_tracer_active) && caml_trace_writer_is_open();
}

void caml_memprof_tracer_flush(void)
{
  flush_streams(0);
}

void caml_memprof_tracer_iter_tracked(void (*f)(void *, value, uint64_t),
                                      void *data)
{
  uintnat gen = atomic_load(&caml_memprof_tracer_generation);
  for (int i = 0; i < Max_domains_max; i++) {
    tracer_domain *d = DOMAIN_AT(i);
    if (!d) continue;
    stream_lock(d);
    if (d->gen == gen) {
      for (size_t k = 0; k < d->young.len; k++) f(data, d->young.t[k].block, d->young.t[k].id);
      for (size_t k = 0; k < d->major.len; k++) f(data, d->major.t[k].block, d->major.t[k].id);
    }
    stream_unlock(d);
  }
  pthread_mutex_lock(&orphan_lock);
  if (orphans_gen == gen)
    for (size_t k = 0; k < orphans.len; k++) f(data, orphans.t[k].block, orphans.t[k].id);
  pthread_mutex_unlock(&orphan_lock);
}

int caml_memprof_tracer_domain_states(caml_domain_state **out, int max)
{
  int n = 0;
  for (int i = 0; i < Max_domains_max && n < max; i++) {
    tracer_domain *d = DOMAIN_AT(i);
    if (d && d->state) out[n++] = d->state;
  }
  return n;
}

/* ------------------------------------------------------------------ */
/* OCaml API: Gc.Memprof_trace                                          */

CAMLprim value caml_memprof_trace_start(value path, value rate, value frames,
                                        value compress)
{
  double r = Double_val(rate);
  intnat f = Long_val(frames);
  if (!(r >= 0.0 && r <= 1.0))
    caml_invalid_argument("Gc.Memprof_trace.start: rate must be in [0, 1]");
  if (f < 1 || f > MPT_MAX_FRAMES)
    caml_invalid_argument("Gc.Memprof_trace.start: max_frames must be in 1..4096");
  char *p = caml_stat_strdup(String_val(path));
  char err[128];
  pthread_mutex_lock(&control_lock);
  int rc = start_locked(p, r, (uintnat)f, Bool_val(compress), err, sizeof err);
  if (rc == 0) {
    free(params.path);
    params.path = strdup(p);
    params.rate = r; params.frames = (uintnat)f; params.compress = Bool_val(compress);
  }
  pthread_mutex_unlock(&control_lock);
  caml_stat_free(p);
  if (rc != 0) caml_failwith(err);
  emit_simple(Caml_state->memprof_tracer, MPT_EV_TRACE_START, 0);
  caml_memprof_tracer_set_trigger(Caml_state);
  caml_reset_young_limit(Caml_state);
  return Val_unit;
}

CAMLprim value caml_memprof_trace_stop(value unit)
{
  (void)unit;
  pthread_mutex_lock(&control_lock);
  stop_locked(Caml_state->memprof_tracer);
  pthread_mutex_unlock(&control_lock);
  caml_memprof_tracer_set_trigger(Caml_state);
  caml_reset_young_limit(Caml_state);
  return Val_unit;
}

CAMLprim value caml_memprof_trace_flush(value unit)
{
  (void)unit;
  flush_streams(0);
  return Val_unit;
}

CAMLprim value caml_memprof_trace_is_active(value unit)
{
  (void)unit;
  return Val_bool(atomic_load(&caml_memprof_tracer_active));
}
