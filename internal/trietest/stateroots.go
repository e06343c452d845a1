package trietest

// The go-ethereum state-root fixtures (from trie/stateroots_test.go), run on the stores given.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/holiman/uint256"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/internal/ethtests"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// This file reproduces the state roots of stateroots/stateroots.jsonl.gz (13,244
// world states from ethereum/tests BlockchainTests, see internal/ethtests) through
// the state API, on the memory and RocksDB backends, in both vertex formats.

// stateInput is one state, hashed and converted for the state API.
type stateInput struct {
	index    int
	name     string
	root     hashkey.Hash
	accounts []accountInput // sorted by address
	slots    int            // non-zero storage slots in all accounts
}

type accountInput struct {
	addr     [20]byte
	addrHash hashkey.Hash
	acc      trie.Account
	storage  []slotInput // non-zero values only, sorted by slot
}

type slotInput struct {
	slot     [32]byte
	slotHash hashkey.Hash
	value    uint256.Int
}

func (s *stateInput) String() string {
	return fmt.Sprintf("state #%d %q (%d accounts, %d slots)", s.index, s.name, len(s.accounts), s.slots)
}

// convertState checks and converts one decoded state.
func convertState(i int, d *ethtests.Decoded) (*stateInput, error) {
	s := &stateInput{index: i, name: d.Name, root: d.Root}
	for _, a := range d.Accounts {
		if !a.Nonce.IsUint64() {
			return nil, fmt.Errorf("%s: account %x: nonce %v exceeds uint64", d.Name, a.Address, a.Nonce)
		}
		ai := accountInput{addr: a.Address, addrHash: hashkey.Keccak256(a.Address[:])}
		ai.acc.Nonce = a.Nonce.Uint64()
		if ai.acc.Balance.SetFromBig(a.Balance) {
			return nil, fmt.Errorf("%s: account %x: balance %v exceeds 256 bits", d.Name, a.Address, a.Balance)
		}
		ai.acc.CodeHash = hashkey.Keccak256(a.Code)
		for _, sl := range a.Storage {
			if sl.Value.Sign() == 0 {
				continue // zero slots are not in the trie
			}
			si := slotInput{slot: sl.Key, slotHash: hashkey.Keccak256(sl.Key[:])}
			if si.value.SetFromBig(sl.Value) {
				return nil, fmt.Errorf("%s: account %x slot %x: value exceeds 256 bits", d.Name, a.Address, sl.Key)
			}
			ai.storage = append(ai.storage, si)
		}
		sort.Slice(ai.storage, func(x, y int) bool { return bytes.Compare(ai.storage[x].slot[:], ai.storage[y].slot[:]) < 0 })
		s.slots += len(ai.storage)
		s.accounts = append(s.accounts, ai)
	}
	sort.Slice(s.accounts, func(x, y int) bool { return bytes.Compare(s.accounts[x].addr[:], s.accounts[y].addr[:]) < 0 })
	return s, nil
}

// loadStates reads every state whose index is selected by keep.
func loadStates(t *testing.T, keep func(i int) bool) []*stateInput {
	t.Helper()
	var states []*stateInput
	total := 0
	ethtests.EachState(t, func(i int, s *ethtests.State) error {
		total++
		if !keep(i) {
			return nil
		}
		d, err := s.Decode()
		if err != nil {
			return err
		}
		in, err := convertState(i, d)
		if err != nil {
			return err
		}
		states = append(states, in)
		return nil
	})
	if total != ethtests.StateRootsCount {
		t.Fatalf("stateroots.jsonl.gz holds %d states, want %d", total, ethtests.StateRootsCount)
	}
	return states
}

// stateSampleStep is 1 (every state) normally and 10 under -short or -race;
// HEXSTATE_STATEROOTS_ALL=1 forces every state.
func stateSampleStep(t *testing.T) int {
	if os.Getenv("HEXSTATE_STATEROOTS_ALL") == "1" {
		return 1
	}
	if testing.Short() || ethtests.RaceEnabled {
		t.Logf("sampling every 10th state (testing.Short()=%v, race=%v); set HEXSTATE_STATEROOTS_ALL=1 for all %d",
			testing.Short(), ethtests.RaceEnabled, ethtests.StateRootsCount)
		return 10
	}
	return 1
}

// applyState writes every account and non-zero slot of s into fr.
func applyState(fr *trie.Frame, s *stateInput) error {
	for i := range s.accounts {
		a := &s.accounts[i]
		if err := fr.UpdateAccount(a.addrHash, a.acc); err != nil {
			return fmt.Errorf("UpdateAccount(%x = keccak(%x)): %w", a.addrHash, a.addr, err)
		}
		for j := range a.storage {
			sl := &a.storage[j]
			if err := fr.UpdateStorage(a.addrHash, sl.slotHash, &sl.value); err != nil {
				return fmt.Errorf("UpdateStorage(account %x, slot %x = keccak(%x), %v): %w", a.addr, sl.slotHash, sl.slot, &sl.value, err)
			}
		}
	}
	return nil
}

