package rocks

import "testing"

// TestLimitMallocArenas: a limit below one is refused; on glibc (the
// machines this is built on) a limit is set, and stores work after it.
func TestLimitMallocArenas(t *testing.T) {
	if err := LimitMallocArenas(0); err == nil {
		t.Fatal("a limit of 0 arenas was accepted")
	}
	if err := LimitMallocArenas(8); err != nil {
		t.Fatalf("LimitMallocArenas(8): %v", err)
	}
	s, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
