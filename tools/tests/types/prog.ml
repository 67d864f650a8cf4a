(* Allocations of known types, one per function named after it, all kept
   live to the end (tools/tests/types_tests.py checks `top --by type`). *)

type point = { x : int; y : int }
type shape = Circle of point | Square of { side : int } | Empty
type 'a tree = Leaf | Node of 'a tree * 'a * 'a tree

let keep : Obj.t list ref = ref []
let[@inline never] retain v = keep := Obj.repr v :: !keep
let origin = { x = 0; y = 0 }

let[@inline never] alloc_point i = { x = i; y = i }
let[@inline never] alloc_circle p = Circle p
let[@inline never] alloc_square i = Square { side = i }
let[@inline never] alloc_tuple i = (i, origin)
let[@inline never] alloc_int_tree i = Node (Leaf, i, Leaf)
let[@inline never] alloc_closure i = fun j -> i + j
let alloc_object i = object method size = i end
let[@inline never] alloc_ref i = ref i
let[@inline never] alloc_string_array n = Array.make n ""
let[@inline never] alloc_point_array n = Array.make n origin
let[@inline never] alloc_polyvar i = `Tag i
(* Not a tail call: this frame stays in the stack, between Hashtbl's and
   the caller that fixes the types. *)
let[@inline never] add_int_points tbl i v = Hashtbl.replace tbl i v; Sys.opaque_identity ()
let[@inline never] add_string_shapes tbl s v = Hashtbl.replace tbl s v

module Int_cells = Store.Make (struct type t = int let zero = 0 end)
module String_cells = Store.Make (struct type t = string let zero = "" end)

let () =
  let store = Store.create () in
  let names = Array.init 1000 string_of_int in
  let points = Hashtbl.create 16 and shapes = Hashtbl.create 16 in
  for i = 0 to 300_000 do
    retain (alloc_point i);
    retain (alloc_circle origin);
    retain (alloc_square i);
    retain (alloc_tuple i);
    retain (alloc_int_tree i);
    retain (alloc_closure i);
    retain (alloc_object i);
    retain (alloc_ref i);
    retain (alloc_polyvar i);
    if i mod 50 = 0 then begin
      retain (alloc_string_array 20);
      retain (alloc_point_array 20)
    end;
    if i mod 3 = 0 then Store.add store names.(i mod 1000);
    add_int_points points i [ origin ];
    if i mod 2 = 0 then add_string_shapes shapes names.(i mod 1000) Empty;
    retain (Int_cells.cell i);
    retain (String_cells.cell names.(i mod 1000));
    retain (Store.counter i);
    retain (Store.Promise.make () : int Store.Promise.t);
    retain (Store.Promise.resolved names.(i mod 1000))
  done;
  retain store;
  retain points;
  retain shapes