// applyTransition turns state from (already in fr) into state to: slots and
// accounts of from that to lacks are zeroed and deleted, everything of to written.
func applyTransition(fr *trie.Frame, from, to *stateInput) error {
	toAcc := map[[20]byte]*accountInput{}
	for i := range to.accounts {
		toAcc[to.accounts[i].addr] = &to.accounts[i]
	}
	var zero uint256.Int
	for i := range from.accounts {
		a := &from.accounts[i]
		b := toAcc[a.addr]
		keep := map[[32]byte]bool{}
		if b != nil {
			for _, sl := range b.storage {
				keep[sl.slot] = true
			}
		}
		for _, sl := range a.storage {
			if !keep[sl.slot] {
				if err := fr.UpdateStorage(a.addrHash, sl.slotHash, &zero); err != nil {
					return fmt.Errorf("UpdateStorage(account %x, slot %x, 0): %w", a.addr, sl.slot, err)
				}
			}
		}
		if b == nil {
			if err := fr.DeleteAccount(a.addrHash); err != nil {
				return fmt.Errorf("DeleteAccount(%x): %w", a.addr, err)
			}
		}
	}
	return applyState(fr, to)
}

// stateBackend is one of the backends the state test runs on.
type stateBackend struct {
	name string
	// open opens the backend stored under dir (dir is unused for memory).
	open func(t *testing.T, dir string) trie.Backend
	// reopenable backends keep their contents across Close and open.
	reopenable bool
}

// stateBackends are the backends of stores: a memory backend is new on every
// open (it is not reopenable), the others reopen their directory.
func stateBackends(stores []Opener) []stateBackend {
	var out []stateBackend
	for _, o := range stores {
		if o.Open == nil {
			out = append(out, stateBackend{name: o.Name, open: func(t *testing.T, _ string) trie.Backend { return trie.NewMemoryBackend() }})
			continue
		}
		out = append(out, stateBackend{name: o.Name, reopenable: true, open: func(t *testing.T, dir string) trie.Backend {
			t.Helper()
			return o.Open(t, dir)
		}})
	}
	return out
}

// openStateDB opens a DB of format f on b; Cleanup closes both.
func openStateDB(t *testing.T, b trie.Backend, f vertex.Format, what string) *trie.DB {
	t.Helper()
	db, err := trie.Open(b, &trie.Options{Format: f})
	if err != nil {
		b.Close()
		t.Fatalf("%s: trie.Open: %v", what, err)
	}
	t.Cleanup(func() { db.Close(); b.Close() })
	return db
}

