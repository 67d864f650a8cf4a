/* memprof_heap_snapshot.c: heap snapshots for 5.x+memprof.

   What it does
   A snapshot records the graph of the blocks reachable at one instant:
   every block (a compact id, its tag and size, the ALLOC id when the
   tracer samples it, the identifier and out-of-heap size of custom
   blocks), its pointer edges (ephemeron keys marked weak), and every root
   with its kind and a label (module globals, stack frames as source
   locations, C local and global roots, other threads, finalisers).  The
   records go into the trace through the trace writer, as SNAPSHOT chunks
   (memprof_trace_codec.c, docs/trace-format.md), each an independent LZ4
   frame: a trace cut during a snapshot keeps the records up to its last
   complete frame.

   When: inside the major-cycle-end STW section
   A snapshot is taken at the end of a major cycle, in the STW section of
   stw_cycle_all_domains (major_gc.c), through the tracer's existing hook
   (caml_memprof_tracer_after_major_gc, called by every domain at the
   start of that section, via upstream's caml_memprof_after_major_gc).
   There, and only there, three facts hold that the walk relies on:
   - every domain is stopped (the section is synchronous) and none can go
     on mutating before the walker is done: each next meets the global
     barrier that starts caml_empty_minor_heap_no_major_slice_from_stw,
     which the walker reaches only after the walk;
   - marking is complete and sweeping finished: every reachable block of
     the major heap is marked (the walk itself needs only the roots and
     the blocks' headers and fields);
   - the minor heaps have not been emptied yet: young blocks are walked
     too (they are few: the requester empties its minor heap and a
     cycle end follows within the same STW for Gc.Memprof_trace.snapshot).
   So no upstream hunk is needed beyond compiling this file: the walk
   lives here and uses upstream's root-scanning entry points
   (caml_scan_global_roots, caml_scan_stack, caml_final_do_roots, the
   systhreads caml_scan_roots_hook).

   Where the walk runs: in a forked child (memprof_snapshot_fork=1, the
   default on Linux), else in the pause
   The pause only needs what the running world knows: the tracked
   samples, the ephemeron lists, and the roots (module globals, C global
   and local roots, every domain's stack and fibers, systhreads,
   finalisers, statmemprof's tables), which the walk from the roots names
   at once (entries 1..n) and the sweep keeps as addresses, to be named
   once the walk has built its tables.  Then a child process is created
   with a raw clone(2) (see "The forked walk" below) and every domain of
   the parent resumes;
   the child walks its copy-on-write image of the heap, in which every
   domain is still stopped at this instant, and writes the rest of the
   snapshot.  The walk never writes to the heap, so the child's image
   stays shared with the program's pages but for those the program
   writes meanwhile.  Where
   the child cannot be created the walk goes on in the pause (WALK mode 2),
   as it always does with memprof_snapshot_fork=0 (mode 0).  The two walks
   are the same code on the same heap: the same records.

   Two walks: a sweep of the heap, or a traversal from the roots
   The traversal (breadth first from the roots) visits only reachable
   blocks and numbers them in discovery order, which the format exploits
   (an edge to a block seen for the first time is "the next id": one
   byte), but it must find every target's id in a table beside the heap
   and read its header: two scattered accesses per block, which on a heap
   of mixed shapes cost 2.3 to 3 times a major GC's marking
   (bench/snapshot/mixheap.ml), while the GC's mark loop reads only the
   header.  The sweep (memprof_snapshot_sweep=1) reads the heap in
   address order instead, pool after pool, and names a block by where it
   is: a slot of a pool, a word of a minor heap, a large block (ids with
   gaps: the format's explicit ids).  A target's id then comes from its
   address alone, through a page directory of the pools (4 bytes per 4
   KiB of heap, in cache) and a multiply by the slot size's reciprocal,
   without touching the target: the walk's only scattered accesses are
   gone, and so are the id table's pages (a forked child's private
   memory falls from half the live heap to the directory).  Its costs:
   it writes the blocks that no root reaches but the GC has not freed
   yet (the minor heaps' dead blocks, and major blocks dead since the
   cycle began or allocated during it and dropped), which the tools drop,
   renumbering the others as the traversal would (so every analysis is
   the same; their proof that a sample died keeps the snapshot's graph
   while it is read); its edges cannot be "the next id" (a target is
   written relative to the one of the same edge index before, which
   neighbouring blocks mostly share: 0.22 bytes a block after LZ4 on a
   regular heap, where the traversal's take 0.02; 0.65 on a mixed one,
   against 1.05); and the pools are only known to shared_heap.c, which
   includes memprof_heap_pools.h for them (one hunk).  The traversal stays, as
   the fallback (ids past 2^31, memory for the tables) and with
   memprof_snapshot_sweep=0.

   Data structures (freed after each snapshot; none exist before the first)
   - id of each visited block, beside the heap (visit): a
     32-bit slot per 16 bytes of heap (two words: no two blocks are
     closer, see SIDE_SLOT_SHIFT), in leaves covering 32 MiB of address space
     each, mapped on first use (their pages written 64 KiB at a
     time, when a block is first named there) and found through a
     directory over the 48-bit address space (mapped whole, touched only
     where the heap lies), so that naming a target already seen is one
     read, as the header mark of earlier versions was, without writing to
     the heap (a forked child's writes would have copied every page of
     it, and every header had to be restored at the end).  About 2
     bytes per heap word where the heap is dense; ids up to 2^32 - 1
     (then the snapshot is flagged incomplete);
   - entry[id], the BFS queue: the block's address, in chunks of 8 MiB
     that never move (the copies of a doubling array were most of the
     pause once), a chunk the walk is past used again for the
     blocks named next: 8 bytes per block named and not written yet (the
     breadth-first frontier: two chunks on bench/snapshot's heap, where
     a table of every block took 384 MB to fault in), written at its
     tail (a pointer into the chunk being filled).  Young blocks are
     named as major ones, through their slots.  The chunks are of 4 KiB
     pages: advised for transparent huge pages (MADV_HUGEPAGE), as they
     were, the first chunk's first fault, in the pause (the roots'
     targets), cost this VM from 0.3 to 23 ms at times (the kernel
     finding and zeroing 2 MiB): the forked pause at 1.19 GiB was
     20-68 ms (6 runs) with the advice, 22-30 ms without, the walks the
     same (2026-11-28);
   - tracked samples: address -> ALLOC id, copied from the tracer's
     per-domain tables (caml_memprof_tracer_iter_tracked);
   - ephemerons: address set, from each domain's ephemeron lists (an
     ephemeron is an Abstract_tag block the GC knows only by those lists);
   - frame table of each stack being scanned (address range -> frame
     descriptor), to label stack roots with their frame's location;
   - label strings: an id per distinct label, defined before first use;
   - the sweep's instead of the id slots and the queue (built by the
     walk, from the lists of pools): every pool (its first id, first slot,
     slot size and the size's reciprocal: 40 bytes per 32 KiB pool), a
     page directory over the pools' span (4 bytes per 4 KiB page, mapped
     whole, touched where the pools are), each domain's minor heap and
     every large block (sorted by address, for targets inside them).
   Memory is bounded by those tables, never by a copy of the heap: records
   stream through a 256 KiB buffer into the writer.  In a forked child,
   its private memory at the end (the WALK record's extra_bytes) is those
   tables plus the pages the program wrote during the walk.

   Synchronisation
   One walker per snapshot: a requested snapshot is claimed by an atomic
   exchange, a periodic one by domain 0 only, and [taking] makes sure
   that only one runs at a time.  Other domains meanwhile run their own
   tracer and statmemprof cycle-end work, which reads the status of
   blocks they track: the walk leaves headers alone.
   Statmemprof's roots (Gc.Memprof's per-domain entry tables: tracker
   data and trackers) are updated by their own domain in the same STW
   section, just before it calls this hook (upstream's
   caml_memprof_after_major_gc, then ours).  So each domain,
   on entering the hook, publishes with release "my tables are settled for
   cycle C" (C = caml_major_cycles_completed, which no domain can advance
   before the walker reaches the barrier after the walk); the walker waits
   for that mark (acquire) of every domain before scanning that domain's
   tables with upstream's caml_memprof_scan_roots.  The owner does not
   touch them again before that barrier; the set of domains is that of
   the STW section (the tracer registers a domain, and forgets it, under
   the lock that also changes STW participation), so the wait ends.  The
   mark is one store per domain and major cycle, snapshot or not.

   Cost of the sweep (bench/snapshot/run.sh, 2026-11-28, 2 shared cores
   at load average 3 to 3.6, a fuzzer on one of them; median of 3 runs,
   each walk against the Gc.major of its own run):
   live heap                 child's walk          in the pause
   bigheap 0.30 GiB  12 M    0.96 x (0.95-0.97)    1.02 x (0.96-1.05)
   bigheap 1.19 GiB  48 M    0.91 x (0.89-0.99)    0.84 x (0.78-0.98)
   bigheap 2.01 GiB  81 M    0.81 x (0.79-0.88)    0.73 x (0.73-0.74)
   mixheap 0.99 GiB  36 M    1.15 x (1.13-1.20)    1.01 x (0.97-1.06)
   and again on an idle machine with the strings written inline: 0.96,
   0.91, 0.86 and 1.19 x in the child, 1.02, 0.94, 0.93 and 1.19 x in
   the pause, the forked pause 20.0 ms (bench/results/5.3.0/snapshot.md).
   The forked pause at 1.19 GiB: 29.9 ms (25 ms per GiB), nearly all
   clone(2); the child's private memory at its end 3.5 MB (the walk from
   the roots: 322 MB); 0.22 bytes per block after LZ4 (the walk from the
   roots: 0.02), 4.7 before.  On mixheap the walk from the roots took
   2.2-3 x.  Before the pause kept the roots as addresses and left the
   tables to the child, their building (the pools' lists chased) took
   27 ms of it on mixheap (30 k pools, 17 k large blocks): the pause was
   74-162 ms under load, 25-27 ms since.
   Cost of the walk from the roots (bench/snapshot's heap, 2 shared
   cores at load average 2 to 3.5, 2 to 4 runs; each walk against the
   Gc.major of its own run):
   live heap       forked   child's walk             in the pause
                   pause
   0.30 GiB  12 M   9 ms     0.23-0.25 s = 1.5-1.8 x  0.17-0.18 s = 1.4 x
   1.19 GiB  48 M  21-29 ms  0.80-0.91 s = 1.3-1.6 x  0.67-0.89 s = 1.0-1.4 x
   2.01 GiB  81 M  38-47 ms  1.40-1.46 s = 1.3-1.4 x  1.15-1.33 s = 0.9-1.1 x
   (Gc.major 0.13 to 0.17 s, 0.57 to 0.69 s, 1.05 to 1.40 s; 0.59 s at
   1.19 GiB on a quiet machine.  Outliers: a walk of 2.66 s in the child
   and 3.12 s in the pause at 2.01 GiB, 1.71 s in the pause at 1.19 GiB,
   when the load rose.)  On a quiet machine (load average 0.8 to 1.1,
   one run each): 0.27 s = 2.24 x in the child and 1.46 x in the pause
   at 0.30 GiB, 0.81 s = 1.54 x and 1.26 x at 1.19 GiB, 1.42 s = 1.47 x
   and 1.19 x at 2.01 GiB; the same with LZ4 off, and with the process
   pinned to one core.  Those were with a slot per heap word.  With a
   slot per two words (half the slots' pages; the child's user and
   system time from getrusage, same binary but for that, runs
   alternated): 0.30 GiB 0.17-0.19 s (user 0.14-0.15 s, system
   0.004-0.044 s, 20.9 k page faults) against 0.21-0.22 s (system
   0.040-0.067 s, 41.7 k faults), Gc.major 0.12 s; 1.19 GiB 0.69-0.71 s
   (system 0.09-0.11 s) against 0.95-2.25 s (system 0.33-1.56 s),
   Gc.major 0.55-0.56 s; 2.01 GiB 1.13-1.14 s (system 0.17-0.20 s)
   against 2.07-2.57 s (system 0.99-1.41 s), Gc.major 0.95 s.  The
   system's cost per page fault varied tenfold that day: the fewer
   pages, the steadier the walk.  Transparent huge pages for the leaves
   were tried: 0.17-0.38 s at 0.30 GiB, the system time up to 0.21 s
   finding huge pages; not kept.  A heap of mixed shapes is slower to
   walk: bench/snapshot/mixheap.ml (36 M blocks, 0.99 GiB live: lists,
   records, strings, float arrays, closures, a Hashtbl, a Map) takes
   2.3-2.4 x its Gc.major in the pause and 2.7-3.0 x in the child, its
   walk about 46 ns a block at that size against 20 ns at 0.1-0.4 GiB
   (the same program smaller) while its Gc.major stays near 10 ns a
   block: there the walk's memory accesses (a slot and a header per new
   target, scattered, and the TLB misses of two large tables instead of
   one) are what its prefetching does not hide.
   The forked pause is almost all clone(2) copying
   the page tables of the program (1.9 GB resident at 1.19 GiB live);
   the child's private memory is 51 % of the live heap there (the id
   slots' leaves, then 4 bytes per heap word, and the queue's chunks).  The
   walk is bound by memory latency (a miss per block for its id slot and
   one for its header, both prefetched PREFETCH_TARGETS blocks ahead),
   by the system's zeroing of the id slots' pages, and by its
   instructions, about 215 per block (callgrind, bigheap 1, the walk
   with its LZ4; 300 before the common block was written in place), a
   quarter of them the prefetching; 3.3 bytes per block and 1 per edge
   before LZ4 (a regular heap compresses to almost nothing).  The child
   walks about a quarter slower than the pause on the same heap, in its
   own loop (perf: the misses on the new targets' headers): the first
   read of each page of the heap costs the child about 0.4 us on this
   machine (a VM), where the parent's pages were just read by the
   marking.  An experiment touching one byte of each page of the
   program's large writable mappings before the walk took 0.051 s for
   122,556 pages (0.30 GiB live) and 0.146 s for 356,879 (1.19 GiB),
   after which the walk ran at the pause's speed (0.177 s and 0.636 s):
   the same total, so it was not kept; MADV_POPULATE_READ over the same
   mappings (0.02 s) leaves the walk as slow.  The run takes as many page
   faults in both modes (480 k at 1.19 GiB), and LZ4 or core placement
   change nothing.  Likely: fork(2) makes the child's page table entries
   "old", and the first read of a page sets its accessed bit again, at
   a VM's cost.

   Statmemprof's strong roots are written as MPT_ROOT_MEMPROF roots
   flagged non-retaining, labelled "Gc.Memprof tracker data" (the values
   its trackers' callbacks returned, and the trackers themselves).  Tools
   count as held by the profiler only what no other root reaches.  Its
   weak references (the tracked blocks) are not roots: Gc.Memprof's own
   point to live blocks only, reached anyway, but the tracer's, which
   upstream's weak scan includes (caml_memprof_tracer_scan_weak), still
   name the blocks that died in this cycle until the tracer's cycle-end
   work, which runs after the snapshot: the walk must never enter them.

   Not recorded: blocks held only by orphaned ephemerons of terminated
   domains (their lists are private to major_gc.c; such an ephemeron is
   a plain block without edges), and natdynlink'ed modules' globals are
   labelled as C global roots.

   Triggers (OCAMLRUNPARAM keys, parsed by memprof_tracer.c)
   memprof_snapshot_at_exit=1, memprof_snapshot_signal=SIG,
   memprof_snapshot_every_s=N, memprof_snapshot_every_cycles=N, and
   Gc.Memprof_trace.snapshot ().  A snapshot needs a trace file
   (memprof=PATH; memprof_rate=0 traces snapshots only).  Signals and
   periods wait for the next natural cycle end; the at-exit snapshot and
   the API force one (caml_finish_major_cycle). */

