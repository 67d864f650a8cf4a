(* domains.ml: three domains allocate at once, for the multi-domain
   runtime-trace test (tools/tests/run_tests.py).  Per step, each of the two
   workers allocates a 9-word array (8 fields + header) and keeps every 10th
   in a domain-local list (a 3-word cons cell); the main domain allocates a
   pair of refs (3 + 2 + 2 words).  So worker_step allocates
   2 * STEPS * 9 + 2 * STEPS / 10 * 3 words and main_step 7 * STEPS. *)

let[@inline never] worker_step keep n =
  let b = Array.make 8 n in
  if n mod 10 = 0 then keep := b :: !keep

let worker steps () =
  let keep = ref [] in
  for n = 1 to steps do worker_step keep n done;
  List.length !keep

let[@inline never] main_step n = ignore (Sys.opaque_identity (ref n, ref (n + 1)))

let () =
  let steps = int_of_string Sys.argv.(1) in
  let ds = List.init 2 (fun _ -> Domain.spawn (worker steps)) in
  for n = 1 to steps do main_step n done;
  let kept = List.fold_left (fun acc d -> acc + Domain.join d) 0 ds in
  Printf.printf "%d\n" kept
