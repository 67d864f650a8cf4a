(* A leaky server-like loop: each "request" is parsed from a string, looked
   up in a session table and answered with a freshly built response.  Most
   data dies with the request, but one session in sixteen is never evicted:
   the table leaks slowly, the pattern a memory-tracing user hunts for. *)

type session = { id : int; mutable hits : int; history : string list }

let parse req =
  match String.split_on_char ' ' req with
  | [ "GET"; path; sid ] -> Some (path, int_of_string sid)
  | _ -> None

let () =
  Bench_common.run "leaky_server" (fun () ->
      let sessions : (int, session) Hashtbl.t = Hashtbl.create 1024 in
      let served = ref 0 in
      for i = 1 to Bench_common.iters 1_000_000 do
        let sid = i * 7 mod 5003 + (i / 5003) * 5003 in
        let req = Printf.sprintf "GET /item/%d %d" (i mod 977) sid in
        match parse req with
        | None -> ()
        | Some (path, sid) ->
          let s =
            match Hashtbl.find_opt sessions sid with
            | Some s -> s
            | None ->
              let s = { id = sid; hits = 0; history = [ path ] } in
              Hashtbl.replace sessions sid s; s
          in
          s.hits <- s.hits + 1;
          let body = Buffer.create 64 in
          Buffer.add_string body "200 OK ";
          Buffer.add_string body path;
          Buffer.add_string body (string_of_int s.hits);
          served := !served + Buffer.length body;
          (* Evict finished sessions, except the leaked one in sixteen. *)
          if s.hits >= 3 && s.id land 15 <> 0 then Hashtbl.remove sessions sid
      done;
      !served + Hashtbl.length sessions)
