(* Floats held in registers across allocations (the sample trap saves only
   the general registers: testsuite/run.sh runs this traced at a rate where
   most allocations are sampled and compares the result with an untraced
   run).  Each iteration keeps eight unboxed floats live across a list
   allocation; a clobbered vector register changes the sum. *)

(* In a function: module initialisers are compiled for size, with their
   allocations out of line (caml_allocN), across which floats are spilled. *)
let run n =
  let acc = ref 0. and kept = ref [] in
  for i = 1 to n do
    let x = float_of_int i in
    let a = x *. 1.5 and b = x +. 0.25 and c = x *. x and d = x -. 3.
    and e = x /. 7. and f = x *. 0.125 and g = x +. 11. and h = x *. 3. in
    let cell = Sys.opaque_identity [ i; i + 1; i + 2 ] in
    acc := !acc +. a +. b +. c +. d +. e +. f +. g +. h;
    if i land 1023 = 0 then kept := cell :: !kept
  done;
  Printf.printf "%.17g %d\n" !acc (List.length !kept)

let () = run (try int_of_string Sys.argv.(1) with _ -> 200_000)
