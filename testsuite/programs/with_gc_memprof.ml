(* The program's own Gc.Memprof profile, while native tracing may be on. *)
let[@inline never] profiled_work n =
  for i = 1 to n do ignore (Sys.opaque_identity (ref i)) done

let () =
  let samples = ref 0 in
  let tracker = { Gc.Memprof.null_tracker with
                  alloc_minor = (fun info -> samples := !samples + info.Gc.Memprof.n_samples; None) } in
  let p = Gc.Memprof.start ~sampling_rate:1e-3 tracker in
  profiled_work 2_000_000;
  Gc.Memprof.stop ();
  Gc.Memprof.discard p;
  Printf.printf "gc_memprof_samples %d\n" !samples
