(* A wrapper that tail-calls Hashtbl.add: its frame vanishes, so the
   caller of Hashtbl.add's allocation is the loop that applies [add], a
   function of the same name but another one, of another type
   (string -> int -> unit).  Its type must not instantiate Hashtbl.add's
   (the key is a string, not an int); the wrapper's body, which applies
   Hashtbl.add at exactly one place, does. *)
let tbl : (string, int * int) Hashtbl.t = Hashtbl.create 16
let add k v = Hashtbl.add tbl k (v, 0)
let () = for i = 1 to 200000 do add (string_of_int i) i done

(* A functor's function applied through the application's module: SM.add
   is Map.Make's add (module SM = Map.Make (String) says so), which
   instantiates its tree's 'a. *)
module SM = Map.Make (String)
let m = ref SM.empty
let () = for i = 1 to 50000 do m := SM.add (string_of_int i) (float i) !m done
