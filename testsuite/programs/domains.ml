(* Domains spawned and joined repeatedly, each allocating a known volume. *)
let[@inline never] work n = for i = 1 to n do ignore (Sys.opaque_identity (ref i)) done

let () =
  let rounds = 3 and per_domain = 500_000 in
  for _ = 1 to rounds do
    let ds = List.init 4 (fun _ -> Domain.spawn (fun () -> work per_domain)) in
    List.iter Domain.join ds
  done