#define CAML_INTERNALS
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#endif
#include "caml/alloc.h"
#include "caml/backtrace_prim.h"
#include "caml/bigarray.h"
#include "caml/custom.h"
#include "caml/domain.h"
#include "caml/domain_state.h"
#include "caml/fiber.h"
#include "caml/finalise.h"
#include "caml/gc.h"
#include "caml/globroots.h"
#include "caml/major_gc.h"
#include "caml/memory.h"
#include "caml/memprof.h"
#include "caml/minor_gc.h"
#include "caml/mlvalues.h"
#include "caml/platform.h"
#include "caml/roots.h"
#include "caml/shared_heap.h"
#include "caml/signals.h"
#include "caml/weak.h"
#ifdef NATIVE_CODE
#include "caml/frame_descriptors.h"
#include "caml/stack.h"
#endif
#include "caml/memprof_trace_codec.h"
#include "caml/memprof_trace_writer.h"
#include "caml/memprof_tracer.h"
#include "caml/memprof_heap_snapshot.h"
#include "caml/memprof_heap_pools.h"

struct caml_heap_snapshot_params caml_heap_snapshot_params = {
#ifdef __linux__
  .fork = 1,
#endif
  .sweep = 1
};

static atomic_int requested;              /* API / exit: next cycle end */
static volatile sig_atomic_t signalled;   /* the snapshot signal came   */
static int periodic;                      /* every_s or every_cycles    */
static uintnat cycles_seen;               /* domain 0's cycle ends      */
static uint64_t last_snapshot_us;
static uint64_t snapshot_seq;
static atomic_int deferred;               /* due while a child walked   */
static atomic_int taking;                 /* a domain is taking one     */

/* Per domain id: 1 + the major cycle for which the domain's statmemprof
   tables are settled (see Synchronisation); 0 before its first cycle end. */
static atomic_uintnat memprof_settled[Max_domains_max];

#define BUF_BYTES (256 * 1024)

/* ------------------------------------------------------------------ */
/* Address-keyed open-addressing maps (samples, ephemerons, labels) */

/* The walk's growing tables (maps, entry chunks, id slots) are mapped
   pages, never malloc's: a forked child grows them too, and malloc may
   have been locked by another thread of the parent at the fork.  Zeroed. */
static void *pages_alloc(size_t bytes)
{
#ifdef __linux__
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? NULL : p;
#else
  return calloc(1, bytes);
#endif
}

static void pages_free(void *p, size_t bytes)
{
  if (p == NULL) return;
#ifdef __linux__
  munmap(p, bytes);
#else
  (void)bytes;
  free(p);
#endif
}

/* Grow the pages_alloc array *p (elements of [elt] bytes) to hold [need]:
   0 when memory ran out. */
static int pages_grow(void **p, size_t *cap, size_t need, size_t elt)
{
  if (need <= *cap) return 1;
  size_t ncap = *cap ? 2 * *cap : 4096 / elt;
  while (ncap < need) ncap *= 2;
  void *n = pages_alloc(ncap * elt);
  if (!n) return 0;
  if (*p) memcpy(n, *p, *cap * elt);
  pages_free(*p, *cap * elt);
  *p = n; *cap = ncap;
  return 1;
}

typedef struct { uintnat key; uint64_t val; } slot;
typedef struct { slot *t; size_t cap, count; } addr_map;

static inline size_t hash_addr(uintnat x)
{
  x ^= x >> 33; x *= 0xff51afd7ed558ccdull; x ^= x >> 33;
  return (size_t)x;
}

static int map_put(addr_map *m, uintnat key, uint64_t val)
{
  if (2 * (m->count + 1) > m->cap) {
    size_t ncap = m->cap ? 2 * m->cap : 1024;
    slot *nt = pages_alloc(ncap * sizeof *nt);
    if (!nt) return 0;
    for (size_t i = 0; i < m->cap; i++)
      if (m->t[i].key) {
        size_t h = hash_addr(m->t[i].key) & (ncap - 1);
        while (nt[h].key) h = (h + 1) & (ncap - 1);
        nt[h] = m->t[i];
      }
    pages_free(m->t, m->cap * sizeof *m->t); m->t = nt; m->cap = ncap;
  }
  size_t h = hash_addr(key) & (m->cap - 1);
  while (m->t[h].key && m->t[h].key != key) h = (h + 1) & (m->cap - 1);
  if (!m->t[h].key) m->count++;
  m->t[h].key = key; m->t[h].val = val;
  return 1;
}

static inline uint64_t map_get(const addr_map *m, uintnat key)
{
  if (!m->cap) return 0;
  size_t h = hash_addr(key) & (m->cap - 1);
  while (m->t[h].key) {
    if (m->t[h].key == key) return m->t[h].val;
    h = (h + 1) & (m->cap - 1);
  }
  return 0;
}

static void map_free(addr_map *m)
{
  pages_free(m->t, m->cap * sizeof *m->t);
  m->t = NULL; m->cap = m->count = 0;
}

/* ------------------------------------------------------------------ */
/* The walk's state                                                    */

#ifdef NATIVE_CODE
typedef struct { char *lo, *hi; frame_descr *d; } frame_range;
#endif

/* A visited block: its address (the BFS queue).  Stored in chunks of
   2^ENTRY_CHUNK_BITS, never moved, through a directory of fixed size (so
   that the walk's loops can keep a pointer to it): the table grows
   without copying. */
