// SST files for ingestion, written and ingested in one C call each: RocksDB's
// C API (7.8) has one call per key for SstFileWriter and only the
// one-column-family IngestExternalFile, so these call the C++ API on the C
// handles' objects. See ingest.go.

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <rocksdb/c.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/options.h>
#include <rocksdb/sst_file_writer.h>

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

// The record tags of a write batch's representation that hx_write_sst
// reads (default column family; RocksDB's db/dbformat.h).
enum : char { kTagDeletion = 0x0, kTagValue = 0x1, kTagRangeDeletion = 0xF };
static const size_t kBatchHeader = 12;  // sequence number and count

extern "C" char* hx_write_sst(rocksdb_options_t* opts, const char* path,
                              const char* rep, size_t len) {
  if (len < kBatchHeader) {
    return strdup("short batch representation");
  }
  rocksdb::SstFileWriter w(rocksdb::EnvOptions(), opts->rep);
  rocksdb::Status s = w.Open(path);
  const char* p = rep + kBatchHeader;
  const char* end = rep + len;
  while (s.ok() && p < end) {
    char tag = *p++;
    rocksdb::Slice k, v;
    if (!read_slice(&p, end, &k) ||
        (tag != kTagDeletion && !read_slice(&p, end, &v))) {
      return strdup("malformed batch representation");
    }
    switch (tag) {
      case kTagValue:
        s = w.Put(k, v);
        break;
      case kTagDeletion:
        s = w.Delete(k);
        break;
      case kTagRangeDeletion:
        s = w.DeleteRange(k, v);
        break;
      default:
        return strdup("unexpected record tag in batch representation");
    }
  }
  if (s.ok()) {
    s = w.Finish();
  }
  return s.ok() ? nullptr : status_message(s);
}

extern "C" char* hx_ingest_files(rocksdb_t* db,
                                 rocksdb_column_family_handle_t** cfs,
                                 const char** paths, int n) {
  std::vector<rocksdb::IngestExternalFileArg> args(n);
  for (int i = 0; i < n; i++) {
    args[i].column_family = cfs[i]->rep;
    args[i].external_files.emplace_back(paths[i]);
    rocksdb::IngestExternalFileOptions& o = args[i].options;
    o.move_files = true;            // hard-link the file in: no copy
    o.allow_global_seqno = true;    // newer than every write before it
    o.allow_blocking_flush = true;  // a memtable holding its keys is flushed first
  }
  rocksdb::Status s = db->rep->IngestExternalFiles(args);
  return s.ok() ? nullptr : status_message(s);
}
