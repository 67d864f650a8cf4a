(* lwt_io.ml: a miniature of Lwt_io.read_line (see lwt.ml): reads a line
   from an in-memory channel, one character per pause of the scheduler. *)

type input_channel = { text : string; mutable pos : int }

let of_string text = { text; pos = 0 }

let[@inline never] read_line ic =
  let buf = Buffer.create 16 in
  let rec loop () =
    Lwt.bind (Lwt.pause ()) (fun () ->
        if ic.pos >= String.length ic.text then Lwt.return (Buffer.contents buf)
        else begin
          let c = ic.text.[ic.pos] in
          ic.pos <- ic.pos + 1;
          if c = '\n' then Lwt.return (Buffer.contents buf)
          else (Buffer.add_char buf c; loop ())
        end)
  in
  loop ()
