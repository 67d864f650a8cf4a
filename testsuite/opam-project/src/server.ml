type stats = { served : int; rendered : int; bad : int; recent_paths : int }

let page_for cache (r : Request.t) rendered =
  match Session_cache.find cache ~session:r.session ~path:r.path with
  | Some page -> page
  | None ->
      incr rendered;
      let page = Page.render ~path:r.path ~session:r.session in
      Session_cache.remember cache ~session:r.session ~path:r.path page;
      page

let serve cache ic oc =
  let served = ref 0 and rendered = ref 0 and bad = ref 0 in
  let recent = Recent.create 256 in
  (try
     while true do
       let line = input_line ic in
       incr served;
       (match Request.of_line line with
       | Some r ->
           Recent.add recent r;
           let page = page_for cache r rendered in
           Printf.fprintf oc "200 %d %s\n" (String.length page)
             (Digest.to_hex (Digest.string page))
       | None ->
           incr bad;
           output_string oc "400\n");
       if !served mod 64 = 0 then flush oc
     done
   with End_of_file -> ());
  flush oc;
  {
    served = !served;
    rendered = !rendered;
    bad = !bad;
    recent_paths = Recent.distinct_paths recent;
  }