typedef struct { value v; } entry;
#define ENTRY_CHUNK_BITS 20
#define ENTRY_CHUNK ((uint64_t)1 << ENTRY_CHUNK_BITS)
#define MAX_BLOCK_ID UINT32_MAX        /* what an id slot holds */
#define ENTRY_CHUNKS ((MAX_BLOCK_ID >> ENTRY_CHUNK_BITS) + 1)

/* Distances in blocks: a block's targets are named about PREFETCH_TARGETS
   blocks after their prefetch, which must cover a miss to memory (shorter
   distances, 16 and 6, left the new targets' headers missing: bigheap 16's
   walk took 15 % longer).  Without the targets' prefetch the walk in the
   pause took 0.84-0.88 s instead of 0.53-0.56 s on bigheap 16, and
   1.24-1.31 s instead of 0.92-0.98 s on bench/snapshot/mixheap.ml 2500. */
#define PREFETCH_BLOCK 48
#define PREFETCH_TARGETS 24

/* The ids of visited blocks, beside the heap: a slot per 16 bytes
   of address space (the block's first field's), in leaves of
   SIDE_LEAF_WORDS slots (32 MiB of address space each) mapped on first
   use, found through a directory of a pointer per leaf over the 48-bit
   address space (mapped, touched only where the heap is).  Two values
   never share a slot: every major block is two words at least (a header
   and a field: caml_shared_try_alloc makes none of wosize 0, empty
   blocks are static atoms), so the first fields of two blocks are 16
   bytes apart or more; an infix pointer (which has a slot too) is
   three words at least past its closure's start and from the closure's
   other infix pointers, and two words at least before its end.  A slot
   per word took twice the memory and the page faults: bench/snapshot's
   walk at 0.30 GiB took 0.20-0.22 s in a child (Gc.major 0.115 s), its
   system time 40-72 ms. */
#define SIDE_SLOT_SHIFT 4
#define SIDE_LEAF_BITS 21
#define SIDE_LEAF_WORDS ((uintnat)1 << SIDE_LEAF_BITS)
#define SIDE_TOP_ENTRIES ((uintnat)1 << (48 - SIDE_SLOT_SHIFT - SIDE_LEAF_BITS))
#define SIDE_LEAF_BYTES (SIDE_LEAF_WORDS * sizeof(uint32_t))
/* A leaf's pages are written in bulk (MADV_POPULATE_WRITE), a granule of
   SIDE_GRANULE_SLOTS slots (64 KiB) when a block is first named there: a
   slot is read before it is written, and page by page the read mapped the
   zero page, then the write faulted again to replace it (twice the page
   faults: bench/snapshot's walk at 1.19 GiB took 0.93 s in the pause and
   1.20 s in a child, 0.70 and 0.93 s with the granules).  Whole leaves
   are not populated: one that covers a little heap would cost 8 MiB.
   The granules done are a bitmap in the page mapped before the leaf's
   slots. */
#define SIDE_GRANULE_BITS 14
#define SIDE_GRANULE_SLOTS ((uintnat)1 << SIDE_GRANULE_BITS)
#define SIDE_HEAD_BYTES 4096

/* The sweep's pools: a pool's slots have ids base, base + 1, ...; a
   slot's index is (address - first) / slot size, computed with recip
   (see sweep_id).  Young heaps and large allocations: ids from [id] for
   the words (young) or the one block (large) of [lo, hi). */
typedef struct { uint64_t base; uintnat first; uint64_t recip;
                 header_t *end; mlsize_t slot_wsize; } sweep_pool;
typedef struct { header_t *lo, *hi; uint64_t id; } sweep_range;
/* A root, as the pause found it, written by the walk once ids are known. */
typedef struct { value v; uint64_t detail; uint32_t kind, label; } sweep_root;

typedef struct {
  caml_domain_state *self;
  /* output */
  mpt_encoder enc;
  mpt_snap_encoder snap;
  uint8_t *buf, *zbuf; size_t zcap;
  int failed;                   /* the writer stopped */
  int companion;                /* chunks go to this file (a forked walk's
                                   TRACE.snapshot), or -1: to the trace */
  /* blocks, by id (index 0 unused): their address, from the chunk of the
     block being written on (the chunks before it are used again: spare) */
  entry **chunks; size_t nchunks; uint64_t n;   /* ENTRY_CHUNKS slots */
  entry **spare; size_t nspare;                 /* ENTRY_CHUNKS slots */
  entry *tail, *tail_end;       /* entry [n + 1], and its chunk's end */
  int incomplete;               /* out of memory: no new block named */
  uint32_t **side_top;          /* SIDE_TOP_ENTRIES leaves, or NULL */
  uint32_t **leaves; size_t nleaves, leaves_cap; /* the leaves mapped */
  addr_map samples, ephemerons;
  uint64_t *sample_bits; size_t sample_words; unsigned sample_shift;
  /* labels: key (a pointer or a small code) -> string id */
  addr_map labels; uint32_t nlabels;
  uint64_t nedges;
  /* current root being scanned */
  enum mpt_root_kind kind;
  uint32_t label;               /* string id, for kinds with one label */
  uint64_t detail;
#ifdef NATIVE_CODE
  frame_range *frames; size_t nframes, frames_cap;
  frame_descr *top_frame;       /* innermost: its live registers are gc_regs */
  value *gc_regs;
  /* module global blocks: [lo, hi) and their label */
  struct { value *lo, *hi; uint32_t label; } *globals; size_t nglobals;
#endif
  /* the sweep's tables (explicit ids, see "The sweep") */
  int sweep;
  caml_domain_state *doms[Max_domains_max]; int ndoms;
  sweep_root *sroots; size_t nsroots, sroots_cap; /* the pause's roots */
  sweep_pool *pools; size_t npools, pools_cap;
  uint32_t *dir; uintnat dir_lo; size_t dir_pages; /* page -> pool + 1 */
  sweep_range *large; size_t nlarge, large_cap;     /* by address */
  sweep_range young[Max_domains_max]; int nyoung;
  uint64_t id_limit;
  /* edges of the block being written */
  uint64_t edges[MPT_SNAP_MAX_EDGES]; uint32_t nbatch;
  uint64_t block_edges; int block_written;
  uint32_t block_tag; uint64_t block_wosize, weak_from;
} walk;

static void flush(walk *w)
{
  size_t used = mpt_enc_used(&w->enc);
  if (used == 0 || w->failed) { mpt_enc_reset_buffer(&w->enc, w->enc.start, w->enc.end - w->enc.start); return; }
  int rc = w->companion >= 0
    ? caml_trace_writer_companion_chunk(w->companion, MPT_CHUNK_SNAPSHOT,
                                        (uint16_t)w->self->id, w->buf, used,
                                        w->zbuf, w->zcap)
    : caml_trace_writer_typed_chunk(MPT_CHUNK_SNAPSHOT, (uint16_t)w->self->id,
                                    w->buf, used, NULL, w->zbuf, w->zcap);
  if (rc < 0) w->failed = 1;
  mpt_enc_reset_buffer(&w->enc, w->buf + MPT_CHUNK_HEADER_BYTES,
                       BUF_BYTES - MPT_CHUNK_HEADER_BYTES);
}

static inline void room(walk *w, size_t n)
{
  if (mpt_enc_space(&w->enc) < n) flush(w);
}

/* The string id of a label, defined in the snapshot on first use. */
static uint32_t label_id(walk *w, uintnat key, const char *text)
{
  uint64_t id = map_get(&w->labels, key);
  if (id) return (uint32_t)id;
  id = ++w->nlabels;
  if (!map_put(&w->labels, key, id)) return 0;
  room(w, MPT_MAX_STRING + 32);
  mpt_enc_snap_string(&w->enc, (uint32_t)id, text, strlen(text));
  return (uint32_t)id;
}

/* Fixed labels are keyed by small codes (never block addresses). */
enum { L_LOCAL = 1, L_C_GLOBAL, L_FINAL, L_THREADS, L_REGISTERS,
       L_BYTECODE_STACK, L_GLOBAL_DATA, L_MEMPROF_DATA };

/* A chunk of entries, in 4 KiB pages: see "Data structures" for why not
   huge ones. */
#define CHUNK_BYTES (ENTRY_CHUNK * sizeof(entry))
/* and the overflow past its end (see queue_slow): a page */
#define CHUNK_MAP_BYTES (CHUNK_BYTES + 4096)
_Static_assert(PREFETCH_BLOCK * sizeof(entry) <= 4096, "overflow page");
static entry *new_chunk(void)
{
  return pages_alloc(CHUNK_MAP_BYTES);
}

/* Room for entry [id]: false when memory ran out (the walk then names
   no new block).  A chunk the walk has written all the blocks of is used
   again (recycle_chunk): the table holds the queue of the blocks named
   and not written yet, which is much shorter than the heap's blocks, and
   only its pages are ever zeroed by the system. */
static int entry_room(walk *w, uint64_t id)
{
  if (w->incomplete) return 0;
  size_t c = (size_t)(id >> ENTRY_CHUNK_BITS);
  if (c < w->nchunks) return 1;
  if (c >= ENTRY_CHUNKS
      || !(w->chunks[c] = w->nspare ? w->spare[--w->nspare] : new_chunk())) {
    w->incomplete = 1;
    return 0;
  }
  w->nchunks = c + 1;
  return 1;
}

/* The leaf for directory index [t], mapped now: NULL when memory ran
   out. */
static uint32_t *side_leaf(walk *w, uintnat t)
{
  if (w->nleaves == w->leaves_cap) {
    size_t cap = w->leaves_cap ? 2 * w->leaves_cap : 512;
    uint32_t **l = pages_alloc(cap * sizeof *l);
    if (!l) return NULL;
    if (w->nleaves) memcpy(l, w->leaves, w->nleaves * sizeof *l);
    pages_free(w->leaves, w->leaves_cap * sizeof *l);
    w->leaves = l; w->leaves_cap = cap;
  }
  char *mapped = pages_alloc(SIDE_HEAD_BYTES + SIDE_LEAF_BYTES);
  if (!mapped) return NULL;
  uint32_t *leaf = (uint32_t *)(mapped + SIDE_HEAD_BYTES);
  w->leaves[w->nleaves++] = leaf;
  w->side_top[t] = leaf;
  return leaf;
}

/* Granule [g] of [leaf] is written (in bulk where the system can). */
static __attribute__((noinline)) void side_populate(uint64_t *done,
                                                    uint32_t *leaf, uintnat g)
{
  done[g / 64] |= (uint64_t)1 << (g % 64);
#ifdef MADV_POPULATE_WRITE
  madvise(leaf + (g << SIDE_GRANULE_BITS), SIDE_GRANULE_SLOTS * sizeof *leaf,
          MADV_POPULATE_WRITE);
#else
  (void)leaf;
#endif
}

