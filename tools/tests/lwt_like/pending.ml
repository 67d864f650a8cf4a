(* pending.ml: promises left pending in known numbers on the miniature Lwt
   of this directory, for the tests of `ocaml-memprof lwt` and the report's
   Lwt view (tools/tests/run_tests.py, test_lwt_threads).  Three rounds;
   round r makes N x r waiting promises (Lwt.wait, the line marked
   "pending: wait"), each bound to a callback whose result promise (the
   line marked "pending: bind") stays pending with it; round 3 first wakes
   round 1's, whose callbacks then return (Lwt.return) and resolve their
   binds.  After each round: the true number of
   pending promises per creation site and the callbacks they hold
   ("snapshot wait W callbacks C bind B"), then a heap snapshot.
   Argument: N. *)

let waits = ref [] and binds = ref []

let[@inline never] round k n =
  for _ = 1 to n * k do
    let w = Lwt.wait () in (* pending: wait *)
    let b = Lwt.bind w (fun () -> Lwt.return ()) in (* pending: bind *)
    waits := w :: !waits;
    binds := b :: !binds
  done

let () =
  let n = int_of_string Sys.argv.(1) in
  for k = 1 to 3 do
    if k = 3 then List.iteri (fun i w -> if i >= 2 * n then Lwt.wakeup w ()) !waits;
    round k n;
    let pending l = List.length (List.filter Lwt.is_pending l) in
    Printf.printf "snapshot wait %d callbacks %d bind %d\n" (pending !waits) (pending !waits) (pending !binds);
    Gc.Memprof_trace.snapshot ()
  done
