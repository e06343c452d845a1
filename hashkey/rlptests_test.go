package hashkey_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"testing"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/internal/ethtests"
)

// rlpCase is one case of RLPTests/rlptest.json or invalidRLPTest.json. In is kept
// raw and decoded with UseNumber so integers beyond 2^53 survive.
type rlpCase struct {
	In  json.RawMessage `json:"in"`
	Out string          `json:"out"`
}

func loadRLPCases(t *testing.T, file string) (map[string]rlpCase, []string) {
	t.Helper()
	var cases map[string]rlpCase
	ethtests.LoadJSON(t, &cases, "RLPTests", file)
	if len(cases) == 0 {
		t.Fatalf("RLPTests/%s: no cases", file)
	}
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	return cases, names
}

// decodeIn parses a case's "in": a string, a "#decimal" big integer, a JSON
// integer, or a list of those.
func decodeIn(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// encodeIn encodes an "in" value with the hashkey encoder.
func encodeIn(dst []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case string:
		if strings.HasPrefix(v, "#") {
			n, ok := new(big.Int).SetString(v[1:], 10)
			if !ok || n.Sign() < 0 {
				return nil, fmt.Errorf("bad big integer %q", v)
			}
			return appendBig(dst, n), nil
		}
		s := []byte(v)
		out := hashkey.AppendString(dst, s)
		if got := len(out) - len(dst); got != hashkey.StringSize(s) {
			return nil, fmt.Errorf("StringSize(%d-byte string) = %d, AppendString wrote %d bytes", len(s), hashkey.StringSize(s), got)
		}
		return out, nil
	case json.Number:
		n, ok := new(big.Int).SetString(v.String(), 10)
		if !ok || n.Sign() < 0 {
			return nil, fmt.Errorf("bad integer %s", v)
		}
		if n.IsUint64() {
			u := n.Uint64()
			out := hashkey.AppendUint64(dst, u)
			if got := len(out) - len(dst); got != hashkey.Uint64Size(u) {
				return nil, fmt.Errorf("Uint64Size(%d) = %d, AppendUint64 wrote %d bytes", u, hashkey.Uint64Size(u), got)
			}
			if want := appendBig(nil, n); !bytes.Equal(out[len(dst):], want) {
				return nil, fmt.Errorf("AppendUint64(%d) = %x, want %x", u, out[len(dst):], want)
			}
			return out, nil
		}
		return appendBig(dst, n), nil
	case []any:
		var payload []byte
		for i, item := range v {
			var err error
			if payload, err = encodeIn(payload, item); err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
		}
		out := hashkey.AppendListHeader(dst, len(payload))
		out = append(out, payload...)
		if got := len(out) - len(dst); got != hashkey.ListSize(len(payload)) {
			return nil, fmt.Errorf("ListSize(%d) = %d, list took %d bytes", len(payload), hashkey.ListSize(len(payload)), got)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("unsupported input %T %v", v, v)
	}
}

// appendBig encodes n as an RLP string of its minimal big-endian bytes (zero is
// the empty string).
func appendBig(dst []byte, n *big.Int) []byte { return hashkey.AppendString(dst, n.Bytes()) }

// rlpItem is a fully decoded RLP item: a string (list == nil, isList false) or a list.
type rlpItem struct {
	isList bool
	str    []byte
	list   []rlpItem
}

// decodeAll decodes b as exactly one item, recursively, with hashkey.Split: every
// list's payload must be consumed by its items, and nothing may follow the item.
func decodeAll(b []byte) (rlpItem, error) {
	it, rest, err := decodeOne(b, 0)
	if err != nil {
		return it, err
	}
	if len(rest) != 0 {
		return it, fmt.Errorf("%d trailing bytes after the top-level item", len(rest))
	}
	return it, nil
}

func decodeOne(b []byte, depth int) (rlpItem, []byte, error) {
	if depth > 1000 {
		return rlpItem{}, nil, fmt.Errorf("nesting too deep")
	}
	k, content, rest, err := hashkey.Split(b)
	if err != nil {
		return rlpItem{}, nil, err
	}
	// SplitString/SplitList must agree with Split.
	if k == hashkey.String {
		c2, r2, err2 := hashkey.SplitString(b)
		if err2 != nil || !bytes.Equal(c2, content) || len(r2) != len(rest) {
			return rlpItem{}, nil, fmt.Errorf("SplitString disagrees with Split: %x, %d rest, %v", c2, len(r2), err2)
		}
		if _, _, err := hashkey.SplitList(b); err == nil {
			return rlpItem{}, nil, fmt.Errorf("SplitList accepted a string")
		}
		return rlpItem{str: content}, rest, nil
	}
	c2, r2, err2 := hashkey.SplitList(b)
	if err2 != nil || !bytes.Equal(c2, content) || len(r2) != len(rest) {
		return rlpItem{}, nil, fmt.Errorf("SplitList disagrees with Split: %x, %d rest, %v", c2, len(r2), err2)
	}
	if _, _, err := hashkey.SplitString(b); err == nil {
		return rlpItem{}, nil, fmt.Errorf("SplitString accepted a list")
	}
	it := rlpItem{isList: true, list: []rlpItem{}}
	for len(content) > 0 {
		var child rlpItem
		child, content, err = decodeOne(content, depth+1)
		if err != nil {
			return rlpItem{}, nil, fmt.Errorf("list item %d: %w", len(it.list), err)
		}
		it.list = append(it.list, child)
	}
	n, err := hashkey.CountItems(c2)
	if err != nil || n != len(it.list) {
		return rlpItem{}, nil, fmt.Errorf("CountItems = %d, %v; decoded %d items", n, err, len(it.list))
	}
	return it, rest, nil
}

// encodeItem re-encodes a decoded item with the hashkey encoder.
func encodeItem(dst []byte, it rlpItem) []byte {
	if !it.isList {
		return hashkey.AppendString(dst, it.str)
	}
	var payload []byte
	for _, c := range it.list {
		payload = encodeItem(payload, c)
	}
	return append(hashkey.AppendListHeader(dst, len(payload)), payload...)
}

// matchIn reports how a decoded item differs from the case's "in", or nil.
func matchIn(it rlpItem, in any) error {
	var want []byte
	switch v := in.(type) {
	case []any:
		if !it.isList {
			return fmt.Errorf("decoded a string %x, want a list of %d", it.str, len(v))
		}
		if len(it.list) != len(v) {
			return fmt.Errorf("decoded a list of %d items, want %d", len(it.list), len(v))
		}
		for i := range v {
			if err := matchIn(it.list[i], v[i]); err != nil {
				return fmt.Errorf("item %d: %w", i, err)
			}
		}
		return nil
	case string:
		if strings.HasPrefix(v, "#") {
			n, _ := new(big.Int).SetString(v[1:], 10)
			want = n.Bytes()
		} else {
			want = []byte(v)
		}
	case json.Number:
		n, _ := new(big.Int).SetString(v.String(), 10)
		want = n.Bytes()
	}
	if it.isList {
		return fmt.Errorf("decoded a list, want string %x", want)
	}
	if !bytes.Equal(it.str, want) {
		return fmt.Errorf("decoded string %x, want %x", it.str, want)
	}
	return nil
}

// TestRLPTestsValid checks every case of RLPTests/rlptest.json: the hashkey
// encoder must produce "out" from "in", and a strict recursive decode of "out"
// must give back "in" and re-encode to "out".
func TestRLPTestsValid(t *testing.T) {
	cases, names := loadRLPCases(t, "rlptest.json")
	for _, name := range names {
		c := cases[name]
		t.Run(name, func(t *testing.T) {
			want, err := ethtests.Hex(c.Out)
			if err != nil {
				t.Fatalf("rlptest.json %s: bad out: %v", name, err)
			}
			in, err := decodeIn(c.In)
			if err != nil {
				t.Fatalf("rlptest.json %s: bad in: %v", name, err)
			}
			got, err := encodeIn(nil, in)
			if err != nil {
				t.Errorf("rlptest.json %s: encode: %v", name, err)
			} else if !bytes.Equal(got, want) {
				t.Errorf("rlptest.json %s: encoding mismatch\n in:   %.200s\n got:  %x\n want: %x", name, c.In, got, want)
			}
			it, err := decodeAll(want)
			if err != nil {
				t.Fatalf("rlptest.json %s: decoding %x: %v", name, want, err)
			}
			if err := matchIn(it, in); err != nil {
				t.Errorf("rlptest.json %s: decoded value differs from in: %v", name, err)
			}
			if re := encodeItem(nil, it); !bytes.Equal(re, want) {
				t.Errorf("rlptest.json %s: decode/re-encode round trip\n got:  %x\n want: %x", name, re, want)
			}
		})
	}
}

// TestRLPTestsInvalid checks that a full strict decode rejects every case of
// RLPTests/invalidRLPTest.json.
func TestRLPTestsInvalid(t *testing.T) {
	cases, names := loadRLPCases(t, "invalidRLPTest.json")
	for _, name := range names {
		c := cases[name]
		t.Run(name, func(t *testing.T) {
			b, err := ethtests.Hex(c.Out)
			if err != nil {
				t.Fatalf("invalidRLPTest.json %s: bad out: %v", name, err)
			}
			if it, err := decodeAll(b); err == nil {
				t.Errorf("invalidRLPTest.json %s: decoding %x succeeded (list=%v, string %x, %d items), want an error", name, b, it.isList, it.str, len(it.list))
			} else {
				t.Logf("rejected: %v", err)
			}
		})
	}
}

// TestRLPSplitErrorsWrapErrRLP checks that Split's errors on the invalid vectors
// wrap hashkey.ErrRLP, as its contract says.
func TestRLPSplitErrorsWrapErrRLP(t *testing.T) {
	cases, names := loadRLPCases(t, "invalidRLPTest.json")
	for _, name := range names {
		b, err := ethtests.Hex(cases[name].Out)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, _, _, err := hashkey.Split(b); err != nil && !errors.Is(err, hashkey.ErrRLP) {
			t.Errorf("invalidRLPTest.json %s: Split error %q does not wrap hashkey.ErrRLP", name, err)
		}
	}
}