/* Slot [a] (an address >> SIDE_SLOT_SHIFT) of [leaf] is about to be
   written: its granule's pages, at once. */
static inline void side_touch(uint32_t *leaf, uintnat a)
{
  uint64_t *done = (uint64_t *)((char *)leaf - SIDE_HEAD_BYTES);
  uintnat g = (a & (SIDE_LEAF_WORDS - 1)) >> SIDE_GRANULE_BITS;
  if (!(done[g / 64] & ((uint64_t)1 << (g % 64))))
    side_populate(done, leaf, g);
}

/* The walk is past chunk [c] (its blocks are written): a spare chunk. */
static void recycle_chunk(walk *w, size_t c)
{
  w->spare[w->nspare++] = w->chunks[c];
  w->chunks[c] = NULL;
}

/* add_block's slow path, where tail == tail_end: queue block [v] at
   the start of a chunk (mapping it), or among the first PREFETCH_BLOCK
   entries of one, which are also written past the end of the chunk
   before it (its overflow) while the walk reads that chunk, so that the
   walk reads the blocks it prefetches at a fixed distance in the same
   chunk.  False when memory or ids ran out, or after the walk gave up
   naming blocks (tail stays at tail_end: every later block comes here to
   be refused). */
static __attribute__((noinline)) int queue_slow(walk *w, value v)
{
  if (w->incomplete) return 0;
  uint64_t id = w->n + 1;
  size_t c = (size_t)(id >> ENTRY_CHUNK_BITS), i = id & (ENTRY_CHUNK - 1);
  entry *chunk;
  if (i == 0 || w->tail == NULL) {
    if (!entry_room(w, id)) return 0;   /* past MAX_BLOCK_ID too */
    chunk = w->chunks[c];
  } else {
    chunk = w->tail - i;
  }
  chunk[i].v = v;
  if (i < PREFETCH_BLOCK && c > 0 && w->chunks[c - 1] != NULL)
    w->chunks[c - 1][ENTRY_CHUNK + i].v = v;
  w->tail = chunk + i + 1;
  w->tail_end = i + 1 < PREFETCH_BLOCK ? w->tail : chunk + ENTRY_CHUNK;
  return 1;
}

/* Name block [v], seen for the first time, whose id slot is [slot], slot
   [a] of [leaf] (where it was looked up): the next id, queued. */
static inline uint64_t add_block(walk *w, value v, uint32_t *leaf, uintnat a,
                                 uint32_t *slot)
{
  if (__builtin_expect(w->tail == w->tail_end, 0)) {
    if (!queue_slow(w, v)) return 0;
  } else {
    (w->tail++)->v = v;
  }
  side_touch(leaf, a);
  uint64_t id = ++w->n;
  *slot = (uint32_t)id;
  return id;
}

static uint64_t visit_infix(walk *w, value v, uint32_t *slot, header_t hd);

/* visit, past its read of the id slot (where the leaf is mapped), in the
   cases it leaves out of line: an unmapped leaf, 0 (a field of a module
   block not initialised yet), an infix pointer, static data.  0 when [v]
   is not a heap block. */
static __attribute__((noinline)) uint64_t visit_rare(walk *w, value v)
{
  if (v == 0) return 0;
  uintnat a = (uintnat)v >> SIDE_SLOT_SHIFT, t = a >> SIDE_LEAF_BITS;
  uint32_t *leaf = t < SIDE_TOP_ENTRIES ? w->side_top[t] : NULL;
  if (leaf == NULL && (t >= SIDE_TOP_ENTRIES
                       || (leaf = side_leaf(w, t)) == NULL)) {
    w->incomplete = 1;
    w->tail_end = w->tail;              /* no block named from now on */
    return 0;
  }
  uint32_t *slot = &leaf[a & (SIDE_LEAF_WORDS - 1)];
  if (*slot) return *slot;
  header_t hd = Hd_val(v);
  if (Tag_hd(hd) == Infix_tag) return visit_infix(w, v, slot, hd);
  if (Has_status_hd(hd, NOT_MARKABLE)) return 0;
  return add_block(w, v, leaf, a, slot);
}

/* The id of block [v], naming it (and queueing it) on first sight; 0 when
   [v] is not a heap block (an immediate, static data).  The common case,
   a block already named, is one read of its id slot, and the next, a
   plain block seen for the first time, is named inline.  Young blocks
   are named as major ones, through their id slots (the walk writes no
   header: neither needs a mark of its own).  A slot is never set for
   address 0 (no block starts within 16 bytes of it), so 0 is told apart
   only where the slot is not set. */
static inline uint64_t visit(walk *w, value v)
{
  if (!Is_block(v)) return 0;
  uintnat a = (uintnat)v >> SIDE_SLOT_SHIFT, t = a >> SIDE_LEAF_BITS;
  uint32_t *leaf = t < SIDE_TOP_ENTRIES ? w->side_top[t] : NULL;
  if (__builtin_expect(leaf != NULL, 1)) {
    uint32_t *slot = &leaf[a & (SIDE_LEAF_WORDS - 1)];
    uint32_t id = *slot;
    if (id) return id;
    header_t hd;
    if (v != 0 && (hd = Hd_val(v), Tag_hd(hd) != Infix_tag)
        && !Has_status_hd(hd, NOT_MARKABLE))
      return add_block(w, v, leaf, a, slot);
  }
  return visit_rare(w, v);
}

/* An infix pointer: the closure's id, kept in its slot too. */
static uint64_t visit_infix(walk *w, value v, uint32_t *slot, header_t hd)
{
  uint64_t id = visit(w, v - Infix_offset_hd(hd));
  *slot = (uint32_t)id;
  return id;
}

/* ------------------------------------------------------------------ */
/* Roots                                                               */

static uint64_t sweep_id(const walk *w, value v);

/* The id of block [v] in either walk (0: not a heap block). */
static inline uint64_t target_id(walk *w, value v)
{
  return w->sweep ? sweep_id(w, v) : visit(w, v);
}

static void write_root(walk *w, enum mpt_root_kind kind, uint32_t label,
                       uint64_t detail, uint64_t id)
{
  room(w, 64);
  mpt_enc_snap_root(&w->enc, &w->snap, kind,
                    kind == MPT_ROOT_MEMPROF ? MPT_ROOT_NONRETAINING : 0,
                    label, detail, id);
}

/* A root: written at once by the walk from the roots (which names its
   target); kept for later by the sweep, whose ids are known only once
   its tables are built (in the forked child: see walk_sweep). */
static void emit_root(walk *w, value v, uint32_t label)
{
  if (w->sweep) {
    if (!Is_block(v) || v == 0) return;
    if (!pages_grow((void **)&w->sroots, &w->sroots_cap, w->nsroots + 1,
                    sizeof *w->sroots)) {
      w->incomplete = 1;
      return;
    }
    w->sroots[w->nsroots++] = (sweep_root){ v, w->detail, w->kind, label };
    return;
  }
  uint64_t id = visit(w, v);
  if (id) write_root(w, w->kind, label, w->detail, id);
}

static void root_fixed(void *data, value v, volatile value *p)
{
  (void)p;
  walk *w = data;
  emit_root(w, v, w->label);
}

