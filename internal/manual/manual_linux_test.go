package manual

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"
)

// TestNewAdvisesHugePages: a region of 2 MiB or more starts on a 2 MiB
// boundary and is eligible for transparent huge pages (THPeligible: 1 in
// /proc/self/smaps) but for its last, partial 2 MiB; a smaller region is
// left alone (checked where THP is "madvise"); unless the system has huge
// pages turned off.
func TestNewAdvisesHugePages(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(mode), "[never]") {
		t.Skipf("transparent huge pages unavailable here (%q, %v)", mode, err)
	}
	big, small := New(5<<20+12345), New(64<<10)
	defer big.Free()
	defer small.Free()
	at := func(r *Region, off int) uintptr { return uintptr(unsafe.Pointer(&r.Bytes()[off])) }
	if a := at(&big, 0); a%hugePage != 0 {
		t.Fatalf("a %d-byte region starts at %x, not on a 2 MiB boundary", len(big.Bytes()), a)
	}
	madviseMode := strings.Contains(string(mode), "[madvise]")
	for _, c := range []struct {
		name        string
		addr        uintptr
		want        string
		madviseOnly bool // with "always", a small mapping merged into a large neighbour is eligible
	}{
		{"a 5 MiB region's first 2 MiB", at(&big, 0), "1", false},
		{"its second 2 MiB", at(&big, 3<<20), "1", false},
		{"its partial last 2 MiB", at(&big, 5<<20), "0", false},
		{"a 64 KiB region", at(&small, 0), "0", true},
	} {
		if c.madviseOnly && !madviseMode {
			continue
		}
		got, err := thpEligible(c.addr)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Fatalf("%s: THPeligible %s, want %s", c.name, got, c.want)
		}
	}
}

// thpEligible returns the THPeligible field of the mapping holding addr in
// /proc/self/smaps (the kernel may have merged the region's mapping with a
// neighbour of the same kind).
func thpEligible(addr uintptr) (string, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return "", err
	}
	defer f.Close()
	in := false
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 {
			in = lo <= addr && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "THPeligible:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "THPeligible:")), nil
		}
	}
	return "", fmt.Errorf("no mapping holds %x in /proc/self/smaps", addr)
}
