(* Snapshots while other domains allocate: each worker keeps a growing
   list on its stack and churns; the main domain takes snapshots. *)
let stop = Atomic.make false

let worker k () =
  let kept = ref [] in
  let n = ref 0 in
  while not (Atomic.get stop) do
    kept := Array.make 20 k :: !kept;
    if List.length !kept > 5_000 then kept := [];
    ignore (Sys.opaque_identity (Array.make 50 !n));
    incr n
  done;
  List.length !kept

let () =
  let ds = List.init 2 (fun k -> Domain.spawn (worker k)) in
  for _ = 1 to 3 do
    ignore (Sys.opaque_identity (Array.make 100_000 0));
    Gc.Memprof_trace.snapshot ()
  done;
  Atomic.set stop true;
  List.iter (fun d -> ignore (Domain.join d)) ds;
  print_endline "done"
