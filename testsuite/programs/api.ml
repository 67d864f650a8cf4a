(* Gc.Memprof_trace: trace one region only. *)
let[@inline never] traced_region n = for i = 1 to n do ignore (Sys.opaque_identity (ref i)) done
let[@inline never] untraced_region n = for i = 1 to n do ignore (Sys.opaque_identity (ref i)) done

let () =
  let path = Sys.argv.(1) in
  untraced_region 500_000;
  assert (not (Gc.Memprof_trace.is_active ()));
  Gc.Memprof_trace.start ~sampling_rate:1e-3 path;
  assert (Gc.Memprof_trace.is_active ());
  (match Gc.Memprof_trace.start path with
   | () -> print_endline "second start accepted"; exit 1
   | exception Failure _ -> ());
  (match Gc.Memprof_trace.start ~sampling_rate:2.0 path with
   | () -> exit 1 | exception Invalid_argument _ -> ());
  traced_region 2_000_000;
  Gc.Memprof_trace.flush ();
  Gc.Memprof_trace.stop ();
  untraced_region 500_000;
  print_endline "api ok"
