(* Deep recursion whose depth changes by thousands of frames between
   samples (issue 35): ordinary non-tail-recursive OCaml over long lists.

   Two recursions, BENCH_LEN deep (default 10,000), run in turn:
   - [map]: List.map's shape, not tail-recursive; it allocates a cons on
     the way up only, after its recursive call returned, so consecutive
     samples sit at depths that only decrease until the next map starts
     again from the top;
   - [updown]: allocates a cons on the way down (passed to the recursive
     call) and a pair on the way up, so samples go down then up.
   At 1e-3 a sample falls every 330 or so conses: consecutive samples are
   hundreds to thousands of frames apart in depth, with a map's whole
   10,000 frames traversed between two maps.  BENCH_LEN=10 gives the
   shallow reference of the same binary (the pair gives the per-frame
   cost, as deep_rec/shallow_rec). *)

(* Not tail-recursive on purpose, and kept out of line so that every level
   is a real frame. *)
let[@inline never] rec map f = function
  | [] -> []
  | x :: l ->
    let y = f x in
    y :: map f l

let[@inline never] rec updown n acc =
  if n = 0 then List.length acc
  else begin
    let r = updown (n - 1) (n :: acc) in
    let p = Sys.opaque_identity (r, n) in
    fst p + snd p land 1
  end

let () =
  let len = Bench_common.int_env "BENCH_LEN" 10_000 in
  let l = List.init len (fun i -> i) in
  (* The same number of conses whatever the length. *)
  let rounds = max 1 (Bench_common.iters 16_000_000 / len) in
  Bench_common.run "deep_list" (fun () ->
      let sum = ref 0 in
      for i = 1 to rounds do
        let m = map (fun x -> x + i) l in
        sum := !sum + List.hd m + List.length m;
        sum := !sum + updown len [] land 0xffff
      done;
      !sum)
