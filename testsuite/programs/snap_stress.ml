(* Heap snapshots at every major cycle while 3 domains build, check and
   drop trees, lists of closures and hash tables: the snapshot marks every
   block's header during its walk and must give each one back intact, so
   the checksums recomputed after many cycles match the ones computed at
   construction.  Prints "ok <cycles>" or the first mismatch. *)
type tree = Leaf of int | Node of tree * string * tree

let rec build d k =
  if d = 0 then Leaf k
  else Node (build (d - 1) (2 * k), string_of_int k, build (d - 1) (2 * k + 1))

let rec sum = function
  | Leaf k -> k
  | Node (l, s, r) -> sum l + int_of_string s + sum r

let work id =
  let kept = Array.make 8 (Leaf 0, 0) in
  let closures = ref [] in
  let tbl = Hashtbl.create 16 in
  let bad = ref None in
  for i = 0 to 3_000 do
    let t = build (8 + i mod 5) (i + id) in
    kept.(i mod 8) <- (t, sum t);
    closures := (let x = i in fun () -> x + id) :: !closures;
    if List.length !closures > 500 then closures := [];
    Hashtbl.replace tbl (i mod 997) (Array.make (1 + i mod 7) i);
    if i mod 50 = 0 then
      Array.iter (fun (t, s) -> if sum t <> s && !bad = None then bad := Some i) kept
  done;
  Hashtbl.iter (fun k a -> if Array.length a > 0 && a.(0) mod 997 <> k && !bad = None then bad := Some (-k)) tbl;
  List.iter (fun f -> ignore (f ())) !closures;
  !bad

let () =
  let ds = List.init 2 (fun k -> Domain.spawn (fun () -> work (k + 1))) in
  let r0 = work 0 in
  let rs = r0 :: List.map Domain.join ds in
  match List.find_opt Option.is_some rs with
  | Some (Some i) -> Printf.printf "mismatch at %d\n" i
  | _ -> Printf.printf "ok %d\n" (Gc.quick_stat ()).Gc.major_collections