// closeStateDB closes db and its backend, failing t on error.
func closeStateDB(t *testing.T, db *trie.DB, b trie.Backend, what string) {
	t.Helper()
	if err := db.Close(); err != nil {
		t.Errorf("%s: DB.Close: %v", what, err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("%s: Backend.Close: %v", what, err)
	}
}

// mismatches collects failing states, reporting the first few in full and the
// smallest at the end.
type mismatches struct {
	what     string
	n        int
	smallest *stateInput
	smallMsg string
}

const maxReported = 5

func (m *mismatches) add(t *testing.T, s *stateInput, msg string) {
	t.Helper()
	m.n++
	if m.n <= maxReported {
		t.Errorf("%s: %v: %s", m.what, s, msg)
	}
	if m.smallest == nil || len(s.accounts)+s.slots < len(m.smallest.accounts)+m.smallest.slots {
		m.smallest, m.smallMsg = s, msg
	}
}

func (m *mismatches) report(t *testing.T, total int) {
	t.Helper()
	if m.n == 0 {
		return
	}
	t.Errorf("%s: %d of %d states failed (first %d shown); smallest failing: %v: %s",
		m.what, m.n, total, min(m.n, maxReported), m.smallest, m.smallMsg)
}

func StateRoots(t *testing.T, stores ...Opener) {
	step := stateSampleStep(t)
	start := time.Now()
	states := loadStates(t, func(i int) bool { return i%step == 0 })
	t.Logf("loaded %d of %d states in %v", len(states), ethtests.StateRootsCount, time.Since(start).Round(time.Millisecond))

	for _, be := range stateBackends(stores) {
		t.Run(be.name, func(t *testing.T) {
			for _, f := range Formats {
				t.Run(f.String(), func(t *testing.T) {
					what := fmt.Sprintf("[%s %v]", be.name, f)
					start := time.Now()
					b := be.open(t, t.TempDir())
					db := openStateDB(t, b, f, what)
					if r, err := db.StateRoot(); err != nil || r != hashkey.EmptyRoot {
						t.Fatalf("%s: StateRoot of a new DB = %v, %v; want %v", what, r, err, hashkey.EmptyRoot)
					}
					bad := &mismatches{what: what}
					for _, s := range states {
						fr := db.Begin()
						if err := applyState(fr, s); err != nil {
							fr.Rollback()
							bad.add(t, s, err.Error())
							continue
						}
						got, err := fr.StateRoot()
						fr.Rollback()
						if err != nil {
							bad.add(t, s, "fr.StateRoot: "+err.Error())
						} else if got != s.root {
							bad.add(t, s, fmt.Sprintf("state root mismatch: got %v, want %v", got, s.root))
						}
					}
					bad.report(t, len(states))
					if r, err := db.StateRoot(); err != nil || r != hashkey.EmptyRoot {
						t.Errorf("%s: after rolling back every fr, StateRoot = %v, %v; want the empty root", what, r, err)
					}
					t.Logf("%s: %d states in %v", what, len(states), time.Since(start).Round(time.Millisecond))
				})
			}
		})
	}
}

// StateRootsPersist persists a sample of states into fresh DBs, each on top of
// the state before it in the file (often the same test's pre state), and checks
// the root before and after Persist and, for RocksDB, after reopening.
func StateRootsPersist(t *testing.T, stores ...Opener) {
	const every = 500
	keep := func(i int) bool { return i > 0 && (i%every == 0 || (i+1)%every == 0) }
	all := loadStates(t, keep)
	byIndex := map[int]*stateInput{}
	for _, s := range all {
		byIndex[s.index] = s
	}
	var pairs [][2]*stateInput
	for i := every; i < ethtests.StateRootsCount; i += every {
		pairs = append(pairs, [2]*stateInput{byIndex[i-1], byIndex[i]})
	}
	if testing.Short() || ethtests.RaceEnabled {
		t.Logf("short/race: persisting %d of %d sample pairs", (len(pairs)+3)/4, len(pairs))
		var p [][2]*stateInput
		for i := 0; i < len(pairs); i += 4 {
			p = append(p, pairs[i])
		}
		pairs = p
	}

	for _, be := range stateBackends(stores) {
		t.Run(be.name, func(t *testing.T) {
			for _, f := range Formats {
				t.Run(f.String(), func(t *testing.T) {
					bad := &mismatches{what: fmt.Sprintf("[%s %v persist]", be.name, f)}
					for _, p := range pairs {
						if msg := persistPair(t, be, f, p[0], p[1]); msg != "" {
							bad.add(t, p[1], msg)
						}
					}
					bad.report(t, len(pairs))
				})
			}
		})
	}
}

// persistPair persists from at block 1 and the transition to to at block 2 into a
// fresh DB, checking roots along the way; it returns "" or what went wrong.
func persistPair(t *testing.T, be stateBackend, f vertex.Format, from, to *stateInput) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "db")
	var msgs []string
	fail := func(format string, a ...any) { msgs = append(msgs, fmt.Sprintf(format, a...)) }
	b := be.open(t, dir)
	db, err := trie.Open(b, &trie.Options{Format: f})
	if err != nil {
		b.Close()
		return "trie.Open: " + err.Error()
	}
	defer func() { db.Close(); b.Close() }()

	fr := db.Begin()
	if err := applyState(fr, from); err != nil {
		fr.Rollback()
		return fmt.Sprintf("base %v: %v", from, err)
	}
	if err := db.Persist(fr, 1); err != nil {
		return fmt.Sprintf("base %v: Persist(block 1): %v", from, err)
	}
	if r, err := db.StateRoot(); err != nil || r != from.root {
		fail("base %v persisted at block 1: db.StateRoot = %v, %v; want %v", from, r, err, from.root)
	}

	fr = db.Begin()
	if err := applyTransition(fr, from, to); err != nil {
		fr.Rollback()
		return fmt.Sprintf("transition from %v: %v", from, err)
	}
	if r, err := fr.StateRoot(); err != nil || r != to.root {
		fail("after the transition from %v: fr.StateRoot = %v, %v; want %v", from, r, err, to.root)
	}
	if err := db.Persist(fr, 2); err != nil {
		return strings.Join(append(msgs, fmt.Sprintf("Persist(block 2): %v", err)), "; ")
	}
	if r, err := db.StateRoot(); err != nil || r != to.root {
		fail("persisted at block 2: db.StateRoot = %v, %v; want %v", r, err, to.root)
	}

	if be.reopenable {
		closeStateDB(t, db, b, "before reopening")
		b = be.open(t, dir)
		if db, err = trie.Open(b, &trie.Options{Format: f}); err != nil {
			b.Close()
			return strings.Join(append(msgs, "reopen: trie.Open: "+err.Error()), "; ")
		}
		if r, err := db.StateRoot(); err != nil || r != to.root {
			fail("after reopening: db.StateRoot = %v, %v; want %v", r, err, to.root)
		}
		fr := db.Begin()
		if r, err := fr.StateRoot(); err != nil || r != to.root {
			fail("after reopening: fresh fr.StateRoot = %v, %v; want %v", r, err, to.root)
		}
		fr.Rollback()
	}
	return strings.Join(msgs, "; ")
}

