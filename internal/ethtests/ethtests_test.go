package ethtests

import (
	"bytes"
	"testing"
)

func TestBytes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []byte
	}{
		{"", []byte{}},
		{"0x", []byte{}},
		{"0x00ff", []byte{0, 0xff}},
		{"dog", []byte("dog")},
		{"00ff", []byte("00ff")},
	} {
		got, err := Bytes(c.in)
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("Bytes(%q) = %x, %v; want %x", c.in, got, err, c.want)
		}
	}
	if _, err := Bytes("0xabc"); err == nil {
		t.Error("Bytes(0xabc): want an error for odd-length hex")
	}
}

func TestQuantity(t *testing.T) {
	for in, want := range map[string]int64{"": 0, "0x": 0, "0x00": 0, "0x0": 0, "0x01": 1, "0x0100": 256, "0xabc": 0xabc} {
		got, err := Quantity(in)
		if err != nil || got.Int64() != want {
			t.Errorf("Quantity(%q) = %v, %v; want %d", in, got, err, want)
		}
	}
}

func TestLocateEnv(t *testing.T) {
	t.Setenv(EnvVar, t.TempDir())
	if _, err := Locate(); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvVar, "/nonexistent/ethtests")
	if _, err := Locate(); err == nil {
		t.Fatal("want an error for a missing $" + EnvVar)
	}
}

// TestStateRootsFile reads the whole stateroots file and checks it decodes.
func TestStateRootsFile(t *testing.T) {
	n := 0
	EachState(t, func(i int, s *State) error {
		if _, err := s.Decode(); err != nil {
			t.Errorf("state %d: %v", i, err)
		}
		n++
		return nil
	})
	if n != StateRootsCount {
		t.Errorf("read %d states, want %d", n, StateRootsCount)
	}
}
