package rocks_test

import (
	"testing"

	"github.com/hexstate/hexstate/rocks"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/trie/backendtest"
)

// TestBackendConformance runs the trie.Backend conformance suite on the
// RocksDB store, including durability across Close and reopen: with the
// default write paths, and with every batch that can be written as ingested
// SST files written that way (Options.IngestBytes 1).
func TestBackendConformance(t *testing.T) {
	for _, c := range []struct {
		name   string
		ingest int64
	}{{"default", 0}, {"ingested", 1}} {
		t.Run(c.name, func(t *testing.T) {
			backendtest.RunDurable(t, func(t *testing.T, dir string) trie.Backend {
				s, err := rocks.Open(dir, &rocks.Options{BlockCacheBytes: 8 << 20, WriteBufferBytes: 1 << 20, BackgroundJobs: 2, IngestBytes: c.ingest})
				if err != nil {
					t.Fatalf("rocks.Open(%s): %v", dir, err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			})
		})
	}
}
