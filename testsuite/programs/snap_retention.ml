(* Known retention of several kinds, one snapshot:
   - a closure captured by a long-lived record (module global Registry);
   - a large array held only by a stack frame of hold_on_stack;
   - a large array held only by a finalisation function;
   - an ephemeron whose key died (its data must be gone) and one whose
     key lives (its key edge is weak);
   - a bigarray (out-of-heap size). *)
type registry = { mutable handlers : (unit -> int) list }

let registry = { handlers = [] }

let make_captured () =
  let captured = Array.make 50_000 1 in
  fun () -> Array.length captured

let live_key = ref 1
let eph_live = Ephemeron.K1.make live_key (Array.make 1000 0)
let eph_dead = Ephemeron.K1.make (ref 2) (Array.make 300_000 0)

let ba = Bigarray.Array1.create Bigarray.float64 Bigarray.c_layout 1_000_000

let hold_on_stack () =
  let big = Array.make 100_000 7 in
  Gc.Memprof_trace.snapshot ();
  Array.length (Sys.opaque_identity big)

let () =
  registry.handlers <- make_captured () :: registry.handlers;
  Gc.finalise
    (let held = Array.make 50_000 3 in fun r -> ignore (Array.length held + !r))
    live_key;
  Bigarray.Array1.fill ba 0.;
  let n = hold_on_stack () in
  Printf.printf "%d %d %b\n" n (List.length registry.handlers)
    (Option.is_some (Ephemeron.K1.query eph_live live_key));
  ignore (Sys.opaque_identity eph_dead);
  ignore (Sys.opaque_identity live_key)
