(* A leak for `retainers --by type` (tests/snaptypes_tests.py): a Hashtbl in
   a record in a module global, and globals of a variant list, an option
   and refs, all built at run time (constants would be static data, not
   in the heap). *)
type cache = { name : string; tbl : (string, bytes) Hashtbl.t; mutable hits : int }
type shape = Circle of float | Square of int * int | Empty | Named of { label : string; size : int }

let make n = Sys.opaque_identity n
let counter = ref (make 0)
let state = { name = "main"; tbl = Hashtbl.create 16; hits = 0 }
let shapes = [ Circle (float_of_int (make 1)); Square (make 2, 3); Empty;
               Named { label = String.make (make 3) 'x'; size = 4 } ]
let maybe = Some (List.init (make 3) (fun i -> i * 7))
let total = ref [ float_of_int (make 5) ]

let () =
  for i = 1 to 2000 do
    Hashtbl.replace state.tbl (string_of_int i) (Bytes.make 100 'x')
  done;
  counter := List.length shapes;
  Printf.printf "reachable_words %d\n" (Obj.reachable_words (Obj.repr state.tbl))
