/* memprof_symbols.h: the names the runtime links the trace codec and lz4
   under.

   Every global symbol of the runtime is caml_-prefixed (the rule upstream
   checks with tools/check-symbol-names), so that a user's program, whose
   C stubs may define anything else (an lz4 of their own, a function named
   mpt_reader_open), links exactly as with vanilla OCaml.  The trace codec
   (memprof_trace_codec.c) is shared with the tools and the tests, where
   its functions keep their short mpt_ names; inside the runtime
   (IN_CAML_RUNTIME, set by upstream's build for every runtime object) this
   header renames them caml_mpt_*, and renames lz4's entry points to the
   caml_lz4_* names of the runtime's private copy of liblz4.a's objects
   (memprof_lz4_private.sh, which reads its list of entry points here).

   Include it before <lz4frame.h> and before the codec's declarations.  A
   function added to the codec, or an lz4 function the codec starts to
   call, gets its line here; the test suite runs check-symbol-names on the
   installed runtime libraries and fails on a name left out. */

#ifndef CAML_MEMPROF_SYMBOLS_H
#define CAML_MEMPROF_SYMBOLS_H

#ifdef IN_CAML_RUNTIME

/* lz4's frame API, as the codec calls it. */
#define LZ4F_compressBegin caml_lz4_LZ4F_compressBegin
#define LZ4F_compressEnd caml_lz4_LZ4F_compressEnd
#define LZ4F_compressFrame caml_lz4_LZ4F_compressFrame
#define LZ4F_compressFrameBound caml_lz4_LZ4F_compressFrameBound
#define LZ4F_compressUpdate caml_lz4_LZ4F_compressUpdate
#define LZ4F_createCompressionContext caml_lz4_LZ4F_createCompressionContext
#define LZ4F_createDecompressionContext caml_lz4_LZ4F_createDecompressionContext
#define LZ4F_decompress caml_lz4_LZ4F_decompress
#define LZ4F_freeCompressionContext caml_lz4_LZ4F_freeCompressionContext
#define LZ4F_freeDecompressionContext caml_lz4_LZ4F_freeDecompressionContext
#define LZ4F_getErrorName caml_lz4_LZ4F_getErrorName
#define LZ4F_isError caml_lz4_LZ4F_isError
#define LZ4F_resetDecompressionContext caml_lz4_LZ4F_resetDecompressionContext

/* The codec's functions (memprof_trace_codec.h). */
#define mpt_chunk_header caml_mpt_chunk_header
#define mpt_enc_alloc caml_mpt_enc_alloc
#define mpt_enc_alloc_unpacked caml_mpt_enc_alloc_unpacked
#define mpt_enc_init caml_mpt_enc_init
#define mpt_enc_location caml_mpt_enc_location
#define mpt_enc_major_cycle caml_mpt_enc_major_cycle
#define mpt_enc_major_cycle_mark caml_mpt_enc_major_cycle_mark
#define mpt_enc_minor_gc_fates caml_mpt_enc_minor_gc_fates
#define mpt_enc_pack_record caml_mpt_enc_pack_record
#define mpt_enc_reset_buffer caml_mpt_enc_reset_buffer
#define mpt_enc_simple caml_mpt_enc_simple
#define mpt_enc_snap_begin caml_mpt_enc_snap_begin
#define mpt_enc_snap_block caml_mpt_enc_snap_block
#define mpt_enc_snap_custom caml_mpt_enc_snap_custom
#define mpt_enc_snap_edges caml_mpt_enc_snap_edges
#define mpt_enc_snap_ids caml_mpt_enc_snap_ids
#define mpt_enc_snap_end caml_mpt_enc_snap_end
#define mpt_enc_snap_walk caml_mpt_enc_snap_walk
#define mpt_enc_snap_root caml_mpt_enc_snap_root
#define mpt_enc_snap_sample caml_mpt_enc_snap_sample
#define mpt_enc_snap_skip caml_mpt_enc_snap_skip
#define mpt_enc_snap_string caml_mpt_enc_snap_string
#define mpt_enc_stack_room caml_mpt_enc_stack_room
#define mpt_enc_stack_window caml_mpt_enc_stack_window
#define mpt_enc_string caml_mpt_enc_string
#define mpt_frame_bound caml_mpt_frame_bound
#define mpt_frame_compress caml_mpt_frame_compress
#define mpt_frame_state_free caml_mpt_frame_state_free
#define mpt_frame_state_new caml_mpt_frame_state_new
#define mpt_frame_store caml_mpt_frame_store
#define mpt_reader_bytes_read caml_mpt_reader_bytes_read
#define mpt_reader_close caml_mpt_reader_close
#define mpt_reader_end_info caml_mpt_reader_end_info
#define mpt_reader_error caml_mpt_reader_error
#define mpt_reader_follow caml_mpt_reader_follow
#define mpt_reader_info caml_mpt_reader_info
#define mpt_reader_location caml_mpt_reader_location
#define mpt_reader_location_count caml_mpt_reader_location_count
#define mpt_reader_next caml_mpt_reader_next
#define mpt_reader_open caml_mpt_reader_open
#define mpt_reader_open_mem caml_mpt_reader_open_mem
#define mpt_reader_truncated caml_mpt_reader_truncated
#define mpt_write_end_chunk caml_mpt_write_end_chunk
#define mpt_write_header_chunk caml_mpt_write_header_chunk

#endif /* IN_CAML_RUNTIME */

#endif /* CAML_MEMPROF_SYMBOLS_H */
