(* fork: the child must never write into the parent's trace. *)
let[@inline never] child_work n = for i = 1 to n do ignore (Sys.opaque_identity (ref i)) done
let[@inline never] parent_work n = for i = 1 to n do ignore (Sys.opaque_identity (ref i)) done

let () =
  parent_work 500_000;
  match Unix.fork () with
  | 0 -> child_work 1_000_000; exit 0
  | pid ->
      parent_work 500_000;
      let _, st = Unix.waitpid [] pid in
      (match st with Unix.WEXITED 0 -> () | _ -> exit 7);
      Printf.printf "child %d\n" pid
