(* The harness of the leak programs: a server and its client on 127.0.0.1,
   one connection per request (a line out, a line back), so that the
   programs look like Lwt_unix servers and run in bounded time without
   anything outside the machine.  Shared by every leak_*.ml. *)

open Lwt.Syntax

(* Each run stops by itself; a hang (a bug in a program) must not hold the
   test suite. *)
let deadline_s = 60.

(* Serve [requests] requests numbered 1..requests, [clients] connections at
   a time, answering each with [handle]; return when all are answered. *)
let run ~requests ~clients ~handle =
  let sock = Lwt_unix.socket Unix.PF_INET Unix.SOCK_STREAM 0 in
  Lwt_unix.setsockopt sock Unix.SO_REUSEADDR true;
  let* () = Lwt_unix.bind sock (Unix.ADDR_INET (Unix.inet_addr_loopback, 0)) in
  Lwt_unix.listen sock 128;
  let port =
    match Lwt_unix.getsockname sock with
    | Unix.ADDR_INET (_, port) -> port
    | Unix.ADDR_UNIX _ -> invalid_arg "loopback: not an inet socket"
  in
  let serve_one fd =
    (* Both channels leave the descriptor to us: it is closed once. *)
    let no_close () = Lwt.return_unit in
    let ic = Lwt_io.of_fd ~close:no_close ~mode:Lwt_io.Input fd in
    let oc = Lwt_io.of_fd ~close:no_close ~mode:Lwt_io.Output fd in
    Lwt.finalize
      (fun () ->
        let* request = Lwt_io.read_line ic in
        let* reply = handle request in
        let* () = Lwt_io.write_line oc reply in
        Lwt_io.flush oc)
      (fun () -> Lwt_unix.close fd)
  in
  let rec accept_loop () =
    let* fd, _ = Lwt_unix.accept sock in
    Lwt.async (fun () -> serve_one fd);
    accept_loop ()
  in
  let server = accept_loop () in
  let next = ref 0 in
  let rec client () =
    incr next;
    if !next > requests then Lwt.return_unit
    else begin
      let request = string_of_int !next in
      let* reply =
        Lwt_io.with_connection (Unix.ADDR_INET (Unix.inet_addr_loopback, port))
          (fun (ic, oc) ->
            let* () = Lwt_io.write_line oc request in
            let* () = Lwt_io.flush oc in
            Lwt_io.read_line ic)
      in
      if reply = "" then failwith ("loopback: empty reply to request " ^ request);
      client ()
    end
  in
  let timeout =
    let* () = Lwt_unix.sleep deadline_s in
    prerr_endline "loopback: deadline passed, giving up";
    exit 3
  in
  let* () = Lwt.pick [ Lwt.join (List.init clients (fun _ -> client ())); timeout ] in
  Lwt.cancel server;
  Lwt_unix.close sock

(* The mode from the command line: true to plant the leak, false for the
   control that does the same work without it. *)
let leak_mode () =
  match Sys.argv with
  | [| _; "leak" |] -> true
  | [| _; "control" |] -> false
  | _ ->
    prerr_endline ("usage: " ^ Sys.argv.(0) ^ " leak|control");
    exit 2

(* Bytes reachable from [v], headers included, as the tools count them. *)
let reachable_bytes v = Obj.reachable_words (Obj.repr v) * (Sys.word_size / 8)
