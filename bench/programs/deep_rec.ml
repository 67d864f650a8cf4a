(* Deep-recursion allocation: every allocation happens at the bottom of a
   recursion BENCH_DEPTH frames deep (default 400), so each sample carries a
   callstack of that many frames.  Run with a small depth it gives the
   shallow reference for the same code, and the difference between the two
   gives the per-frame cost of capturing and recording stacks. *)

(* The two allocating leaves alternate, so consecutive samples share the
   400 outer frames but differ in the innermost one, as in real programs. *)
let[@inline never] leaf_a i = List.length [ i; i + 1 ]
let[@inline never] leaf_b i = Array.length [| i; i + 1; i + 2 |]

(* Not tail-recursive on purpose, and kept out of line so that every level
   is a real frame. *)
let[@inline never] rec descend depth n =
  if depth = 0 then begin
    let acc = ref 0 in
    for i = 1 to n do
      acc := !acc + (i * i) land 7;
      (* One small allocation every 32 iterations: enough samples to
         measure, few enough that deep stacks stay affordable at 1e-3. *)
      if i land 31 = 0 then
        acc := !acc + (if i land 32 = 0 then leaf_a i else leaf_b i)
    done;
    !acc
  end else 1 + descend (depth - 1) n

let () =
  let depth = Bench_common.int_env "BENCH_DEPTH" 400 in
  Bench_common.run "deep_rec" (fun () ->
      let sum = ref 0 in
      for _ = 1 to Bench_common.iters 8_000 do
        sum := !sum + descend depth 100_000
      done;
      !sum)
