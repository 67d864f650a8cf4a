(* Prints what the runtime made of OCAMLRUNPARAM's upstream options. *)
let () =
  let g = Gc.get () in
  Printf.printf "custom_minor_ratio=%d custom_major_ratio=%d minor_heap_size=%d\n"
    g.Gc.custom_minor_ratio g.Gc.custom_major_ratio g.Gc.minor_heap_size;
  for i = 1 to 100_000 do ignore (Sys.opaque_identity (ref i)) done
