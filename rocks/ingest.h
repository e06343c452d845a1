#ifndef HEXSTATE_ROCKS_INGEST_H
#define HEXSTATE_ROCKS_INGEST_H

#include <stddef.h>

#include <rocksdb/c.h>

#ifdef __cplusplus
extern "C" {
#endif

// hx_write_sst writes the SST file path with options opts from rep[0:len],
// the representation of a write batch of the default column family (12-byte
// header, then Put, Delete and DeleteRange records) whose keys are in order.
// It returns NULL on success, else the error in a malloc'd string the caller
// frees; the caller removes the file either way once done with it.
char* hx_write_sst(rocksdb_options_t* opts, const char* path, const char* rep,
                   size_t len);

// hx_ingest_files ingests paths[i] into column family cfs[i] for i < n, all
// or none (DB::IngestExternalFiles), moving the files in. It returns NULL on
// success, else RocksDB's message in a malloc'd string the caller frees.
char* hx_ingest_files(rocksdb_t* db, rocksdb_column_family_handle_t** cfs,
                      const char** paths, int n);

#ifdef __cplusplus
}
#endif

#endif
