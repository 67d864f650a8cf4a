(* A program with children of its own, run by testsuite/snapshots.sh
   traced with a heap snapshot at every major cycle end (walked by a
   forked child of the runtime) and untraced: its output must be the same.
   MODE reap: forks children and reaps each with waitpid on its pid;
   sigchld: counts SIGCHLD deliveries, first without a child of its own
   (there must be none), then with; waitall: calls wait () (waitpid -1),
   first without a child of its own (ECHILD every time), then for its
   children (exactly those). *)
let churn () =
  let keep = ref [] in
  for i = 1 to 50 do keep := Array.make 1000 i :: !keep done;
  Gc.major ();                          (* a cycle end: a snapshot *)
  ignore (Sys.opaque_identity !keep);
  (* time for the snapshot's child to end before a later cycle end (one
     child at a time), so that several run during the program's own
     forks and waits even on a loaded machine *)
  Unix.sleepf 0.002

let child code = match Unix.fork () with 0 -> Unix._exit code | pid -> pid

let () =
  match Sys.argv.(1) with
  | "reap" ->
    let ok = ref 0 in
    for i = 1 to 20 do
      churn ();
      let pid = child (i mod 7) in
      churn ();
      match Unix.waitpid [] pid with
      | p, Unix.WEXITED c when p = pid && c = i mod 7 -> incr ok
      | _ -> ()
    done;
    Printf.printf "reaped %d of 20 with their status\n" !ok
  | "sigchld" ->
    let n = ref 0 in
    Sys.set_signal Sys.sigchld (Sys.Signal_handle (fun _ -> incr n));
    for _ = 1 to 60 do churn () done;
    let without = !n in
    for _ = 1 to 5 do
      let pid = child 0 in
      ignore (Unix.waitpid [] pid);
      churn ()
    done;
    Printf.printf "SIGCHLD without children: %d; with children: %b\n" without (!n >= 1)
  | "waitall" ->
    let stolen = ref 0 in
    for _ = 1 to 60 do
      churn ();
      match Unix.wait () with
      | _ -> incr stolen
      | exception Unix.Unix_error (Unix.ECHILD, _, _) -> ()
    done;
    let pids = List.sort compare (List.init 5 (fun i -> churn (); child i)) in
    let waited = List.sort compare (List.init 5 (fun _ -> fst (Unix.wait ()))) in
    let echild = match Unix.wait () with
      | _ -> false | exception Unix.Unix_error (Unix.ECHILD, _, _) -> true in
    Printf.printf "wait () without children returned %d; its 5 children: %b; then ECHILD: %b\n"
      !stolen (pids = waited) echild
  | m -> failwith ("unknown mode " ^ m)
