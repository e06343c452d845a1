package rocks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hexstate/hexstate/vertex"
)

// TestLowPriorityBackground: with Options.LowPriorityBackground, RocksDB's
// background threads run at nice 19 once they have done a job (here a
// flush). The thread pools are process-wide, so this test only checks the
// threads are lowered, not that others are not.
func TestLowPriorityBackground(t *testing.T) {
	o := testOptions()
	o.LowPriorityBackground = true
	s := mustOpen(t, t.TempDir(), o)
	for i := 0; i < 3; i++ {
		mustWrite(t, s, &vertex.Batch{Puts: []vertex.Record{{ID: vertex.ID(i + 1), Rec: []byte("record")}}})
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	tasks, err := filepath.Glob("/proc/self/task/*")
	if err != nil || len(tasks) == 0 {
		t.Skipf("no /proc/self/task here (%v): cannot read thread priorities", err)
	}
	lowered, others := 0, 0
	for _, task := range tasks {
		comm, err1 := os.ReadFile(filepath.Join(task, "comm"))
		stat, err2 := os.ReadFile(filepath.Join(task, "stat"))
		if err1 != nil || err2 != nil || !strings.HasPrefix(string(comm), "rocksdb:") {
			continue
		}
		// Fields after the command's closing parenthesis: state is field 3;
		// nice is field 19.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) > 16 && f[16] == "19" {
			lowered++
		} else {
			others++
		}
	}
	if lowered == 0 {
		t.Fatalf("no RocksDB background thread at nice 19 (%d others)", others)
	}
}
