(* A Printf- and Format-heavy program for `top --by type` (issue 31):
   most of its allocation is Printf's and Format's own (CamlinternalFormat's
   accumulators and closures), plus a record and a closure whose
   expressions span several lines. *)

type entry = {
  key : string;
  count : int;
  tags : string list;
}

let n = try int_of_string Sys.argv.(1) with _ -> 200_000

(* A record literal over several lines: the trace's location ends on its
   last line. *)
let make_entry i =
  {
    key = string_of_int i;
    count = i;
    tags = [];
  }

(* A local closure (captures [step]) whose location is its parameters to
   its body's end, over several lines. *)
let sum_with step =
  let rec loop acc i =
    if i <= 0 then acc
    else loop (acc + step) (i - 1)
  in
  loop

let () =
  let b = Buffer.create 4096 in
  let oc = open_out "/dev/null" in
  let keep = ref [] and total = ref 0 in
  for i = 1 to n do
    let s = Printf.sprintf "item %d: %s (%5d)" i "name" (i * 7) in
    total := !total + String.length s;
    Buffer.clear b;
    Printf.bprintf b "<td>%s</td><td>%08x</td>" s i;
    Printf.fprintf oc "%d %s\n" i s;
    let f = Format.asprintf "%d-%s" i s in
    total := !total + String.length f;
    let e = make_entry i in
    if i mod 100 = 0 then keep := e :: !keep;
    total := !total + (sum_with i) 0 3
  done;
  close_out oc;
  Printf.printf "%d %d\n" (List.length !keep) (!total land 0xff)
