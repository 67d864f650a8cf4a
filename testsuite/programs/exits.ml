(* The ways a program ends; the trace must be complete after each. *)
let[@inline never] churn n = for i = 1 to n do ignore (Sys.opaque_identity (ref i)) done

let () =
  churn 1_000_000;
  match Sys.argv.(1) with
  | "normal" -> ()
  | "exit3" -> exit 3
  | "uncaught" -> raise Not_found
  | "domain_exit" ->
      let _d = Domain.spawn (fun () -> churn 100_000; exit 4) in
      while true do churn 1000 done
  | _ -> prerr_endline "usage: exits normal|exit3|uncaught|domain_exit"; exit 9
