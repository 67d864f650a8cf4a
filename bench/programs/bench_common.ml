(* Shared driver for the benchmark programs.

   Every program is one executable per compiler; the configurations differ
   only by environment, so that "traced" and "untraced" are the same binary:
   - BENCH_SCALE (float, default 1): multiplies the work, so the harness can
     run a program for ~1 s natively and for a fraction of that under
     valgrind.
   - BENCH_GCMEMPROF_RATE: turns on the Gc.Memprof tracer (configuration 4),
     see Gcmemprof_tracer.
   - BENCH_STATS: print on stderr the words the program allocated in the
     heap, counted by the program itself over all its domains (see
     [spawn]), and the words of out-of-heap memory it attached to custom
     blocks (bigarray data), which Gc.Memprof and the native tracer sample
     in addition to heap words.  The runtime's own count at exit
     (OCAMLRUNPARAM=v=0x400) is only a cross-check: OCaml 5.4.1 loses the
     allocations of domains joined before exit (caml_domain_terminate no
     longer orphans their alloc stats; ocaml/ocaml PR #15092).
   The program's result is folded into a checksum printed on stdout, so that
   no work can be optimised away and runs can be compared. *)

let scale =
  match Sys.getenv_opt "BENCH_SCALE" with
  | Some s when s <> "" -> float_of_string s
  | _ -> 1.0

let iters n = max 1 (int_of_float (Float.round (float_of_int n *. scale)))

let int_env name default =
  match Sys.getenv_opt name with
  | Some s when s <> "" -> int_of_string s
  | _ -> default

let custom_words = Atomic.make 0

(* Record [bytes] of out-of-heap memory attached to a custom block, rounded
   up to words as the runtime does for sampling (caml_alloc_custom_mem). *)
let add_custom_bytes bytes =
  let w = (bytes + Sys.word_size / 8 - 1) / (Sys.word_size / 8) in
  ignore (Atomic.fetch_and_add custom_words w)

let stats = Sys.getenv_opt "BENCH_STATS" <> None

(* Heap words of the domains whose work has ended (BENCH_STATS only). *)
let heap_words = Atomic.make 0

(* Words this domain allocated in the heap so far: minor words (including
   the current minor heap's), plus words allocated directly in the major
   heap, headers included.  In OCaml 5.x Gc.counters is per domain (the
   caller's Caml_state); major words also count the words this domain
   promoted, possibly out of other domains' minor heaps, hence the
   subtraction: summed over all domains, minor + major - promoted is the
   program's allocation, whichever domain promoted what.  The call allocates
   a few words itself (boxed floats), once per domain: negligible. *)
let domain_words () =
  let minor, promoted, major = Gc.counters () in
  int_of_float (minor +. major -. promoted)

(* Domain.spawn for the programs' domains: with BENCH_STATS the body adds
   the words its domain allocated to [heap_words] when it returns.  The
   count starts at the body, not at 0: OCaml 5.4.1 leaves a previous
   domain's counters in a reused domain slot. *)
let spawn (f : unit -> 'a) : 'a Domain.t =
  if not stats then Domain.spawn f
  else
    Domain.spawn (fun () ->
        let start = domain_words () in
        let r = f () in
        ignore (Atomic.fetch_and_add heap_words (domain_words () - start));
        r)

let run name (f : unit -> int) =
  let traced = Gcmemprof_tracer.start_from_env () in
  let result = f () in
  if traced then Gcmemprof_tracer.stop ();
  if stats then begin
    (* The main domain's share, from its start: every other domain was
       spawned with [spawn] and joined by [f]. *)
    ignore (Atomic.fetch_and_add heap_words (domain_words ()));
    Printf.eprintf "bench-stats: heap_words=%d custom_words=%d\n%!"
      (Atomic.get heap_words) (Atomic.get custom_words)
  end;
  Printf.printf "%s: %d\n%!" name result
