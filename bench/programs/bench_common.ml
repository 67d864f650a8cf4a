(* Shared driver for the benchmark programs.

   Every program is one executable per compiler; the configurations differ
   only by environment, so that "traced" and "untraced" are the same binary:
   - BENCH_SCALE (float, default 1): multiplies the work, so the harness can
     run a program for ~1 s natively and for a fraction of that under
     valgrind.
   - BENCH_GCMEMPROF_RATE: turns on the Gc.Memprof tracer (configuration 4),
     see Gcmemprof_tracer.
   - BENCH_STATS: print on stderr the words of out-of-heap memory the
     program attached to custom blocks (bigarray data), which Gc.Memprof and
     the native tracer sample in addition to heap words; the heap words
     themselves come from the runtime (OCAMLRUNPARAM=v=0x400).
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

let run name (f : unit -> int) =
  let traced = Gcmemprof_tracer.start_from_env () in
  let result = f () in
  if traced then Gcmemprof_tracer.stop ();
  if Sys.getenv_opt "BENCH_STATS" <> None then
    Printf.eprintf "bench-stats: custom_words=%d\n%!" (Atomic.get custom_words);
  Printf.printf "%s: %d\n%!" name result
