(* Many short-lived small blocks: lists, binary trees and closures that die
   young.  Almost everything is collected by the minor GC; the sampled blocks
   are mostly allocated and collected without promotion. *)

type tree = Leaf | Node of tree * int * tree

let rec make d = if d = 0 then Leaf else Node (make (d - 1), d, make (d - 1))

let rec check = function
  | Leaf -> 0
  | Node (l, v, r) -> check l + v + check r

let lists n =
  let l = List.init n (fun i -> i) in
  let l = List.map (fun x -> x * 3) l in
  let l = List.filter (fun x -> x land 1 = 0) l in
  List.fold_left ( + ) 0 (List.rev l)

(* Closures built and applied at once: each composition allocates. *)
let closures n =
  let acc = ref 0 in
  for i = 1 to n do
    let add k = fun x -> x + k in
    let f = List.fold_left (fun g k -> fun x -> g (add k x)) (fun x -> x)
        [i; 1; 2; 3] in
    acc := !acc + f i
  done;
  !acc

let () =
  Bench_common.run "short_lived" (fun () ->
      let sum = ref 0 in
      for i = 1 to Bench_common.iters 60_000 do
        sum := !sum + check (make 10);
        sum := !sum + lists (200 + i mod 50);
        sum := !sum + closures 300
      done;
      !sum)
