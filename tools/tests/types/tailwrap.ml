(* A wrapper that tail-calls Hashtbl.add: its frame vanishes, so the
   caller of Hashtbl.add's allocation is the loop that applies [add], a
   function of the same name but another one, of another type
   (string -> int -> unit).  Its type must not instantiate Hashtbl.add's
   (the key is a string, not an int); the wrapper's body, which applies
   Hashtbl.add at exactly one place, does. *)
let tbl : (string, int * int) Hashtbl.t = Hashtbl.create 16
let add k v = Hashtbl.add tbl k (v, 0)
let () = for i = 1 to 200000 do add (string_of_int i) i done
