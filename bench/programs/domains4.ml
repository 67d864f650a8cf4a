(* A 4-domain workload: the main domain and three spawned domains each build
   and drop trees and lists, and keep a small share of them in a per-domain
   table, so every domain allocates, promotes and collects. *)

type tree = Leaf | Node of tree * int * tree

let rec make d = if d = 0 then Leaf else Node (make (d - 1), d, make (d - 1))

let rec check = function
  | Leaf -> 0
  | Node (l, v, r) -> check l + v + check r

let work seed n =
  let keep = Hashtbl.create 64 in
  let sum = ref 0 in
  for i = 1 to n do
    let t = make 9 in
    sum := !sum + check t;
    let l = List.init 50 (fun k -> k + seed) in
    if i mod 64 = 0 then Hashtbl.replace keep (i mod 2048) l;
    sum := !sum + List.length l
  done;
  !sum + Hashtbl.length keep

let () =
  (* Every minor collection is a stop-the-world barrier of all domains; with
     4 domains on a 2-core machine a descheduled domain makes the others
     spin, and the default 256k-word minor heaps make wall times swing by 3x
     from run to run.  Larger minor heaps (1M words, set before any domain
     is spawned) mean fewer barriers and steadier numbers. *)
  Gc.set { (Gc.get ()) with minor_heap_size = 1 lsl 20 };
  Bench_common.run "domains4" (fun () ->
      let n = Bench_common.iters 18_000 in
      (* Bench_common.spawn, so that BENCH_STATS counts their allocations. *)
      let ds =
        List.init 3 (fun k -> Bench_common.spawn (fun () -> work (k + 1) n)) in
      let mine = work 0 n in
      List.fold_left (fun acc d -> acc + Domain.join d) mine ds)
