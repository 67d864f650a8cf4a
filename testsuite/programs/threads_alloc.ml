(* Systhreads in one domain, each allocating a known volume. *)
let[@inline never] thread_work n =
  for i = 1 to n do
    ignore (Sys.opaque_identity (ref i));
    if i mod 10_000 = 0 then Thread.yield ()
  done

let () =
  let ts = List.init 4 (fun _ -> Thread.create thread_work 500_000) in
  List.iter Thread.join ts
