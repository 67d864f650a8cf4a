type t = { path : string; session : int }

let to_line { path; session } = Printf.sprintf "GET %s %d" path session

let of_line line =
  match String.split_on_char ' ' line with
  | [ "GET"; path; session ] -> (
      match int_of_string_opt session with
      | Some session -> Some { path; session }
      | None -> None)
  | _ -> None
