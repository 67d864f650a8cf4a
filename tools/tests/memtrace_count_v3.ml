(* memtrace_count_v3.ml: event counts of a CTF trace, in total and per
   domain, as the reader of memtrace's master branch (which reads version 3,
   one stream per domain) sees them, backtraces parsed and every location
   code looked up; one JSON line.  Built by memtrace_reader_check.py against
   a memtrace master source tree, which this repository does not contain. *)
let () =
  let open Trace in
  let r = Reader.open_ ~filename:Sys.argv.(1) in
  let alloc = ref 0 and promote = ref 0 and collect = ref 0 and samples = ref 0 in
  let doms = Hashtbl.create 8 in
  Reader.iter r (fun _ ev ->
      let d = (Event.domain ev :> int) in
      let (a, s) = try Hashtbl.find doms d with Not_found -> (0, 0) in
      match ev with
      | Event.Alloc a' ->
        incr alloc; samples := !samples + a'.nsamples;
        Hashtbl.replace doms d (a + 1, s + a'.nsamples);
        for i = 0 to a'.backtrace_length - 1 do
          ignore (Reader.lookup_location_code r a'.backtrace_buffer.(i))
        done
      | Promote _ -> incr promote
      | Collect _ -> incr collect);
  let dl = List.sort compare (Hashtbl.fold (fun d (a, s) l -> (d, a, s) :: l) doms []) in
  Printf.printf "{\"alloc\": %d, \"promote\": %d, \"collect\": %d, \"samples\": %d, \"domains\": [%s]}\n"
    !alloc !promote !collect !samples
    (String.concat ", " (List.map (fun (d, a, s) -> Printf.sprintf "[%d, %d, %d]" d a s) dl));
  Reader.close r
