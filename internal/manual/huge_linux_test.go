package manual

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"
)

// TestNewAdvisesHugePages: a region of 2 MiB or more is eligible for
// transparent huge pages (its mapping says THPeligible: 1 in
// /proc/self/smaps) and a smaller one is left alone, unless the system has
// huge pages turned off.
func TestNewAdvisesHugePages(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(mode), "[never]") {
		t.Skipf("transparent huge pages unavailable here (%q, %v)", mode, err)
	}
	big, small := New(4<<20), New(64<<10)
	defer big.Free()
	defer small.Free()
	for _, c := range []struct {
		r    *Region
		want string
	}{{&big, "1"}, {&small, "0"}} {
		got, err := thpEligible(uintptr(unsafe.Pointer(&c.r.Bytes()[0])))
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Fatalf("a %d-byte region: THPeligible %s, want %s", len(c.r.Bytes()), got, c.want)
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
