let render ~path ~session =
  let b = Buffer.create 1024 in
  Buffer.add_string b "<html><head><title>";
  Buffer.add_string b path;
  Buffer.add_string b "</title></head><body>\n";
  let seed = Hashtbl.hash (path, session) in
  for row = 0 to 15 + (seed mod 8) do
    Printf.bprintf b "<p>session %d, row %d: item %08x</p>\n" session row
      ((seed * (row + 1)) land 0xffffff)
  done;
  Buffer.add_string b "</body></html>\n";
  Buffer.contents b
