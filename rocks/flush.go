package rocks

import (
	"fmt"
	"time"

	"github.com/linxGnu/grocksdb"
)

// flushWaitMax bounds the wait between two looks at a flush in progress.
const flushWaitMax = 100 * time.Millisecond

// flushCFs flushes both column families and waits until their immutable
// memtables are written.
//
// It does not let RocksDB wait (FlushOptions.wait): with
// min_write_buffer_number_to_merge above 1 (WriteBuffersToMerge) RocksDB 7.x
// can leave a manual flush waiting forever for memtables that the flush job
// it scheduled did not pick (facebook/rocksdb#13280, #12094, #12166; seen
// here as Close and Compact hanging in WaitForFlushMemTables with the
// background threads idle). Instead it requests the flush without waiting and
// looks at the column family's immutable memtables, requesting it again while
// any are left: each request marks them for flushing, so a memtable an
// earlier flush job passed over is picked by a later one.
func (s *Store) flushCFs() error {
	fo := grocksdb.NewDefaultFlushOptions()
	defer fo.Destroy()
	fo.SetWait(false)
	for _, cf := range s.handles() {
		wait := time.Millisecond
		for {
			if err := s.db.FlushCF(cf, fo); err != nil {
				return fmt.Errorf("rocks: flush %q: %w", cf.Name(), err)
			}
			if s.db.GetPropertyCF("rocksdb.num-immutable-mem-table", cf) == "0" {
				break
			}
			time.Sleep(wait)
			wait = min(2*wait, flushWaitMax)
		}
	}
	return nil
}
