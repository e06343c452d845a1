#ifndef HEXSTATE_ROCKS_INGEST_H
#define HEXSTATE_ROCKS_INGEST_H

#include <stdbool.h>
#include <stddef.h>

#include <rocksdb/c.h>

#ifdef __cplusplus
extern "C" {
#endif

// hx_sst is an SST file being written (RocksDB's SstFileWriter).
typedef struct hx_sst hx_sst;

// hx_sst_open creates the SST file path with options opts, written as for
// the bottom level when bottom (with fast_zstd, a ZSTD bottom level at ZSTD's
// fast level -1), else as a memtable flush writes (upper levels'
// compression, Bloom filters of bloom_bits bits per key); on an error it
// returns NULL and sets *err to a malloc'd message the caller frees.
hx_sst* hx_sst_open(rocksdb_options_t* opts, const char* path, bool bottom,
                    bool fast_zstd, double bloom_bits, char** err);

// hx_sst_add adds to f the first records of recs[0:len], max_records at
// most, and sets *used to the bytes they took: records of a write batch's
// representation of the default column family (Put, Delete, DeleteRange; no
// header), keys in order after every key added before. It returns NULL on
// success, else a malloc'd message the caller frees.
char* hx_sst_add(hx_sst* f, const char* recs, size_t len, int max_records,
                 size_t* used);

// hx_sst_finish completes f's file; it returns NULL or a malloc'd message.
char* hx_sst_finish(hx_sst* f);

// hx_sst_destroy frees f (the file stays; the caller removes it).
void hx_sst_destroy(hx_sst* f);

// hx_ingest_files ingests, for i < n, counts[i] files into column family
// cfs[i] (the paths one family after the other), all or none
// (DB::IngestExternalFiles), moving the files in. A family's files must not
// overlap. It returns NULL on success, else RocksDB's message in a malloc'd
// string the caller frees.
char* hx_ingest_files(rocksdb_t* db, rocksdb_column_family_handle_t** cfs,
                      const int* counts, const char** paths, int n);

#ifdef __cplusplus
}
#endif

#endif
