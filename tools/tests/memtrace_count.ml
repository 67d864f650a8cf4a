(* memtrace_count.ml: event counts of a CTF trace as memtrace's own reader
   (its Trace.Reader, backtraces parsed, every location code looked up) sees
   them, as one JSON line.  Built by memtrace_reader_check.py against the
   sources of a memtrace release, which this repository does not contain. *)
let () =
  let open Trace in
  let r = Reader.open_ ~filename:Sys.argv.(1) in
  let alloc = ref 0 and promote = ref 0 and collect = ref 0 and samples = ref 0 in
  let minor = ref 0 and major = ref 0 and external_ = ref 0 and words = ref 0 in
  let frames = ref 0 and locs = ref 0 in
  let codes = Location_code.Tbl.create 1000 in
  Reader.iter r (fun _ ev ->
      match ev with
      | Event.Alloc a ->
        incr alloc; samples := !samples + a.nsamples; words := !words + a.length;
        frames := !frames + a.backtrace_length;
        (match a.source with
         | Allocation_source.Minor -> minor := !minor + a.nsamples
         | Major -> major := !major + a.nsamples
         | External -> external_ := !external_ + a.nsamples);
        for i = 0 to a.backtrace_length - 1 do
          let c = a.backtrace_buffer.(i) in
          if not (Location_code.Tbl.mem codes c) then begin
            Location_code.Tbl.add codes c ();
            locs := !locs + List.length (Reader.lookup_location_code r c)
          end
        done
      | Promote _ -> incr promote
      | Collect _ -> incr collect);
  Printf.printf "{\"alloc\": %d, \"promote\": %d, \"collect\": %d, \"samples\": %d, \"minor\": %d, \"major\": %d, \"external\": %d, \"length_words\": %d, \"frames\": %d, \"location_codes\": %d, \"locations\": %d}\n"
    !alloc !promote !collect !samples !minor !major !external_ !words !frames (Location_code.Tbl.length codes) !locs;
  Reader.close r