#ifdef NATIVE_CODE
static int frame_cmp(const void *a, const void *b)
{
  const frame_range *x = a, *y = b;
  return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The address ranges of the frames of [stack] and its parents (the walk
   of upstream's scan_stack_frames, keeping the ranges only). */
static void collect_frames(walk *w, struct stack_info *stack)
{
  caml_frame_descrs *fds = caml_get_frame_descrs();
  w->nframes = 0;
  w->top_frame = NULL;
  for (; stack != NULL; stack = Stack_parent(stack)) {
    char *sp = (char *)stack->sp;
    while (sp != (char *)Stack_high(stack)) {
      sp = First_frame(sp);
      uintnat retaddr = Saved_return_address(sp);
      for (;;) {
        frame_descr *d = caml_find_frame_descr(fds, retaddr);
        if (d == NULL) return;
        if (frame_return_to_C(d)) { sp += Stack_header_size; break; }
        if (w->nframes == w->frames_cap) {
          size_t cap = w->frames_cap ? 2 * w->frames_cap : 256;
          frame_range *f = realloc(w->frames, cap * sizeof *f);
          if (!f) return;
          w->frames = f; w->frames_cap = cap;
        }
        if (w->top_frame == NULL) w->top_frame = d;
        w->frames[w->nframes++] = (frame_range){ sp, sp + frame_size(d), d };
        sp += frame_size(d);
        retaddr = Saved_return_address(sp);
      }
    }
  }
  qsort(w->frames, w->nframes, sizeof *w->frames, frame_cmp);
}

static uint32_t frame_label(walk *w, frame_descr *d)
{
  uint64_t id = map_get(&w->labels, (uintnat)d);
  if (id) return (uint32_t)id;
  char text[512] = "";
  /* The frame belongs to the outermost function of the call site's
     inlining chain (the innermost may be an inlined function, or the
     declaration of an external). */
  for (debuginfo dbg = caml_debuginfo_extract((backtrace_slot)d); dbg;
       dbg = caml_debuginfo_next(dbg)) {
    struct caml_loc_info li;
    caml_debuginfo_location(dbg, &li);
    if (li.loc_valid)
      snprintf(text, sizeof text, "%s (%s:%d)", li.loc_defname,
               li.loc_filename, li.loc_start_lnum);
  }
  if (!text[0]) snprintf(text, sizeof text, "frame at 0x%lx", (unsigned long)d->retaddr);
  return label_id(w, (uintnat)d, text);
}

static void root_stack(void *data, value v, volatile value *p)
{
  walk *w = data;
  char *a = (char *)p;
  size_t lo = 0, hi = w->nframes;
  while (lo < hi) {                 /* last frame with frame.lo <= a */
    size_t mid = (lo + hi) / 2;
    if (w->frames[mid].lo <= a) lo = mid + 1; else hi = mid;
  }
  uint32_t label;
  if (lo > 0 && a < w->frames[lo - 1].hi) label = frame_label(w, w->frames[lo - 1].d);
  /* Outside the frames: a register saved in gc_regs (live in the
     innermost frame, interrupted at a poll or an allocation), registers
     of an outer stack chunk, or a fiber's handlers. */
  else if (w->top_frame && w->gc_regs && (value *)a >= w->gc_regs
           && (value *)a < w->gc_regs + Wosize_gc_regs)
    label = frame_label(w, w->top_frame);
  else label = label_id(w, L_REGISTERS, "registers and effect handlers");
  emit_root(w, v, label);
}

static int global_cmp(const void *a, const void *b)
{
  value *x = *(value *const *)a, *y = *(value *const *)b;
  return x < y ? -1 : x > y;
}

/* Module globals: the fields of each compilation unit's static block. */
static void scan_module_globals(walk *w)
{
  size_t n = 0;
  for (int i = 0; caml_globals[i] != 0; i++)
    for (value *glob = caml_globals[i]; *glob != 0; glob++) n++;
  w->globals = calloc(n ? n : 1, sizeof *w->globals);
  if (!w->globals) return;
  w->kind = MPT_ROOT_GLOBAL;
  for (int i = 0; caml_globals[i] != 0; i++)
    for (value *glob = caml_globals[i]; *glob != 0; glob++) {
      char text[32];
      snprintf(text, sizeof text, "0x%lx", (unsigned long)*glob);
      uint32_t label = label_id(w, (uintnat)*glob, text);
      w->globals[w->nglobals].lo = (value *)*glob;
      w->globals[w->nglobals].hi = (value *)*glob + Wosize_val(*glob);
      w->globals[w->nglobals].label = label;
      w->nglobals++;
      for (mlsize_t j = 0; j < Wosize_val(*glob); j++) {
        w->detail = j;
        emit_root(w, Field(*glob, j), label);
      }
    }
  qsort(w->globals, w->nglobals, sizeof *w->globals, global_cmp);
}

static int in_module_global(walk *w, volatile value *p)
{
  size_t lo = 0, hi = w->nglobals;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (w->globals[mid].lo <= (value *)p) lo = mid + 1; else hi = mid;
  }
  return lo > 0 && (value *)p < w->globals[lo - 1].hi;
}
#endif

/* C global roots, minus the module globals already written. */
static void root_c_global(void *data, value v, volatile value *p)
{
  walk *w = data;
#ifdef NATIVE_CODE
  if (in_module_global(w, p)) return;
#else
  if (p == &caml_global_data) {
    enum mpt_root_kind k = w->kind;
    w->kind = MPT_ROOT_GLOBAL;
    emit_root(w, v, label_id(w, L_GLOBAL_DATA, "caml_global_data"));
    w->kind = k;
    return;
  }
#endif
  emit_root(w, v, w->label);
}

static void scan_domain_roots(walk *w, caml_domain_state *d)
{
  w->detail = (uint64_t)d->id;
  w->kind = MPT_ROOT_LOCAL;
  w->label = label_id(w, L_LOCAL, "C local roots");
  for (struct caml__roots_block *lr = d->local_roots; lr != NULL; lr = lr->next)
    for (int i = 0; i < lr->ntables; i++)
      for (int j = 0; j < lr->nitems; j++) {
        value *sp = &(lr->tables[i][j]);
        if (*sp != 0) root_fixed(w, *sp, sp);
      }
  w->kind = MPT_ROOT_STACK;
#ifdef NATIVE_CODE
  collect_frames(w, d->current_stack);
  w->gc_regs = d->gc_regs;
  caml_scan_stack(root_stack, 0, w, d->current_stack, d->gc_regs);
#else
  w->label = label_id(w, L_BYTECODE_STACK, "bytecode stack");
  caml_scan_stack(root_fixed, 0, w, d->current_stack, d->gc_regs);
#endif
  scan_roots_hook hook = atomic_load(&caml_scan_roots_hook);
  if (hook != NULL) {
    w->kind = MPT_ROOT_THREAD;
    w->label = label_id(w, L_THREADS, "other threads");
    hook(root_fixed, 0, w, d);
  }
  w->kind = MPT_ROOT_FINALISER;
  w->label = label_id(w, L_FINAL, "finalisers");
  caml_final_do_roots(root_fixed, 0, w, d, 1);
}

/* Statmemprof's strong roots of domain [d], once [d] has settled its
   tables for [cycle] (see Synchronisation). */
static void scan_memprof_roots(walk *w, caml_domain_state *d, uintnat cycle)
{
  while (atomic_load_acquire(&memprof_settled[d->id]) != cycle + 1)
    cpu_relax();
  w->detail = (uint64_t)d->id;
  w->kind = MPT_ROOT_MEMPROF;
  w->label = label_id(w, L_MEMPROF_DATA, "Gc.Memprof tracker data");
  caml_memprof_scan_roots(root_fixed, 0, w, d, false);
}

/* ------------------------------------------------------------------ */
/* Blocks                                                              */

static void edges_flush(walk *w)
{
  room(w, MPT_SNAP_MAX_RECORD_BYTES);
  if (!w->block_written) {
    mpt_enc_snap_block(&w->enc, &w->snap, w->block_tag, w->block_wosize,
                       w->edges, w->nbatch, w->weak_from);
    w->block_written = 1;
  } else {
    mpt_enc_snap_edges(&w->enc, &w->snap, w->edges, w->nbatch);
  }
  w->nedges += w->nbatch;
  w->nbatch = 0;
}

static inline void edge(walk *w, value v)
{
  uint64_t id = target_id(w, v);
  if (!id) return;
  w->edges[w->nbatch++] = id;
  w->block_edges++;
  if (w->nbatch == MPT_SNAP_MAX_EDGES) edges_flush(w);
}

static void edge_action(void *data, value v, volatile value *p)
{
  (void)p;
  edge(data, v);
}

/* The common block (mpt_snap_small_block_begin's: a small tag, fewer than
   128 fields, all scanned), written in place as its fields are visited:
   one check of the buffer's room, no copy of its targets. */
static inline void write_small_block(walk *w, value v, tag_t tag,
                                     mlsize_t wosize)
{
  room(w, 3 + 10 * (size_t)wosize);
  uint8_t *head = w->enc.pos;
  uint8_t *p = mpt_snap_small_block_begin(head, &w->snap, tag,
                                          (uint32_t)wosize);
  uint64_t assigned = w->snap.assigned;
  uint32_t n = 0;
  for (mlsize_t i = 0; i < wosize; i++) {
    uint64_t target = visit(w, Field(v, i));
    if (target == 0) continue;
    p = mpt_snap_put_target(p, &assigned, target);
    n++;
  }
  mpt_snap_small_block_end(head, n);
  w->enc.pos = p;
  w->snap.assigned = assigned;
  w->nedges += n;
}

/* Any other block: a large one, a closure, a continuation, an ephemeron,
   one of a tag from 0x80 (Lazy, Forward, Object...) or not scanned. */
static void write_block(walk *w, uint64_t id, value v, tag_t tag,
                        mlsize_t wosize)
{
  /* A plain block or a closure (its environment): its targets gathered
     MPT_SNAP_MAX_EDGES at a time, the first ones written with the block,
     the next in EDGES records.  (Through edge(), an array's fields cost
     about 80 instructions each and the records' writing 65 more: a 128
     MiB array of strings of 16 words, cachegrind.) */
  if (tag < No_scan_tag && tag != Cont_tag) {
    mlsize_t i = tag == Closure_tag ? Start_env_closinfo(Closinfo_val(v)) : 0;
    int first = 1;
    do {
      uint32_t n = 0;
      for (; i < wosize && n < MPT_SNAP_MAX_EDGES; i++) {
        uint64_t t = target_id(w, Field(v, i));
        w->edges[n] = t;
        n += t != 0;
      }
      if (n == 0 && !first) break;      /* immediates after a full record */
      room(w, 48 + 10 * (size_t)n);
      if (first)
        mpt_enc_snap_block(&w->enc, &w->snap, tag, wosize, w->edges, n,
                           UINT64_MAX);
      else
        mpt_enc_snap_edges(&w->enc, &w->snap, w->edges, n);
      w->nedges += n;
      first = 0;
    } while (i < wosize);
    return;
  }
  /* Not scanned, and neither an ephemeron (Abstract_tag) nor custom:
     the block alone. */
  if (tag > Abstract_tag && tag != Custom_tag) {
    room(w, 48);
    mpt_enc_snap_block(&w->enc, &w->snap, tag, wosize, NULL, 0, UINT64_MAX);
    return;
  }
  w->block_tag = tag; w->block_wosize = wosize;
  w->weak_from = UINT64_MAX;
  w->nbatch = 0; w->block_edges = 0; w->block_written = 0;
  if (tag == Cont_tag) {
    struct stack_info *stk = Ptr_val(Field(v, 0));
    if (stk != NULL) caml_scan_stack(edge_action, 0, w, stk, 0);
  } else if (tag == Abstract_tag && map_get(&w->ephemerons, v)) {
    if (wosize > CAML_EPHE_DATA_OFFSET) edge(w, Field(v, CAML_EPHE_DATA_OFFSET));
    w->weak_from = w->block_edges;
    for (mlsize_t i = CAML_EPHE_FIRST_KEY; i < wosize; i++) edge(w, Field(v, i));
    if (w->weak_from == w->block_edges) w->weak_from = UINT64_MAX;
  }
  if (w->nbatch || !w->block_written) edges_flush(w);
  if (tag == Custom_tag) {
    const struct custom_operations *ops = Custom_ops_val(v);
    const char *ident = ops && ops->identifier ? ops->identifier : "";
    uint64_t ext = 0;
    if (strcmp(ident, "_bigarr02") == 0)
      ext = caml_ba_byte_size(Caml_ba_array_val(v));
    uint32_t label = label_id(w, (uintnat)ops, ident);
    room(w, 48);
    mpt_enc_snap_custom(&w->enc, &w->snap, id, label, ext);
  }
}

/* The tracked samples' filter: a bitmap of their addresses' hashes, in
   front of the samples map, so that a block not sampled (almost all) is
   told by one bit instead of a probe of the map. */
static inline size_t sample_bit(const walk *w, value v)
{
  uint64_t h = ((uintnat)v >> 3) * 0x9e3779b97f4a7c15ull;
  return (size_t)(h >> w->sample_shift);
}

/* The bitmap of w->samples, 16 bits or more per sample (a false positive
   costs a probe of the map). */
static void sample_filter_build(walk *w)
{
  if (!w->samples.count) return;
  unsigned bits = 12;
  while (bits < 30 && ((size_t)1 << bits) < 16 * w->samples.count) bits++;
  w->sample_words = ((size_t)1 << bits) / 64;
  w->sample_bits = pages_alloc(w->sample_words * sizeof *w->sample_bits);
  if (!w->sample_bits) { w->sample_words = 0; return; }
  w->sample_shift = 64 - bits;
  for (size_t i = 0; i < w->samples.cap; i++)
    if (w->samples.t[i].key) {
      size_t b = sample_bit(w, (value)w->samples.t[i].key);
      w->sample_bits[b / 64] |= (uint64_t)1 << (b % 64);
    }
}

/* The SAMPLE record before block [v]'s, if it is a tracked sample. */
static inline void write_sample(walk *w, value v)
{
  if (!w->samples.count) return;
  if (w->sample_bits) {
    size_t b = sample_bit(w, v);
    if (!(w->sample_bits[b / 64] & ((uint64_t)1 << (b % 64)))) return;
  }
  uint64_t sample = map_get(&w->samples, v);
  if (sample) { room(w, 16); mpt_enc_snap_sample(&w->enc, &w->snap, sample); }
}

/* ------------------------------------------------------------------ */
/* The sweep (memprof_snapshot_sweep=1)                                */

/* A pool, from caml_memprof_heap_pools (ids are given once all are). */
static void sweep_add_pool(void *data, header_t *first, header_t *end,
                           mlsize_t slot_wsize)
{
  walk *w = data;
  if (!pages_grow((void **)&w->pools, &w->pools_cap, w->npools + 1,
                  sizeof *w->pools)) {
    w->incomplete = 1;
    return;
  }
  w->pools[w->npools++] = (sweep_pool){
    .first = (uintnat)first, .end = end, .slot_wsize = slot_wsize,
    .recip = ((uint64_t)1 << 32) / Bsize_wsize(slot_wsize) + 1 };
}

static void sweep_add_large(void *data, header_t *hp)
{
  walk *w = data;
  if (!pages_grow((void **)&w->large, &w->large_cap, w->nlarge + 1,
                  sizeof *w->large)) {
    w->incomplete = 1;
    return;
  }
  w->large[w->nlarge++] = (sweep_range){ hp, hp + Whsize_hd(*hp), 0 };
}

/* Heapsort of the large blocks by address: no qsort, which may call
   malloc, in a forked child. */
static void sift_down(sweep_range *a, size_t i, size_t n)
{
  for (size_t c; (c = 2 * i + 1) < n; i = c) {
    if (c + 1 < n && a[c + 1].lo > a[c].lo) c++;
    if (a[c].lo <= a[i].lo) return;
    sweep_range t = a[i]; a[i] = a[c]; a[c] = t;
  }
}

static void sort_ranges(sweep_range *a, size_t n)
{
  for (size_t i = n / 2; i-- > 0; ) sift_down(a, i, n);
  for (size_t k = n; k-- > 1; ) {
    sweep_range t = a[0]; a[0] = a[k]; a[k] = t;
    sift_down(a, 0, k);
  }
}

/* The sweep's tables, by the walk (in a forked child, out of the pause:
   the pools' lists are chased from header to header, a miss each, 27 ms
   for 30 k pools and 17 k large blocks on bench/snapshot/mixheap.ml
   2500): every pool, young heap and large allocation of the domains and
   the orphaned ones, their ids (pools' slots, then young heaps' words,
   then large blocks), and the page directory that finds a pool from an
   address.  0 when memory or ids ran out (the caller then walks from
   the roots). */
static int sweep_prepare(walk *w)
{
  for (int i = 0; i < w->ndoms; i++)
    caml_memprof_heap_pools(w->doms[i]->shared_heap, sweep_add_pool,
                            sweep_add_large, w);
  caml_memprof_heap_pools(NULL, sweep_add_pool, sweep_add_large, w);
  if (w->incomplete) return 0;
  sort_ranges(w->large, w->nlarge);
  uint64_t next = 1;
  uintnat lo = UINTPTR_MAX, hi = 0;
  for (size_t i = 0; i < w->npools; i++) {
    sweep_pool *p = &w->pools[i];
    p->base = next;
    next += (uint64_t)((p->end - (header_t *)p->first) / p->slot_wsize);
    if ((p->first & ~(uintnat)4095) < lo) lo = p->first & ~(uintnat)4095;
    if ((uintnat)p->end > hi) hi = (uintnat)p->end;
  }
  for (int i = 0; i < w->ndoms; i++) {
    sweep_range *y = &w->young[w->nyoung++];
    y->lo = (header_t *)w->doms[i]->young_ptr;
    y->hi = (header_t *)w->doms[i]->young_end;
    y->id = next;
    next += (uint64_t)(y->hi - y->lo);
  }
  for (size_t i = 0; i < w->nlarge; i++) w->large[i].id = next++;
  /* (The tools read ids up to 2^31 - 1; a sweep's are more than its
     blocks: its free slots have theirs.) */
  if (next - 1 > UINT32_MAX / 2) return 0;
  w->id_limit = next - 1;
  if (w->npools) {
    w->dir_lo = lo;
    w->dir_pages = (hi - lo + 4095) >> 12;
    w->dir = pages_alloc(w->dir_pages * sizeof *w->dir);
    if (!w->dir) return 0;
    for (size_t i = 0; i < w->npools; i++)
      for (uintnat pg = w->pools[i].first & ~(uintnat)4095;
           pg < (uintnat)w->pools[i].end; pg += 4096)
        w->dir[(pg - lo) >> 12] = (uint32_t)(i + 1);
  }
  return 1;
}

/* sweep_id where [v] is in no pool: a young block (infix pointers read
   their header, the young heap being small), a large one (any address
   in it), else none (static data, 0). */
static __attribute__((noinline)) uint64_t sweep_id_rare(const walk *w,
                                                        value v)
{
  header_t *hp = (header_t *)Hp_val(v);
  for (int i = 0; i < w->nyoung; i++)
    if (hp >= w->young[i].lo && hp < w->young[i].hi) {
      if (Tag_hd(*hp) == Infix_tag) hp = (header_t *)Hp_val(v - Infix_offset_hd(*hp));
      return w->young[i].id + (uint64_t)(hp - w->young[i].lo);
    }
  size_t lo = 0, n = w->nlarge;
  while (lo < n) {                     /* last large block from <= hp */
    size_t mid = (lo + n) / 2;
    if (w->large[mid].lo <= hp) lo = mid + 1; else n = mid;
  }
  if (lo > 0 && hp < w->large[lo - 1].hi) return w->large[lo - 1].id;
  return 0;
}

/* The id of block [v] (any address in its slot: infix pointers too),
   without reading the block: a pool's from the page directory and the
   slot's index, by a multiply with the slot size's reciprocal (exact:
   an offset below 2^15 bytes times a size below 2^11 stays below 2^32). */
static inline uint64_t sweep_id(const walk *w, value v)
{
  if (!Is_block(v)) return 0;
  uintnat pg = ((uintnat)v - w->dir_lo) >> 12;
  if (__builtin_expect(pg < w->dir_pages, 1)) {
    uint32_t i = w->dir[pg];
    if (__builtin_expect(i != 0, 1)) {
      const sweep_pool *p = &w->pools[i - 1];
      return p->base
        + ((((uintnat)v - sizeof(header_t) - p->first) * p->recip) >> 32);
    }
  }
  return sweep_id_rare(w, v);
}

/* Block [hp] (header [hd]) of id [id], after the ids without a block. */
static inline void sweep_block(walk *w, uint64_t id, header_t *hp,
                               header_t hd)
{
  if (id != w->snap.next_id) {
    room(w, 16);
    mpt_enc_snap_skip(&w->enc, &w->snap, id - w->snap.next_id);
  }
  value v = Val_hp(hp);
  tag_t tag = Tag_hd(hd);
  mlsize_t wosize = Wosize_hd(hd);
  write_sample(w, v);
  if (tag < MPT_SNAP_SMALL_TAG && wosize < MPT_SNAP_SMALL_WOSIZE) {
    room(w, 3 + 10 * (size_t)wosize);
    uint8_t *head = w->enc.pos;
    uint8_t *p = mpt_snap_small_block_begin(head, &w->snap, tag,
                                            (uint32_t)wosize);
    uint32_t n = 0;
    for (mlsize_t i = 0; i < wosize; i++) {
      uint64_t t = sweep_id(w, Field(v, i));
      if (t == 0) continue;
      p = mpt_snap_put_explicit(p, &w->snap, n++, t);
    }
    mpt_snap_small_block_end(head, n);
    w->enc.pos = p;
    w->nedges += n;
  } else if (tag == String_tag || tag == Double_tag
             || tag == Double_array_tag) {
    /* A leaf, written inline (through write_block: about 100
       instructions a string, callgrind) */
    room(w, 16);
    uint8_t *p = mpt_snap_block_head(w->enc.pos, &w->snap, tag, wosize);
    *p++ = 0;
    w->enc.pos = p;
  } else {
    write_block(w, w->snap.emitted + 1, v, tag, wosize);
  }
}

/* The sweep: every pool's marked blocks in slot order, every young
   block, every marked large block, each with its targets' ids.  Blocks
   no root reaches are written too (young ones that died, and major ones
   dead since the cycle began or allocated during it); readers drop
   them. */
static void walk_blocks_sweep(walk *w, int (*orphaned)(void))
{
  header_t marked = caml_global_heap_state.MARKED;
  for (size_t i = 0; i < w->npools; i++) {
    if ((i & 1023) == 0 && orphaned && orphaned()) return;
    const sweep_pool *pl = &w->pools[i];
    if (i + 1 < w->npools) __builtin_prefetch((void *)w->pools[i + 1].first);
    mlsize_t wh = pl->slot_wsize;
    uint64_t id = pl->base;
    for (header_t *hp = (header_t *)pl->first; hp + wh <= pl->end;
         hp += wh, id++) {
      header_t hd = *hp;
      if (hd == 0 || !Has_status_hd(hd, marked)) continue;
      sweep_block(w, id, hp, hd);
    }
  }
  for (int i = 0; i < w->nyoung; i++)
    for (header_t *hp = w->young[i].lo; hp < w->young[i].hi;
         hp += Whsize_hd(*hp))
      sweep_block(w, w->young[i].id + (uint64_t)(hp - w->young[i].lo), hp,
                  *hp);
  for (size_t i = 0; i < w->nlarge; i++)
    if (Has_status_hd(*w->large[i].lo, marked))
      sweep_block(w, w->large[i].id, w->large[i].lo, *w->large[i].lo);
}

/* ------------------------------------------------------------------ */
/* Taking a snapshot                                                   */

/* Prefetch the id slots of the first targets of block [e], which the
   walk will soon check, and their headers (read for the new ones). */
static inline void prefetch_targets(uint32_t *const *side_top, value v)
{
  header_t hd = Hd_val(v);
  /* write_small_block's blocks only: the others are few */
  if (Tag_hd(hd) >= MPT_SNAP_SMALL_TAG) return;
  mlsize_t n = Wosize_hd(hd);
  /* (Fields read as volatile, as Field does: else the compiler finds
     nothing but prefetches in the loop, which it then deletes.) */
  volatile value *p = &Field(v, 0), *end = p + (n < 8 ? n : 8);
  for (; p < end; p++) {
    value f = *p;
    if (!Is_block(f)) continue;   /* 0 too: a prefetch never faults */
    /* Nor does it where there is no leaf (NULL), or out of the covered
       space (masked: some leaf, if any). */
    uintnat a = (uintnat)f >> SIDE_SLOT_SHIFT;
    uint32_t *leaf = side_top[(a >> SIDE_LEAF_BITS) & (SIDE_TOP_ENTRIES - 1)];
    __builtin_prefetch((void *)((uintnat)leaf + (a & (SIDE_LEAF_WORDS - 1))
                                * sizeof *leaf));
    __builtin_prefetch((void *)Hp_val(f));
  }
}

static uint64_t mono_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void add_sample(void *data, value block, uint64_t id)
{
  walk *w = data;
  map_put(&w->samples, block, id);
}

static void walk_free(walk *w)
{
  free(w->buf); free(w->zbuf);
  for (size_t c = 0; c < w->nchunks; c++) pages_free(w->chunks[c], CHUNK_MAP_BYTES);
  for (size_t c = 0; c < w->nspare; c++) pages_free(w->spare[c], CHUNK_MAP_BYTES);
  free(w->chunks); free(w->spare);
  for (size_t l = 0; l < w->nleaves; l++)
    pages_free((char *)w->leaves[l] - SIDE_HEAD_BYTES,
               SIDE_HEAD_BYTES + SIDE_LEAF_BYTES);
  pages_free(w->leaves, w->leaves_cap * sizeof *w->leaves);
  pages_free(w->side_top, SIDE_TOP_ENTRIES * sizeof *w->side_top);
  map_free(&w->samples); map_free(&w->ephemerons);
  pages_free(w->sample_bits, w->sample_words * sizeof *w->sample_bits);
  map_free(&w->labels);
  pages_free(w->pools, w->pools_cap * sizeof *w->pools);
  pages_free(w->large, w->large_cap * sizeof *w->large);
  pages_free(w->sroots, w->sroots_cap * sizeof *w->sroots);
  pages_free(w->dir, w->dir_pages * sizeof *w->dir);
#ifdef NATIVE_CODE
  free(w->frames); free(w->globals);
#endif
  free(w);
}

/* The walk's first part, in the pause, from what only the running world
   knows: the tracked samples, the ephemerons, BEGIN and every root (which
   names, and marks, the roots' targets: entries 1..w->n).  NULL when out
   of memory. */
static walk *walk_roots(caml_domain_state *self, int companion)
{
  caml_domain_state *doms[Max_domains_max];
  int ndoms = caml_memprof_tracer_domain_states(doms, Max_domains_max);
  walk *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  w->self = self;
  w->companion = companion;
  w->chunks = calloc(ENTRY_CHUNKS, sizeof *w->chunks);
  w->spare = calloc(ENTRY_CHUNKS, sizeof *w->spare);
  w->side_top = pages_alloc(SIDE_TOP_ENTRIES * sizeof *w->side_top);
  w->zcap = mpt_frame_bound(BUF_BYTES);
  w->buf = malloc(BUF_BYTES);
  w->zbuf = malloc(w->zcap);
  if (!w->chunks || !w->spare || !w->side_top || !w->buf || !w->zbuf) {
    walk_free(w);
    return NULL;
  }
  mpt_enc_init(&w->enc, w->buf + MPT_CHUNK_HEADER_BYTES,
               BUF_BYTES - MPT_CHUNK_HEADER_BYTES, NULL, 0);
  /* Every ALLOC a SAMPLE record names must precede it in the file. */
  caml_memprof_tracer_flush();
  caml_memprof_tracer_iter_tracked(add_sample, w);
  sample_filter_build(w);
  for (int i = 0; i < ndoms; i++) {
    struct caml_ephe_info *ei = doms[i]->ephe_info;
    value lists[2] = { ei->todo, ei->live };
    for (int l = 0; l < 2; l++)
      for (value e = lists[l]; e != (value)NULL; e = Ephe_link(e))
        map_put(&w->ephemerons, e, 1);
  }
  uint64_t anchor = 0;
#ifdef NATIVE_CODE
  anchor = (uint64_t)(uintnat)caml_globals;
#endif
  mpt_enc_snap_begin(&w->enc, &w->snap, caml_trace_writer_now(),
                     ++snapshot_seq, anchor, (uint32_t)ndoms);
  if (caml_heap_snapshot_params.sweep) {
    w->sweep = 1;
    w->ndoms = ndoms;
    memcpy(w->doms, doms, (size_t)ndoms * sizeof *doms);
  }
#ifdef NATIVE_CODE
  scan_module_globals(w);
#endif
  w->kind = MPT_ROOT_C_GLOBAL;
  w->label = label_id(w, L_C_GLOBAL, "C global roots");
  w->detail = 0;
  caml_scan_global_roots(root_c_global, w);
  for (int i = 0; i < ndoms; i++) scan_domain_roots(w, doms[i]);
  for (int i = 0; i < ndoms; i++)
    scan_memprof_roots(w, doms[i], caml_major_cycles_completed);
  return w;
}

/* The sweep's start: its tables, then IDS and the roots kept by the
   pause, then the blocks; or, where the tables could not be built, the
   roots written as the walk from the roots does, which then goes on
   (1: the sweep ran). */
static int walk_sweep(walk *w, int (*orphaned)(void))
{
  int roots_lost = w->incomplete;       /* the pause ran out of memory */
  int ok = !roots_lost && sweep_prepare(w);
  w->sweep = ok;
  w->incomplete = roots_lost;
  if (ok) {
    room(w, 16);
    mpt_enc_snap_ids(&w->enc, &w->snap, w->id_limit);
  }
  for (size_t i = 0; i < w->nsroots; i++) {
    const sweep_root *r = &w->sroots[i];
    uint64_t id = ok ? sweep_id(w, r->v) : visit(w, r->v);
    if (id) write_root(w, r->kind, r->label, r->detail, id);
  }
  if (ok) walk_blocks_sweep(w, orphaned);
  return ok;
}

/* The walk's second part, which reads the heap only (a forked child's
   copy, or the heap itself in the pause): the sweep (walk_sweep), or
   breadth first from the roots, where blocks are
   written in id order, each naming its targets (and thereby queueing the
   new ones).  The walk is bound by cache misses: two stages of
   prefetching, the block PREFETCH_BLOCK ahead (header and first fields),
   then the targets of the block PREFETCH_TARGETS ahead (whose fields are
   in cache by then).  [orphaned] (a child's) says whether to give up. */
static void walk_blocks(walk *w, int (*orphaned)(void))
{
  if (w->sweep && walk_sweep(w, orphaned)) return;
  if (w->n == 0) return;
  entry *e = w->chunks[0] + 1;          /* entry [id] */
  for (uint64_t id = 1; id <= w->n; id++, e++) {
    size_t i = (size_t)(id & (ENTRY_CHUNK - 1));
    if (i == 0) {                               /* a chunk's first block */
      recycle_chunk(w, (size_t)(id >> ENTRY_CHUNK_BITS) - 1);
      if (orphaned && orphaned()) return;
      e = w->chunks[id >> ENTRY_CHUNK_BITS];
    }
    /* (Entries past the chunk's end are its overflow, see queue_slow.) */
    uint64_t ahead = w->n - id;
    if (__builtin_expect(ahead >= PREFETCH_BLOCK, 1)) {
      __builtin_prefetch((void *)Hp_val(e[PREFETCH_BLOCK].v));
      prefetch_targets(w->side_top, e[PREFETCH_TARGETS].v);
    } else if (ahead >= PREFETCH_TARGETS) {
      prefetch_targets(w->side_top, e[PREFETCH_TARGETS].v);
    }
    value v = e->v;
    header_t hd = Hd_val(v);
    tag_t tag = Tag_hd(hd);
    mlsize_t wosize = Wosize_hd(hd);
    write_sample(w, v);
    if (tag < MPT_SNAP_SMALL_TAG && wosize < MPT_SNAP_SMALL_WOSIZE)
      write_small_block(w, v, tag, wosize);
    else
      write_block(w, id, v, tag, wosize);
  }
}

static void walk_end(walk *w, uint32_t mode, uint64_t walk_ns,
                     uint64_t extra_bytes, uint64_t pause_ns)
{
  room(w, 128);
  mpt_enc_snap_walk(&w->enc, mode, walk_ns, extra_bytes);
  mpt_enc_snap_end(&w->enc, &w->snap, caml_trace_writer_now(), pause_ns,
                   w->nedges, w->incomplete ? MPT_SNAP_INCOMPLETE : 0);
  flush(w);
}

/* ------------------------------------------------------------------ */
/* The forked walk                                                     */

/* The snapshot's child process: created by a raw clone(2) with fork's
   semantics (a copy-on-write image of the whole process, only the calling
   thread in it) and exit signal 0, so that it sends no SIGCHLD, and only
   waitpid with __WCLONE (or __WALL) sees it: the program's waitpid(-1),
   Unix.wait and SIGCHLD handlers never do.  fork(3) is not used: it would
   run the program's and the runtime's at-fork handlers.
   The child runs no OCaml code and takes no lock: it blocks every signal
   (the program's handlers are not its), walks its copy of the heap
   (reading it only), writes its chunks to the companion file (memprof_trace_writer.c) with
   write(2), and leaves by _exit.  The tables it grows are mapped pages
   (pages_alloc), LZ4's state is on its stack, and it uses no stdio.
   The parent, once the roots are written, frees its copy of the tables
   and resumes at once; its pause goes to the child through a shared page
   (the END record's pause_ns), which the child waits for before its END.
   The child is reaped, and its file appended to the trace, by a reaper
   thread of the parent started with it (plain C, every signal blocked,
   as the flusher), blocked in waitpid(child, __WCLONE) until it ends;
   where that thread cannot be started, by the flusher's ticks.  The end
   of tracing, and Gc.Memprof_trace.snapshot () before it asks for
   another, wait for that (caml_heap_snapshot_reap).  One child at a
   time: a snapshot due while one runs waits for a later cycle end.
   A child whose parent died (reparented) gives up; a child that did not
   exit with 0 (killed) leaves no part of its snapshot in the trace. */
typedef struct {
  _Atomic uint64_t parent_pause_ns; /* 1 + the parent's pause, 0: not yet */
} fork_shared;
#define SHARED_BYTES 4096

static pid_t child_pid;              /* set before child_running */
static int child_file = -1;
static fork_shared *child_shared;
static atomic_int child_running;     /* child_* belong to the reaper */
static int reaper_thread;            /* a thread waits for the child */
/* Guards child_* and reaper_thread while a child runs; child_ended is
   signalled when child_running drops back to 0. */
static pthread_mutex_t child_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t child_ended = PTHREAD_COND_INITIALIZER;
static pid_t parent_pid;             /* the child's, to see it orphaned */

#ifdef __linux__
static int child_orphaned(void)
{
  return (pid_t)syscall(SYS_getppid) != parent_pid;
}

/* The child's private memory at its end (kB lines of smaps_rollup), the
   snapshot's extra memory: its tables, and the pages either process has
   written since the fork (each then has its own copy).  0 if unknown. */
static uint64_t child_private_bytes(void)
{
  char text[4096];
  int fd = open("/proc/self/smaps_rollup", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return 0;
  text[n] = 0;
  uint64_t kb = 0;
  for (char *p = text; (p = strstr(p, "Private_")) != NULL; ) {
    p = strchr(p, ':');
    if (!p) break;
    while (*++p == ' ') {}
    uint64_t v = 0;
    while (*p >= '0' && *p <= '9') v = v * 10 + (uint64_t)(*p++ - '0');
    kb += v;
  }
  return kb * 1024;
}

static _Noreturn void child_main(walk *w, uint64_t t_fork)
{
  sigset_t all;
  sigfillset(&all);
  syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, NULL, sizeof(uint64_t));
  walk_blocks(w, child_orphaned);
  uint64_t walk_ns = mono_ns() - t_fork;
  if (child_orphaned()) _exit(2);
  uint64_t pause;
  struct timespec tick = { 0, 20000 };
  while ((pause = atomic_load_acquire(&child_shared->parent_pause_ns)) == 0) {
    if (child_orphaned()) _exit(2);
    nanosleep(&tick, NULL);
  }
  walk_end(w, MPT_WALK_FORK, walk_ns, child_private_bytes(), pause - 1);
  _exit(w->failed ? 1 : 0);
}

/* The child, or -1 (errno set). */
static pid_t clone_child(void)
{
  return (pid_t)syscall(SYS_clone, 0UL, NULL, NULL, NULL, NULL);
}
#endif

/* With child_lock: the child [pid] ended with status [st] (-1: reaped
   elsewhere, or unknown): its snapshot goes into the trace if complete. */
static void child_done_locked(pid_t pid, int st)
{
  if (!atomic_load(&child_running) || pid != child_pid) return;
  struct stat sb;
  uint64_t len = 0;
  if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0
      && fstat(child_file, &sb) == 0)
    len = (uint64_t)sb.st_size;
  else
    caml_gc_log("heap snapshot: its child ended with status 0x%x; "
                "no part of it is kept", st);
  caml_trace_writer_companion_merge(child_file, len);
  munmap(child_shared, SHARED_BYTES);
  child_file = -1; child_shared = NULL; child_pid = 0;
  atomic_store_release(&child_running, 0);
  pthread_cond_broadcast(&child_ended);
}

