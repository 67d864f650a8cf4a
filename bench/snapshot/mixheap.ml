(* A live heap of mixed shapes for the snapshot benchmark (run.sh), next
   to bigheap's regular chains: a unit per 2,400 bytes of argv.(1) MiB
   (2500: 36 M blocks, 0.99 GiB live, about 28 bytes a block); per unit a
   list of 20 ints, a record with a string and an option pointing some
   units back, a float array, a boxed float, an array of two records, a
   closure, a Hashtbl entry keyed by the string, a Map node, a tuple
   holding them, and every 64th unit a 4,000-byte Bytes.  Built in the
   order a program would, so the breadth-first walk meets them scattered
   as the GC's marking does.  Then, as bigheap: the faster of two whole
   major cycles (Gc.major) and one snapshot. *)
type r = { id : int; name : string; score : float; next : r option }
let () =
  let mib = int_of_string Sys.argv.(1) in
  let units = mib * 1024 * 1024 / 2400 in
  let keep = ref [] in
  let h = Hashtbl.create 1024 in
  let module M = Map.Make (Int) in
  let m = ref M.empty in
  let prev = ref None in
  for i = 1 to units do
    let l = List.init 20 (fun k -> k + i) in
    let s = Printf.sprintf "item-%d" i in
    let rcd = { id = i; name = s; score = float_of_int i; next = !prev } in
    if i mod 7 = 0 then prev := Some rcd;
    let fa = Array.make 8 (float_of_int i) in
    let f x = x + i in
    Hashtbl.replace h s (rcd, f);
    m := M.add i i !m;
    let big = if i mod 64 = 0 then Bytes.make 4000 'x' else Bytes.empty in
    keep := Obj.repr (l, rcd, fa, ref (float_of_int i), [| rcd; rcd |], big) :: !keep
  done;
  let major () = let t = Unix.gettimeofday () in Gc.major (); Unix.gettimeofday () -. t in
  ignore (major ());
  Printf.printf "gc_major_s %.4f\n%!" (min (major ()) (major ()));
  Gc.Memprof_trace.snapshot ();
  ignore (Sys.opaque_identity (keep, h, !m))
