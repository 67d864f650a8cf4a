(* letrec.ml: blocks of recursive definitions.  The compiler pre-allocates
   each (caml_alloc_dummy) and fills it once the definition is computed:
   the pre-allocated block is the one the program keeps, and it used to
   have no source location (the site "<unknown>"; Lwt_stream's nodes are
   such).  Every sample must name a line of this file. *)
type node = { mutable next : node; mutable data : int option }

let[@inline never] new_node i =
  let rec node = { next = node; data = Some i } in
  node

let keep = ref []

let () =
  for i = 1 to 200_000 do keep := new_node i :: !keep done;
  Printf.printf "%d\n" (List.length !keep)