// StateRootsChain persists the states one after another into one DB per
// backend and format, each as a transition from the state before it in the file
// (block i+1 holds state i), checking the root of every transition before and
// after Persist. This drives deletes of accounts and slots and many Persists on a
// non-empty base, which TestStateRoots does not.
func StateRootsChain(t *testing.T, stores ...Opener) {
	limit := ethtests.StateRootsCount
	if (testing.Short() || ethtests.RaceEnabled) && os.Getenv("HEXSTATE_STATEROOTS_ALL") != "1" {
		limit = 1000
		t.Logf("short/race: chaining the first %d of %d states", limit, ethtests.StateRootsCount)
	}
	states := loadStates(t, func(i int) bool { return i < limit })
	for _, be := range stateBackends(stores) {
		t.Run(be.name, func(t *testing.T) {
			for _, f := range Formats {
				t.Run(f.String(), func(t *testing.T) {
					what := fmt.Sprintf("[%s %v chain]", be.name, f)
					start := time.Now()
					dir := t.TempDir()
					b := be.open(t, dir)
					db := openStateDB(t, b, f, what)
					bad := &mismatches{what: what}
					empty := &stateInput{index: -1, name: "(empty)", root: hashkey.EmptyRoot}
					prev := empty
					for _, s := range states {
						if bad.n >= 50 {
							t.Errorf("%s: stopping after %d failures", what, bad.n)
							break
						}
						block := uint64(s.index + 1)
						fr := db.Begin()
						if err := applyTransition(fr, prev, s); err != nil {
							fr.Rollback()
							bad.add(t, s, fmt.Sprintf("transition from %v: %v", prev, err))
							continue // the DB still holds prev
						}
						if r, err := fr.StateRoot(); err != nil || r != s.root {
							bad.add(t, s, fmt.Sprintf("transition from %v: fr.StateRoot = %v, %v; want %v", prev, r, err, s.root))
						}
						if err := db.Persist(fr, block); err != nil {
							bad.add(t, s, fmt.Sprintf("Persist(block %d): %v", block, err))
							t.FailNow() // the DB's state is unknown now
						}
						prev = s
						if r, err := db.StateRoot(); err != nil || r != s.root {
							bad.add(t, s, fmt.Sprintf("after Persist(block %d): db.StateRoot = %v, %v; want %v", block, r, err, s.root))
						}
					}
					bad.report(t, len(states))
					t.Logf("%s: %d transitions in %v", what, len(states), time.Since(start).Round(time.Millisecond))
					if t.Failed() {
						return
					}

					// The last state survives a reopen, and deleting everything in it
					// gives the empty root.
					if be.reopenable {
						closeStateDB(t, db, b, what)
						b = be.open(t, dir)
						db = openStateDB(t, b, f, what+" reopened")
						if r, err := db.StateRoot(); err != nil || r != prev.root {
							t.Fatalf("%s: after reopening, db.StateRoot = %v, %v; want %v (%v)", what, r, err, prev.root, prev)
						}
					}
					fr := db.Begin()
					if err := applyTransition(fr, prev, empty); err != nil {
						t.Fatalf("%s: deleting every account of %v: %v", what, prev, err)
					}
					if r, err := fr.StateRoot(); err != nil || r != hashkey.EmptyRoot {
						t.Errorf("%s: after deleting every account and slot of %v: fr.StateRoot = %v, %v; want the empty root %v", what, prev, r, err, hashkey.EmptyRoot)
					}
					if err := db.Persist(fr, uint64(limit+1)); err != nil {
						t.Fatalf("%s: Persist of the emptied state: %v", what, err)
					}
					if r, err := db.StateRoot(); err != nil || r != hashkey.EmptyRoot {
						t.Errorf("%s: after persisting the emptied state: db.StateRoot = %v, %v; want the empty root", what, r, err)
					}
				})
			}
		})
	}
}
