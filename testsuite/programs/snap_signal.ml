(* Allocates for a while, keeping some: a snapshot comes from
   memprof_snapshot_signal or the periodic keys. *)
let kept = ref []
let () =
  let t0 = Unix.gettimeofday () in
  let d = float_of_string Sys.argv.(1) in
  while Unix.gettimeofday () -. t0 < d do
    kept := Array.make 100 0 :: !kept;
    if List.length !kept > 10_000 then kept := [];
    ignore (Sys.opaque_identity (Array.make 1000 0))
  done;
  print_endline "done"
