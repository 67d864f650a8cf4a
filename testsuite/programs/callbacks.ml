(* A scheduler of its own, run as Lwt runs the program's callbacks
   (memprof_callbacks=N, issue 30): [Sched.run] wraps the program's
   function in a closure of its own, runs it, and once it has returned,
   allocates for it (Lwt's bind links and resolves the promise the
   callback gave).  That allocation has no frame of the program's
   function on the stack: with the scheduler's frames hidden it was
   charged to the program's entry; with callback frames it goes to the
   callback the wrapper holds.  handler_a runs twice as often as
   handler_b: the scheduler's allocations split 2:1 between them.
   [serve], the program's own function, holds handler_a across an
   allocation of the scheduler's (a buffer, as a server loop holds its
   request handler across Lwt_io.of_fd): that is serve's work, not the
   handler's (a closure that a frame of the program holds is a value it
   has, not a callback run for it), so the split stays 2:1. *)

module Sched = struct
  let[@inline never] after_callback n = Array.make n 0

  let[@inline never] run (f : int -> int) x =
    let wrapper y = f y + 1 in
    let v = wrapper x in
    let link = after_callback 300 in
    (* the wrapper, live across the allocation, as Lwt's callback is *)
    ignore (Sys.opaque_identity (Obj.repr wrapper));
    Array.length link + v

  let[@inline never] buffer n = Array.make n 0
end

(* Each allocates (a function with no call and no allocation point has no
   frame descriptor, so no location: see memprof_callbacks.c). *)
let[@inline never] handler_a x = !(Sys.opaque_identity (ref x)) * 3
let[@inline never] handler_b x = !(Sys.opaque_identity (ref x)) - 1

let[@inline never] serve (handler : int -> int) x =
  let buf = Sched.buffer 200 in
  Array.length buf + handler x

let () =
  let sum = ref 0 in
  for i = 1 to 30_000 do
    let f = if i mod 3 = 0 then handler_b else handler_a in
    sum := !sum + Sched.run f i;
    if i mod 2 = 0 then sum := !sum + serve handler_a i
  done;
  Printf.printf "sum %d\n" !sum
