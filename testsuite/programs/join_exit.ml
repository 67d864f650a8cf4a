(* join_exit.ml: a domain is spawned, does a little work and is joined,
   then the program exits.  With cleanup at exit (OCAMLRUNPARAM=c), the
   joined domain's thread may still be releasing its last runtime memory
   (its callback and result roots) after Domain.join has returned, while
   the main domain's caml_shutdown destroys the memory pool: before the fix
   about one run in 400 crashed (SIGSEGV), traced or not. *)
let () =
  let d = Domain.spawn (fun () ->
    let l = ref [] in
    for i = 1 to 1000 do l := i :: !l done;
    List.length !l) in
  ignore (Sys.opaque_identity (Domain.join d))
