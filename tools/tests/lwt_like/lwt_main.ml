(* lwt_main.ml: a miniature of Lwt_main.run (see lwt.ml): runs the paused
   callbacks until the promise is resolved. *)

let run p =
  let rec go () =
    match p.Lwt.state with
    | Lwt.Fulfilled x -> x
    | Lwt.Rejected e -> raise e
    | Lwt.Proxy _ -> invalid_arg "Lwt_main.run: proxy"
    | Lwt.Pending _ ->
      (match Queue.take_opt Lwt.paused with
       | Some f -> f (); go ()
       | None -> failwith "Lwt_main.run: nothing left to run")
  in
  go ()
