(* Blocks as close together as the major heap puts them, for the walk's
   id slots (one per two words of heap, memprof_heap_snapshot.c): refs
   and one-field blocks (two words, the smallest size class, allocated
   one after the other in the same pools), boxed floats, pairs, and
   mutually recursive closures allocated at run time, whose infix
   pointers name a field inside their block, each held by a constructor
   in one array.  Prints the truth (bytes reachable
   from [keep], headers included) and takes a snapshot: the module
   global's retained size must be exactly that (a shared slot would merge
   two blocks and lose some). *)
type item =
  | Ref of int ref
  | One of int option
  | Float of float ref
  | Pair of (int * int)
  | Even of (int -> bool)       (* an infix pointer: the second closure *)
  | Odd of (int -> bool)

let make i =
  let rec even n = n = i || (n > 0 && odd (n - 1))
  and odd n = n <> i && n > 0 && even (n - 1) in
  match i mod 6 with
  | 0 -> Ref (ref i)
  | 1 -> One (Some i)
  | 2 -> Float (ref (float_of_int i))
  | 3 -> Pair (i, i + 1)
  | 4 -> Even even
  | _ -> Odd odd

let keep =
  let n = if Array.length Sys.argv > 1 then int_of_string Sys.argv.(1) else 60_000 in
  Array.init n make

let () =
  (* promoted and packed: the array and its items in the major heap *)
  Gc.full_major ();
  Printf.printf "truth %d\n%!"
    (Obj.reachable_words (Obj.repr keep) * (Sys.word_size / 8));
  Gc.Memprof_trace.snapshot ()
