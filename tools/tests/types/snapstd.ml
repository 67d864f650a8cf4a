(* The standard library's containers in module globals, for
   tests/snaptypes_tests.py: their types unfold from the standard
   library's own .cmt files, a functor's application (Map.Make) through
   the functor's body. *)
module SM = Map.Make (String)

let q : string Queue.t = Queue.create ()
let st : int list Stack.t = Stack.create ()
let b = Buffer.create 100
let m = ref SM.empty

let () =
  for i = 1 to 50 do
    Queue.add (string_of_int i) q;
    Stack.push [ i ] st;
    Buffer.add_string b "xyz";
    m := SM.add (string_of_int i) i !m
  done