/* Wait for the child [pid] ([block]: until it ends): 1 when it ended,
   with its status in [*st] (-1 if unknown). */
static int child_ended_now(pid_t pid, int block, int *st)
{
  pid_t r;
  *st = 0;
  do r = waitpid(pid, st, __WCLONE | (block ? 0 : WNOHANG));
  while (r < 0 && errno == EINTR);
  if (r < 0) *st = -1;
  return r == pid || r < 0;
}

static void *reaper_main(void *arg)
{
  pid_t pid = (pid_t)(intptr_t)arg;
  int st;
  child_ended_now(pid, 1, &st);
  pthread_mutex_lock(&child_lock);
  child_done_locked(pid, st);
  pthread_mutex_unlock(&child_lock);
  return NULL;
}

/* The reaper thread of child [pid]: 1 if started. */
static int start_reaper(pid_t pid)
{
  return caml_memprof_tracer_start_thread(reaper_main, (void *)(intptr_t)pid);
}

void caml_heap_snapshot_reap(int wait)
{
  if (!atomic_load_acquire(&child_running)) return;
  pthread_mutex_lock(&child_lock);
  int st;
  if (atomic_load(&child_running) && !reaper_thread
      && child_ended_now(child_pid, wait, &st))
    child_done_locked(child_pid, st);
  while (wait && atomic_load(&child_running))
    pthread_cond_wait(&child_ended, &child_lock);
  pthread_mutex_unlock(&child_lock);
}

