(* One live figure: at a heap snapshot, sampled blocks that died before it
   count as live in the timeline until their sweep, which comes after the
   snapshot (Gc.Memprof_trace.snapshot finishes a major cycle: what died
   before that cycle began is swept during the next).  [kept] (40 MB of
   arrays) stays reachable; [dropped] (40 MB) becomes garbage just before
   the snapshot.  Then the program idles without allocating, so the
   timeline's estimate just after the snapshot is its estimate at the
   snapshot.  Prints the bytes kept and dropped (headers included). *)
let kept = ref []
let dropped = ref []

let () =
  for i = 1 to 5000 do kept := Array.make 1000 i :: !kept done;
  for i = 1 to 5000 do dropped := Array.make 1000 i :: !dropped done;
  Gc.full_major ();
  dropped := [];
  Gc.Memprof_trace.snapshot ();
  for i = 1 to 200_000_000 do ignore (Sys.opaque_identity i) done;
  Printf.printf "kept %d dropped %d\n" (List.length !kept * 8008) (5000 * 8008)
