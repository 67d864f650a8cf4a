(* Heap snapshots at every major cycle end for SECONDS seconds, on a heap
   large enough (2 M list cells holding records) that each forked walk
   takes a while: testsuite/snapshots.sh kills the walking child, or the
   program, at random moments and reads the trace.  Prints "done N" with
   the number of cycles run. *)
let () =
  let seconds = float_of_string Sys.argv.(1) in
  let kept = List.init 2_000_000 (fun i -> (i, i + 1)) in
  let t0 = Unix.gettimeofday () and cycles = ref 0 in
  while Unix.gettimeofday () -. t0 < seconds do
    ignore (Sys.opaque_identity (Array.make 10_000 0));
    Gc.major ();
    incr cycles
  done;
  Printf.printf "done %d\n" (List.length kept / 2_000_000 * !cycles)
