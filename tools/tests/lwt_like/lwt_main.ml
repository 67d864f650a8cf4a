(* lwt_main.ml: a miniature of Lwt_main.run (see lwt.ml): runs the paused
   callbacks until the promise is resolved. *)

let run p =
  let rec go () =
    match p.Lwt.state with
    | Lwt.Resolved x -> x
    | Lwt.Pending _ ->
      (match Queue.take_opt Lwt.paused with
       | Some f -> f (); go ()
       | None -> failwith "Lwt_main.run: nothing left to run")
  in
  go ()
