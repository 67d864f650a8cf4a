(* An OCaml-level allocation tracer built on Gc.Memprof: the baseline that
   configuration 4 of the benchmark measures against the native runtime
   tracer.

   It does what a memtrace-style library does for every sample, in OCaml
   callbacks: take the callstack that Gc.Memprof hands to the allocation
   callback, turn its return addresses into source locations (once per
   address), encode the event compactly and append it to a buffer that is
   written to a file when full and at exit.  Promotions and collections of
   sampled blocks are recorded too.  The code is ours; the point is to cost
   what an OCaml-callback tracer costs, not to be clever.

   Data structures, and why:
   - [buf]/[pos]: one Bytes buffer of [buf_size] bytes, flushed to the output
     channel when an event might not fit.  Writing to a fixed buffer keeps
     the per-event cost at a few stores.
   - [addr_codes]: hash table from raw return address to a small integer code.
     An address is decoded (Printexc.backtrace_slots_of_raw_entry, which may
     expand to several inlined frames) and its locations written out once,
     as a 'L' record, the first time it is seen; afterwards an event names it
     by its code.
   - [strings]: Hashtbl interning file and function names ('S' records), so
     that each name is written once.
   - [prev]: the previous sampled callstack (raw entries, innermost first).
     A new stack is written as the number of outermost frames it shares with
     the previous one plus its remaining inner frames: consecutive samples
     usually share most of their stack, so this keeps the events short.
   - [lock]: Gc.Memprof runs callbacks of other domains and threads in
     parallel with ours (5.3 makes spawned domains and threads join the
     profile), so all encoder state is protected by one mutex.  Sampling is
     disabled while a callback runs, so a callback never re-enters.

   File format ("BGMT", benchmark-private, read by [summary] and by the
   harness only through the byte count):
     header  "BGMT1\n" rate-as-text "\n"
     'S' uvar(id) uvar(len) bytes             string definition
     'L' uvar(code) uvar(nslots) { uvar(file) uvar(line) uvar(start)
                                   uvar(end) uvar(name) }*   location
     'A'|'a' uvar(size) uvar(nsamples) byte(source) uvar(shared)
             uvar(nnew) uvar(code)*           minor|major allocation; the
                                              block id is the event's index
     'P' uvar(id distance)                    promotion
     'C' uvar(id distance)                    collection
   where uvar is LEB128 and "id distance" is (next id - id), small for
   short-lived blocks.  Uncompressed, like memtrace's CTF. *)

let buf_size = 1 lsl 16
let buf = Bytes.create buf_size
let pos = ref 0
let out : out_channel option ref = ref None
let lock = Mutex.create ()

let next_id = ref 0
let samples = ref 0
let n_alloc = ref 0
let n_promote = ref 0
let n_collect = ref 0
let bytes_written = ref 0

(* Return addresses are ints: a specialised table avoids the polymorphic
   hash and compare on every frame of every sample. *)
module Addr_tbl = Hashtbl.Make (struct
    type t = int
    let equal = Int.equal
    let hash x = (x * 0x9E3779B1) lsr 8 land max_int
  end)

let addr_codes : int Addr_tbl.t = Addr_tbl.create 4096
let strings : (string, int) Hashtbl.t = Hashtbl.create 1024
let prev : Printexc.raw_backtrace_entry array ref = ref [||]

let flush_buf () =
  match !out with
  | None -> pos := 0
  | Some oc ->
    output oc buf 0 !pos;
    bytes_written := !bytes_written + !pos;
    pos := 0

(* Every write is preceded by [reserve n] with an upper bound on the bytes
   it will add; a single varint is at most 10 bytes. *)
let reserve n = if !pos + n > buf_size then flush_buf ()

let put_byte c =
  Bytes.unsafe_set buf !pos (Char.unsafe_chr c);
  incr pos

let rec put_uvar n =
  if n land (lnot 0x7f) = 0 then put_byte n
  else begin
    put_byte (n land 0x7f lor 0x80);
    put_uvar (n lsr 7)
  end

let put_string_def s =
  let id = Hashtbl.length strings in
  Hashtbl.add strings s id;
  let len = String.length s in
  if len + 21 > buf_size - !pos then flush_buf ();
  put_byte (Char.code 'S');
  put_uvar id;
  put_uvar len;
  Bytes.blit_string s 0 buf !pos len;
  pos := !pos + len;
  id

let string_id s =
  match Hashtbl.find_opt strings s with
  | Some id -> id
  | None -> put_string_def s

(* Decode a return address into its (possibly inlined) frames and write the
   'L' record defining its code. *)
let define_addr (e : Printexc.raw_backtrace_entry) =
  let code = Addr_tbl.length addr_codes in
  Addr_tbl.add addr_codes (e :> int) code;
  let slots =
    match Printexc.backtrace_slots_of_raw_entry e with
    | Some s -> s
    | None -> [||]
  in
  let described =
    Array.map (fun slot ->
        let file, line, s, e =
          match Printexc.Slot.location slot with
          | Some l -> l.filename, l.line_number, l.start_char, l.end_char
          | None -> "", 0, 0, 0
        in
        let name = Option.value ~default:"" (Printexc.Slot.name slot) in
        (string_id file, line, s, e, string_id name))
      slots
  in
  reserve (21 + 50 * Array.length described);
  put_byte (Char.code 'L');
  put_uvar code;
  put_uvar (Array.length described);
  Array.iter (fun (f, l, s, e, n) ->
      put_uvar f; put_uvar l; put_uvar s; put_uvar e; put_uvar n)
    described;
  code

let addr_code (e : Printexc.raw_backtrace_entry) =
  match Addr_tbl.find_opt addr_codes (e :> int) with
  | Some c -> c
  | None -> define_addr e

let source_byte : Gc.Memprof.allocation_source -> int = function
  | Normal -> 0
  | Marshal -> 1
  | Custom -> 2

let record_alloc tag (info : Gc.Memprof.allocation) =
  let stack = Printexc.raw_backtrace_entries info.callstack in
  let n = Array.length stack in
  let p = !prev in
  let pn = Array.length p in
  (* Outermost frames shared with the previous sample. *)
  let shared = ref 0 in
  while !shared < n && !shared < pn
        && (stack.(n - 1 - !shared) :> int) = (p.(pn - 1 - !shared) :> int) do
    incr shared
  done;
  let nnew = n - !shared in
  (* Define unseen addresses before the event that uses them; the second
     lookup below then always hits. *)
  for i = 0 to nnew - 1 do ignore (addr_code stack.(i)) done;
  reserve (1 + 10 * 5 + 1 + 10 * nnew);
  put_byte (Char.code tag);
  put_uvar info.size;
  put_uvar info.n_samples;
  put_byte (source_byte info.source);
  put_uvar !shared;
  put_uvar nnew;
  for i = 0 to nnew - 1 do
    put_uvar (Addr_tbl.find addr_codes (stack.(i) :> int))
  done;
  prev := stack;
  let id = !next_id in
  incr next_id;
  incr n_alloc;
  samples := !samples + info.n_samples;
  id

let record_ref tag id =
  reserve 11;
  put_byte (Char.code tag);
  put_uvar (!next_id - id)

let tracker : (int, int) Gc.Memprof.tracker = {
  alloc_minor = (fun info ->
      Mutex.protect lock (fun () -> Some (record_alloc 'A' info)));
  alloc_major = (fun info ->
      Mutex.protect lock (fun () -> Some (record_alloc 'a' info)));
  promote = (fun id ->
      Mutex.protect lock (fun () ->
          incr n_promote; record_ref 'P' id; Some id));
  dealloc_minor = (fun id ->
      Mutex.protect lock (fun () -> incr n_collect; record_ref 'C' id));
  dealloc_major = (fun id ->
      Mutex.protect lock (fun () -> incr n_collect; record_ref 'C' id));
}

let profile : Gc.Memprof.t option ref = ref None

(* Start tracing if BENCH_GCMEMPROF_RATE is set to a positive rate; the file
   is BENCH_GCMEMPROF_FILE (default gcmemprof-PID.trace).  Returns whether
   tracing started. *)
let start_from_env () =
  match Sys.getenv_opt "BENCH_GCMEMPROF_RATE" with
  | None | Some "" -> false
  | Some r ->
    let rate = float_of_string r in
    if rate <= 0. then false
    else begin
      let file =
        match Sys.getenv_opt "BENCH_GCMEMPROF_FILE" with
        | Some f when f <> "" -> f
        | _ -> Printf.sprintf "gcmemprof-%d.trace" (Unix.getpid ())
      in
      let oc = open_out_bin file in
      let header = Printf.sprintf "BGMT1\n%h\n" rate in
      output_string oc header;
      bytes_written := String.length header;
      out := Some oc;
      profile := Some (Gc.Memprof.start ~sampling_rate:rate tracker);
      true
    end

(* Stop sampling, write what is buffered and close the file.  Callbacks of
   the stopped profile may still run (promotions, collections), so the
   profile is discarded before the last flush.  With BENCH_GCMEMPROF_STATS
   set, one summary line goes to stderr for the harness. *)
let stop () =
  match !profile with
  | None -> ()
  | Some p ->
    Gc.Memprof.stop ();
    Gc.Memprof.discard p;
    profile := None;
    Mutex.protect lock (fun () ->
        flush_buf ();
        (match !out with Some oc -> close_out oc | None -> ());
        out := None);
    if Sys.getenv_opt "BENCH_GCMEMPROF_STATS" <> None then
      Printf.eprintf
        "gcmemprof: samples=%d allocs=%d promotes=%d collects=%d \
         locations=%d bytes=%d\n%!"
        !samples !n_alloc !n_promote !n_collect
        (Addr_tbl.length addr_codes) !bytes_written
