(* deep_cut.ml: recursions of pseudo-random depths up to MAX_DEPTH, on
   one thread and deterministic, so that traces taken with the same seed
   hold the same samples whatever the cap (issue 35: a trace at a cap
   below the depth must show the whole trace's stacks, cut by the reader
   at the cap).  Two shapes: List.map's (allocation on the way up) and a
   recursion that allocates on the way down and up.
   Usage: deep_cut [MAX_DEPTH [ROUNDS]] *)

let state = ref 4242
let next () =
  state := (!state * 1103515245 + 12345) land 0x3fffffff;
  !state lsr 8
let max_depth = try int_of_string Sys.argv.(1) with _ -> 3000
let rounds = try int_of_string Sys.argv.(2) with _ -> 100

let[@inline never] rec map f = function
  | [] -> []
  | x :: l -> let y = f x in y :: map f l

let[@inline never] rec updown n acc =
  if n = 0 then List.length acc
  else begin
    let r = updown (n - 1) (n :: acc) in
    let p = Sys.opaque_identity (r, n) in
    fst p + snd p land 1
  end

let () =
  let sum = ref 0 in
  for i = 1 to rounds do
    let l = List.init (1 + next () mod max_depth) (fun k -> k) in
    let m = map (fun x -> x + i) l in
    sum := !sum + List.length m + updown (1 + next () mod max_depth) []
  done;
  Printf.printf "%d\n" !sum
