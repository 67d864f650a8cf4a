(* A synthetic live heap for the snapshot benchmark: argv.(1) million
   chains of records, each chain a list cell (3 words) holding a record of
   four fields (5 words), the records' last field pointing to the previous
   record (a long-range edge).  16 M cells = 32 M blocks, 1.02 GB live.
   Then the time of a whole major cycle of that heap (Gc.major, the
   faster of two: the walk's reference), and one snapshot (Gc.Memprof_trace.snapshot). *)
type r = { a : int; b : int; c : int; prev : r option }

let () =
  let m = int_of_string Sys.argv.(1) in
  let n = m * 1_000_000 in
  let keep = Array.make 1024 [] in
  let prev = ref None in
  for i = 0 to n - 1 do
    let x = { a = i; b = i + 1; c = i + 2; prev = (if i land 1023 = 0 then None else !prev) } in
    prev := Some x;
    let k = i land 1023 in
    keep.(k) <- x :: keep.(k)
  done;
  let major () =
    let t = Unix.gettimeofday () in Gc.major (); Unix.gettimeofday () -. t in
  (* The first call only finishes the cycle under way; the next two are
     whole cycles. *)
  ignore (major ());
  Printf.printf "gc_major_s %.4f\n%!" (min (major ()) (major ()));
  let t0 = Unix.gettimeofday () in
  Gc.Memprof_trace.snapshot ();
  Printf.printf "snapshot call %.3f s (full major cycle + walk)\n%!" (Unix.gettimeofday () -. t0);
  ignore (Sys.opaque_identity keep)
