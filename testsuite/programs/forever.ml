(* Allocates until killed, keeping some data alive. *)
let live = Queue.create ()
let () =
  print_endline "started"; flush stdout;
  let i = ref 0 in
  while true do
    incr i;
    Queue.push (ref !i) live;
    if Queue.length live > 100_000 then ignore (Queue.pop live)
  done
