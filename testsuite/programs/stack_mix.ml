(* stack_mix.ml: a fixed sequence of allocations under stacks that change
   at every depth (a pseudo-random walk of recursion depths, exception
   handlers, an effect handler), on one domain and one thread: two runs
   with the same seed take the same samples, so that their traces can be
   compared stack for stack.  Usage: stack_mix [ROUNDS] *)

type _ Effect.t += Tick : int Effect.t

let sink = ref (Obj.repr 0)
let state = ref 12345
let next () =
  state := (!state * 1103515245 + 12345) land 0x3fffffff;
  !state lsr 8

let rec down n k =
  if n = 0 then begin
    for i = 1 to k do sink := Obj.repr (Array.make (1 + i land 7) i) done;
    0
  end
  else if n mod 5 = 0 then (try 1 + down (n - 1) k with Exit -> 0)
  else 1 + down (n - 1) k

let with_effects f =
  let open Effect.Deep in
  try_with f ()
    { effc = (fun (type a) (e : a Effect.t) ->
        match e with
        | Tick -> Some (fun (k : (a, _) continuation) ->
            sink := Obj.repr (ref 0);
            continue k 1)
        | _ -> None) }

let () =
  let rounds = try int_of_string Sys.argv.(1) with _ -> 2_000_000 in
  let total = ref 0 in
  for r = 1 to rounds do
    let d = next () mod 40 in
    if r mod 3 = 0 then
      total := !total + with_effects (fun () -> down d 4 + Effect.perform Tick)
    else total := !total + down d 4
  done;
  Printf.printf "%d\n" !total
