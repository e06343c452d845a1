// SST files for ingestion: RocksDB's C API (7.8) has one call per key for
// SstFileWriter (and grocksdb allocates per call) and only the
// one-column-family IngestExternalFile, so these call the C++ API on the C
// handles' objects: records go to a file in runs, ingestion in one call. See
// ingest.go.

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <rocksdb/c.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/options.h>
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/table.h>

#include "ingest.h"

// The C API's handles wrap the C++ objects in their first (only) field; these
// definitions match RocksDB's db/c.cc.
struct rocksdb_t {
  rocksdb::DB* rep;
};
struct rocksdb_column_family_handle_t {
  rocksdb::ColumnFamilyHandle* rep;
};
struct rocksdb_options_t {
  rocksdb::Options rep;
};

static char* status_message(const rocksdb::Status& s) {
  return strdup(s.ToString().c_str());
}

// read_uvarint reads a Go binary.Uvarint from *p (below end) into *v.
static bool read_uvarint(const char** p, const char* end, uint64_t* v) {
  uint64_t x = 0;
  for (int shift = 0; *p < end && shift < 64; shift += 7) {
    unsigned char b = static_cast<unsigned char>(*(*p)++);
    x |= uint64_t(b & 0x7f) << shift;
    if (b < 0x80) {
      *v = x;
      return true;
    }
  }
  return false;
}

// read_slice reads a uvarint-length-prefixed slice from *p (below end).
static bool read_slice(const char** p, const char* end, rocksdb::Slice* s) {
  uint64_t n;
  if (!read_uvarint(p, end, &n) || uint64_t(end - *p) < n) {
    return false;
  }
  *s = rocksdb::Slice(*p, n);
  *p += n;
  return true;
}

// The record tags of a write batch's representation that hx_sst_add reads
// (default column family; RocksDB's db/dbformat.h).
enum : char { kTagDeletion = 0x0, kTagValue = 0x1, kTagRangeDeletion = 0xF };

struct hx_sst {
  rocksdb::SstFileWriter w;
  // The file's pages stay in the page cache (RocksDB's default drops them as
  // it writes): the next blocks read the records just written.
  hx_sst(const rocksdb::Options& o)
      : w(rocksdb::EnvOptions(), o, nullptr, /*invalidate_page_cache=*/false) {}
};

// kLoadZstdLevel is the ZSTD level of a load's bottom-level files when
// hx_sst_open is asked for fast compression: ZSTD's first negative (fast)
// level, which compresses a load's 4 KiB blocks in about half the CPU of the
// default level 3 for ~2.5 % more bytes (docs/design.md §12, "Large batches
// as ingested files").
static const int kLoadZstdLevel = -1;

// file_options returns opts for a file that lands on the bottom level (an
// SstFileWriter, not knowing the level, writes as for the bottom: the
// bottommost compression and, with the store's hybrid filter policy, Ribbon
// filters, unless the family keeps no last-level filters; with fast_zstd a
// ZSTD bottom level at kLoadZstdLevel, unless the options set a bottommost
// level of their own) or, when not bottom, for an upper one, as a memtable
// flush writes it: the upper levels' compression and Bloom filters of
// bloom_bits bits per key (cheaper to build; 0: no filter).
static rocksdb::Options file_options(const rocksdb::Options& opts,
                                     bool bottom, bool fast_zstd,
                                     double bloom_bits) {
  rocksdb::Options o = opts;
  if (bottom) {
    if (fast_zstd && o.bottommost_compression == rocksdb::kZSTD &&
        !o.bottommost_compression_opts.enabled) {
      // Without enabled, the bottom level compresses with compression_opts;
      // keep those (a dictionary, say) and change the level alone.
      o.bottommost_compression_opts = o.compression_opts;
      o.bottommost_compression_opts.level = kLoadZstdLevel;
      o.bottommost_compression_opts.enabled = true;
    }
    // A family that keeps no filters in its last level (the vertices',
    // optimize_filters_for_hits) gets none in a file ingested there either:
    // an SstFileWriter does not know the level and would build them.
    const rocksdb::BlockBasedTableOptions* t =
        o.table_factory->GetOptions<rocksdb::BlockBasedTableOptions>();
    if (o.optimize_filters_for_hits && t != nullptr && t->filter_policy != nullptr) {
      rocksdb::BlockBasedTableOptions nofilter = *t;
      nofilter.filter_policy.reset();
      o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(nofilter));
    }
    return o;
  }
  o.bottommost_compression = o.compression;
  o.bottommost_compression_opts = o.compression_opts;
  const rocksdb::BlockBasedTableOptions* t =
      o.table_factory->GetOptions<rocksdb::BlockBasedTableOptions>();
  if (t != nullptr && t->filter_policy != nullptr && bloom_bits > 0) {
    rocksdb::BlockBasedTableOptions bloom = *t;
    bloom.filter_policy.reset(rocksdb::NewBloomFilterPolicy(bloom_bits));
    o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(bloom));
  }
  return o;
}

extern "C" hx_sst* hx_sst_open(rocksdb_options_t* opts, const char* path,
                               bool bottom, bool fast_zstd, double bloom_bits,
                               char** err) {
  hx_sst* f =
      new hx_sst(file_options(opts->rep, bottom, fast_zstd, bloom_bits));
  rocksdb::Status s = f->w.Open(path);
  if (!s.ok()) {
    *err = status_message(s);
    delete f;
    return nullptr;
  }
  return f;
}

extern "C" char* hx_sst_add(hx_sst* f, const char* recs, size_t len,
                            int max_records, size_t* used) {
  const char* p = recs;
  const char* end = recs + len;
  rocksdb::Status s;
  *used = 0;
  for (int n = 0; s.ok() && p < end && n < max_records; n++) {
    char tag = *p++;
    rocksdb::Slice k, v;
    if (!read_slice(&p, end, &k) ||
        (tag != kTagDeletion && !read_slice(&p, end, &v))) {
      return strdup("malformed batch representation");
    }
    switch (tag) {
      case kTagValue:
        s = f->w.Put(k, v);
        break;
      case kTagDeletion:
        s = f->w.Delete(k);
        break;
      case kTagRangeDeletion:
        s = f->w.DeleteRange(k, v);
        break;
      default:
        return strdup("unexpected record tag in batch representation");
    }
    *used = size_t(p - recs);
  }
  return s.ok() ? nullptr : status_message(s);
}

extern "C" char* hx_sst_finish(hx_sst* f) {
  rocksdb::Status s = f->w.Finish();
  return s.ok() ? nullptr : status_message(s);
}

extern "C" void hx_sst_destroy(hx_sst* f) { delete f; }

extern "C" char* hx_ingest_files(rocksdb_t* db,
                                 rocksdb_column_family_handle_t** cfs,
                                 const int* counts, const char** paths,
                                 int n) {
  std::vector<rocksdb::IngestExternalFileArg> args(n);
  for (int i = 0; i < n; i++) {
    args[i].column_family = cfs[i]->rep;
    for (int j = 0; j < counts[i]; j++) {
      args[i].external_files.emplace_back(*paths++);
    }
    rocksdb::IngestExternalFileOptions& o = args[i].options;
    o.move_files = true;            // hard-link the files in: no copy
    o.allow_global_seqno = true;    // newer than every write before them
    o.allow_blocking_flush = true;  // a memtable holding their keys is flushed first
  }
  rocksdb::Status s = db->rep->IngestExternalFiles(args);
  return s.ok() ? nullptr : status_message(s);
}
