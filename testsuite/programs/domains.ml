(* Domains spawned and joined repeatedly, each allocating a known volume.
   The four domains of a round wait for each other before working, so that
   four domain slots (trace streams) are active at once. *)
let[@inline never] work n = for i = 1 to n do ignore (Sys.opaque_identity (ref i)) done

let () =
  let rounds = 3 and per_domain = 500_000 in
  for _ = 1 to rounds do
    let started = Atomic.make 0 in
    let body () =
      Atomic.incr started;
      while Atomic.get started < 4 do Domain.cpu_relax () done;
      work per_domain
    in
    let ds = List.init 4 (fun _ -> Domain.spawn body) in
    List.iter Domain.join ds
  done
