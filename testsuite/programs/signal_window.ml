(* signal_window ROUNDS SPINS: a signal recorded while an allocation takes
   the ordinary path, after that path has run the pending actions, must
   still interrupt the program at its next poll.  A finaliser, which runs
   among those actions, has another process send the signal (Unix.kill
   would run the handler at once); the allocation that ran it then goes on
   to the tracer's sample (at memprof_rate=1 every allocation crosses the
   sample point).  Once the program sees that the finaliser has run, it
   waits for the handler in a loop that only polls, at most SPINS turns: an
   interrupt dropped when the sample resets young_limit leaves the handler
   unrun however long the loop spins.  Prints "lost L of ROUNDS". *)
let handled = ref false
let finalised = ref false

let () =
  Sys.set_signal Sys.sigusr1 (Sys.Signal_handle (fun _ -> handled := true));
  let rounds = int_of_string Sys.argv.(1)
  and max_spins = int_of_string Sys.argv.(2) and lost = ref 0 in
  let kill = Printf.sprintf "kill -USR1 %d" (Unix.getpid ()) in
  for _ = 1 to rounds do
    handled := false; finalised := false;
    Gc.finalise (fun _ -> finalised := true; ignore (Sys.command kill))
      (Sys.opaque_identity (ref 0));
    (* one allocation a turn, so that none follows the finaliser's *)
    let r = ref [] and i = ref 0 in
    while not !finalised do
      r := [!i] :: (if !i land 1023 = 0 then [] else !r); incr i
    done;
    let spins = ref 0 in
    while not !handled && !spins < max_spins do incr spins done;
    if not !handled then incr lost
  done;
  Printf.printf "lost %d of %d\n" !lost rounds
