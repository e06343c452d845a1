package ethtests

import (
	"bufio"
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// EnvVar names the environment variable that points at a copy of the vectors.
const EnvVar = "HEXSTATE_ETHTESTS"

// module is the module path whose go.mod marks the repository root.
const module = "github.com/hexstate/hexstate"

// relDir is where the vectors live relative to the repository root.
var relDir = filepath.Join("..", "shared", "testdata", "ethereum-tests")

// SkipMessage is what a test logs when it skips for want of the vectors.
const SkipMessage = "ethereum/tests vectors not found: clone https://github.com/ethereum/tests " +
	"and set " + EnvVar + "=/path/to/tests (expects TrieTests/, RLPTests/, and stateroots/stateroots.jsonl.gz)"

// Dir returns the directory holding the vectors, or skips tb when there is none.
func Dir(tb testing.TB) string {
	tb.Helper()
	d, err := Locate()
	if err != nil {
		tb.Skipf("%s (%v)", SkipMessage, err)
	}
	return d
}

// Locate finds the vectors directory without a testing.TB: $HEXSTATE_ETHTESTS when
// set, else <repo root>/../shared/testdata/ethereum-tests, the repo root being the
// nearest ancestor of the working directory whose go.mod declares module
// github.com/hexstate/hexstate.
func Locate() (string, error) {
	if d := os.Getenv(EnvVar); d != "" {
		if !isDir(d) {
			return "", fmt.Errorf("$%s=%q is not a directory", EnvVar, d)
		}
		return d, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; {
		if isModuleRoot(dir) {
			d := filepath.Join(dir, relDir)
			if !isDir(d) {
				return "", fmt.Errorf("%s does not exist", d)
			}
			return d, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s above %s", module, wd)
		}
		dir = parent
	}
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func isModuleRoot(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "module" && strings.Trim(f[1], `"`) == module {
			return true
		}
	}
	return false
}

// Path returns the path of a file under the vectors directory (e.g.
// Path(t, "TrieTests", "trietest.json")), skipping tb when the directory is
// missing and failing it when the directory exists but the file does not.
func Path(tb testing.TB, elem ...string) string {
	tb.Helper()
	p := filepath.Join(append([]string{Dir(tb)}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("ethereum/tests vector file missing: %v", err)
	}
	return p
}

// LoadJSON decodes the JSON file at Path(tb, elem...) into v.
func LoadJSON(tb testing.TB, v any, elem ...string) {
	tb.Helper()
	p := Path(tb, elem...)
	b, err := os.ReadFile(p)
	if err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		tb.Fatalf("%s: %v", p, err)
	}
}

// Bytes decodes a string under the ethereum/tests "0x hex or ASCII" convention: a
// string starting with 0x is hex (odd-length hex is an error), anything else is
// its own bytes.
func Bytes(s string) ([]byte, error) {
	if strings.HasPrefix(s, "0x") {
		b, err := hex.DecodeString(s[2:])
		if err != nil {
			return nil, fmt.Errorf("hex string %q: %w", s, err)
		}
		return b, nil
	}
	return []byte(s), nil
}

// Hex decodes hex with or without a 0x/0X prefix (RLPTests' "out" fields use both).
func Hex(s string) ([]byte, error) {
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		s = s[2:]
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("hex string %q: %w", s, err)
	}
	return b, nil
}

// Quantity decodes a hex quantity ("0x1f", "0x001f", "0x" and "" are all fine;
// leading zeros and odd lengths are allowed).
func Quantity(s string) (*big.Int, error) {
	h := strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	if h == "" {
		return new(big.Int), nil
	}
	v, ok := new(big.Int).SetString(h, 16)
	if !ok || v.Sign() < 0 {
		return nil, fmt.Errorf("bad hex quantity %q", s)
	}
	return v, nil
}

// State is one line of stateroots/stateroots.jsonl.gz as written, every quantity
// still a hex string; absent fields are empty. Decode turns it into typed form.
type State struct {
	Name  string                  `json:"name"`
	Root  string                  `json:"root"`
	Alloc map[string]StateAccount `json:"alloc"`
}

// StateAccount is one account of a State as written.
type StateAccount struct {
	Balance string            `json:"balance"`
	Nonce   string            `json:"nonce"`
	Code    string            `json:"code"`
	Storage map[string]string `json:"storage"`
}

// Account is a decoded account: absent fields are zero or empty. Storage holds
// every slot as written, zero values included (they are not in the trie).
type Account struct {
	Address [20]byte
	Nonce   *big.Int
	Balance *big.Int
	Code    []byte
	Storage []Slot
}

// Slot is one decoded storage entry; Key is the slot as 32-byte big-endian.
type Slot struct {
	Key   [32]byte
	Value *big.Int
}

// Decoded is a decoded State; Accounts come in no particular order.
type Decoded struct {
	Name     string
	Root     [32]byte
	Accounts []Account
}

// Decode checks and converts s.
func (s *State) Decode() (*Decoded, error) {
	d := &Decoded{Name: s.Name}
	r, err := Hex(s.Root)
	if err != nil || len(r) != 32 {
		return nil, fmt.Errorf("%s: bad root %q", s.Name, s.Root)
	}
	copy(d.Root[:], r)
	for addr, a := range s.Alloc {
		var acc Account
		ab, err := Hex(addr)
		if err != nil || len(ab) != 20 {
			return nil, fmt.Errorf("%s: bad address %q", s.Name, addr)
		}
		copy(acc.Address[:], ab)
		if acc.Nonce, err = Quantity(a.Nonce); err != nil {
			return nil, fmt.Errorf("%s: %s nonce: %w", s.Name, addr, err)
		}
		if acc.Balance, err = Quantity(a.Balance); err != nil {
			return nil, fmt.Errorf("%s: %s balance: %w", s.Name, addr, err)
		}
		if a.Code != "" {
			if acc.Code, err = Hex(a.Code); err != nil {
				return nil, fmt.Errorf("%s: %s code: %w", s.Name, addr, err)
			}
		}
		for k, v := range a.Storage {
			var sl Slot
			kv, err := Quantity(k)
			if err != nil || kv.BitLen() > 256 {
				return nil, fmt.Errorf("%s: %s: bad storage slot %q", s.Name, addr, k)
			}
			kv.FillBytes(sl.Key[:])
			if sl.Value, err = Quantity(v); err != nil || sl.Value.BitLen() > 256 {
				return nil, fmt.Errorf("%s: %s: bad storage value %q for slot %q", s.Name, addr, v, k)
			}
			acc.Storage = append(acc.Storage, sl)
		}
		d.Accounts = append(d.Accounts, acc)
	}
	return d, nil
}

// StateRootsCount is how many states stateroots.jsonl.gz holds.
const StateRootsCount = 13244

// StateRootsPath returns the path of stateroots/stateroots.jsonl.gz (see Path).
func StateRootsPath(tb testing.TB) string {
	tb.Helper()
	return Path(tb, "stateroots", "stateroots.jsonl.gz")
}

// ErrStop may be returned by a ReadStates callback to end the walk early without error.
var ErrStop = errors.New("stop")

// ReadStates streams the gzip-compressed JSON-lines file r, calling fn with each
// state's 0-based index. An error from fn ends the walk and is returned (ErrStop
// ends it with nil).
func ReadStates(r io.Reader, fn func(i int, s *State) error) error {
	zr, err := gzip.NewReader(bufio.NewReaderSize(r, 1<<16))
	if err != nil {
		return err
	}
	defer zr.Close()
	dec := json.NewDecoder(zr)
	for i := 0; ; i++ {
		var s State
		if err := dec.Decode(&s); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("state %d: %w", i, err)
		}
		if err := fn(i, &s); err != nil {
			if err == ErrStop {
				return nil
			}
			return err
		}
	}
}

// EachState streams stateroots.jsonl.gz (skipping tb when the vectors are absent)
// and calls fn for every state; a read or decode error fails tb.
func EachState(tb testing.TB, fn func(i int, s *State) error) {
	tb.Helper()
	p := StateRootsPath(tb)
	f, err := os.Open(p)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if err := ReadStates(f, fn); err != nil {
		tb.Fatalf("%s: %v", p, err)
	}
}