void caml_heap_snapshot_forget_after_fork(void)
{
  /* Only this thread exists in the child of the program's fork, and the
     snapshot's child is not its child. */
  pthread_mutex_init(&child_lock, NULL);
  pthread_cond_init(&child_ended, NULL);
  if (atomic_load(&child_running)) {
    close(child_file);
    munmap(child_shared, SHARED_BYTES);
    child_file = -1; child_shared = NULL; child_pid = 0;
    atomic_store(&child_running, 0);
  }
}

/* Start a forked walk (roots in the pause, the rest in a child): 1 when
   the snapshot was taken (the child walks; or the clone failed and the
   walk was done in the pause), 0 when it could not start (the caller
   walks in the pause). */
static int take_forked(caml_domain_state *self, uint64_t t0)
{
#ifdef __linux__
  int file = caml_trace_writer_companion_open();
  if (file < 0) return 0;
  fork_shared *shared = mmap(NULL, SHARED_BYTES, PROT_READ | PROT_WRITE,
                             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  walk *w = shared == MAP_FAILED ? NULL : walk_roots(self, file);
  if (!w) {
    if (shared != MAP_FAILED) munmap(shared, SHARED_BYTES);
    caml_trace_writer_companion_merge(file, 0);
    return 0;
  }
  flush(w);                     /* the roots, before the child's blocks */
  child_shared = shared;
  parent_pid = getpid();
  uint64_t t_fork = mono_ns();
  pid_t pid = clone_child();
  if (pid == 0) child_main(w, t_fork);
  if (pid < 0) {
    /* Refused (memory, process limits): the walk goes on in the pause,
       into the same file, appended at once. */
    caml_gc_log("heap snapshot: clone failed (%s); walking in the pause",
                strerror(errno));
    walk_blocks(w, NULL);
    uint64_t walk_ns = mono_ns() - t_fork;
    walk_end(w, MPT_WALK_FORK_REFUSED, walk_ns, 0, mono_ns() - t0);
    munmap(shared, SHARED_BYTES);
    child_shared = NULL;
    struct stat sb;
    caml_trace_writer_companion_merge(
      file, !w->failed && fstat(file, &sb) == 0 ? (uint64_t)sb.st_size : 0);
    walk_free(w);
    return 1;
  }
  uint64_t t_forked = mono_ns(), named = w->n;
  walk_free(w);
  /* Free: no child runs (the caller checked), so no reaper holds it. */
  pthread_mutex_lock(&child_lock);
  child_pid = pid;
  child_file = file;
  reaper_thread = start_reaper(pid);
  atomic_store_release(&child_running, 1);
  pthread_mutex_unlock(&child_lock);
  uint64_t pause = mono_ns() - t0;
  atomic_store_release(&shared->parent_pause_ns, pause + 1);
  caml_gc_log("heap snapshot %lu: %lu blocks named by roots, child %d walks; "
              "pause %lu us (roots %lu, clone %lu)", (unsigned long)snapshot_seq,
              (unsigned long)named, (int)pid, (unsigned long)(pause / 1000),
              (unsigned long)((t_fork - t0) / 1000),
              (unsigned long)((t_forked - t_fork) / 1000));
  return 1;
#else
  (void)self; (void)t0;
  return 0;
#endif
}

static void take_snapshot(caml_domain_state *self)
{
  uint64_t t0 = mono_ns();
  if (caml_heap_snapshot_params.fork && take_forked(self, t0)) return;
  walk *w = walk_roots(self, -1);
  if (!w) return;
  uint64_t t_roots = mono_ns();
  walk_blocks(w, NULL);
  uint64_t pause = mono_ns() - t0;
  walk_end(w, MPT_WALK_PAUSE, mono_ns() - t_roots, 0, pause);
  caml_gc_log("heap snapshot %lu: %lu blocks, %lu edges, %lu us",
              (unsigned long)snapshot_seq, (unsigned long)w->n,
              (unsigned long)w->nedges, (unsigned long)(pause / 1000));
  walk_free(w);
}

/* ------------------------------------------------------------------ */
/* Triggers                                                            */

static uint64_t now_us(void) { return mono_ns() / 1000; }

void caml_heap_snapshot_at_cycle_end(caml_domain_state *s)
{
  atomic_store_release(&memprof_settled[s->id], caml_major_cycles_completed + 1);
  if (!atomic_load_explicit(&requested, memory_order_relaxed) && !signalled
      && !periodic && !atomic_load_explicit(&deferred, memory_order_relaxed))
    return;
  int due = 0;
  if (atomic_exchange(&requested, 0)) due = 1;
  if (atomic_exchange(&deferred, 0)) due = 1;
  if (s->id == 0) {
    if (signalled) { signalled = 0; due = 1; }
    if (periodic) {
      cycles_seen++;
      uintnat every_c = caml_heap_snapshot_params.every_cycles;
      uintnat every_s = caml_heap_snapshot_params.every_s;
      if (every_c && cycles_seen % every_c == 0) due = 1;
      if (every_s && now_us() - last_snapshot_us >= (uint64_t)every_s * 1000000) due = 1;
    }
  }
  if (!due || !caml_memprof_tracer_tracing()) return;
  /* One snapshot at a time: while another domain takes one in this
     section, or a forked child still walks, this one waits for a later
     cycle end. */
  if (atomic_load_acquire(&child_running) || atomic_exchange(&taking, 1)) {
    atomic_store(&deferred, 1);
    return;
  }
  take_snapshot(s);
  atomic_store(&taking, 0);
  last_snapshot_us = now_us();
}

/* Empty the minor heaps, then finish a major cycle: its end takes the
   snapshot (whichever domain reaches the hook first). */
static void snapshot_now(void)
{
  if (!caml_memprof_tracer_tracing()) return;
  if (atomic_load_acquire(&child_running)) {
    /* The previous one's child: other domains may stop the world
       meanwhile. */
    caml_enter_blocking_section_no_pending();
    caml_heap_snapshot_reap(1);
    caml_leave_blocking_section();
  }
  atomic_store(&requested, 1);
  caml_empty_minor_heaps_once();
  caml_finish_major_cycle(0);
}

void caml_heap_snapshot_at_exit(void)
{
  if (!caml_heap_snapshot_params.at_exit || Caml_state_opt == NULL) return;
  snapshot_now();
}

static void on_snapshot_signal(int sig) { (void)sig; signalled = 1; }

void caml_heap_snapshot_init(void)
{
  periodic = caml_heap_snapshot_params.every_s != 0
             || caml_heap_snapshot_params.every_cycles != 0;
  last_snapshot_us = now_us();
  if (caml_heap_snapshot_params.signal) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_snapshot_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(caml_heap_snapshot_params.signal, &sa, NULL);
  }
}

CAMLprim value caml_memprof_trace_snapshot(value unit)
{
  (void)unit;
  snapshot_now();
  return Val_unit;
}
