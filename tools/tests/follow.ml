(* follow.ml: four domains (the main one and three workers) allocate for
   about SECONDS seconds, for the `top --follow` test
   (tools/tests/run_tests.py): the trace is read while it is written. *)

let[@inline never] work keep n =
  let b = Array.make 6 n in
  if n mod 50 = 0 then keep := b :: !keep

let worker stop () =
  let keep = ref [] and n = ref 0 in
  while not (Atomic.get stop) do incr n; work keep !n done;
  List.length !keep

let () =
  let secs = float_of_string Sys.argv.(1) in
  let stop = Atomic.make false in
  let ds = List.init 3 (fun _ -> Domain.spawn (worker stop)) in
  let t0 = Unix.gettimeofday () in
  let keep = ref [] and n = ref 0 in
  while Unix.gettimeofday () -. t0 < secs do
    incr n;
    work keep !n;
    if !n mod 1000 = 0 then Unix.sleepf 0.001
  done;
  Atomic.set stop true;
  let k = List.fold_left (fun a d -> a + Domain.join d) 0 ds in
  Printf.printf "%d\n" (k + List.length !keep)
