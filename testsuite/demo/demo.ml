(* A small program with a leak, knowing nothing about profiling: run it with
   OCAMLRUNPARAM=memprof=demo.trace and look at the trace with ocaml-memprof. *)
module Cache = struct
  let table : (int, string) Hashtbl.t = Hashtbl.create 16
  (* Remembers every answer forever: the leak. *)
  let[@inline never] remember key value = Hashtbl.replace table key value
end

let[@inline never] render i =
  String.concat "," (List.init 20 (fun j -> string_of_int (i * j)))

let[@inline never] handle i =
  let page = render i in
  if i mod 3 = 0 then Cache.remember i page;
  String.length page

let () =
  let total = ref 0 in
  for i = 1 to 300_000 do total := !total + handle i done;
  Printf.printf "served 300000 requests, %d bytes, %d cached\n"
    !total (Hashtbl.length Cache.table)
