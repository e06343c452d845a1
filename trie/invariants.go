package trie

import (
	"fmt"
	"math/bits"
	"strings"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
)

// This file is a runtime checker of the trie's structural invariants, in the
// spirit of Aristo's checkTop/checkBE: it walks a frame's state (the trie at
// vertex.RootID and every account's storage trie) and reports what a correct
// trie never holds. Frame.Check runs it;
// builds with the `invariants` tag run it after every write and before every
// persist (invariants_on.go).
//
// It checks, for every vertex:
//   - a referenced vertex exists; in format v2 a branch's used-slot bits match
//     the vertices present at Base+n (an unused slot holds none), in format v1
//     its Kids match its used bits; the branch layout is the database's;
//   - no ID (the vertex's, its children's, an account's storage root) is above
//     the allocator's top;
//   - a branch has at least two children, or one child and a value (a branch
//     with one child and no value must have been collapsed into it);
//   - keys have their trie's length: 64 nibbles in the account trie and in
//     storage tries (so no branch there carries a value), whole bytes in a
//     generic trie;
//   - a leaf's payload belongs in its trie: slots in storage tries, accounts
//     (or, in a generic trie, raw values) at the root, never both kinds in one
//     trie; values are well-formed (a slot's value non-zero and minimal);
//   - a non-void stored key equals the key recomputed from the children, and
//     the ChildKeys a branch keeps (for slots not marked stale) equal its
//     children's keys.
//
// Keys are recomputed with a scratch hasher that memoizes nothing: checking
// never changes the frame, so it may run under a read of the frame.

// maxViolations is how many violations a check reports before it stops.
const maxViolations = 8

// Violation is one broken invariant: the vertex, where it sits (its trie and
// nibble path), and what is wrong with it.
type Violation struct {
	ID     vertex.ID
	Where  string
	Reason string
}

// InvariantError is what Frame.Check returns for a state that breaks the
// trie's invariants: the first violations found, at most a few.
type InvariantError struct {
	Violations []Violation
}

// Error lists the violations, one a line, each naming its vertex.
func (e *InvariantError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "trie: invariants broken (first %d):", len(e.Violations))
	for _, v := range e.Violations {
		fmt.Fprintf(&b, "\n\tvertex %d at %s: %s", v.ID, v.Where, v.Reason)
	}
	return b.String()
}

// Check walks the whole state as fr sees it — the account trie and every
// storage trie — and returns nil, or an *InvariantError naming the first
// vertices that break the trie's invariants (listed at the top of
// invariants.go), or the error that kept it from reading a vertex. It
// recomputes every key and changes nothing; it runs as a read of fr.
func (fr *Frame) Check() error {
	if err := fr.enter(useRead, "check"); err != nil {
		return err
	}
	defer fr.leave(useRead)
	return fr.checkInvariants()
}

// trieKind is which trie a walk is in.
type trieKind uint8

const (
	rootTrie    trieKind = iota // the trie at vertex.RootID: accounts, or a generic trie
	storageTrie                 // an account's storage
)

// invariantChecker walks one frame's state.
type invariantChecker struct {
	fr *Frame
	h  hasher // scratch: only its buffers and Keccak state are used
	// changedOnly walks only into the vertices fr itself holds and those whose
	// key is void; any other vertex (persisted, or in a sealed parent frame,
	// both checked when they were written) is trusted with its stored key.
	changedOnly bool
	rootKind    vertex.PayloadKind // the root trie's payload kind, once a leaf shows it
	found       []Violation
	// run is the shared state of a whole-state check (check.go), nil for
	// Frame.Check: with it, persisted vertices are read from the backend
	// (not through the record cache), a branch's children in one range read,
	// sub-tries other workers checked are taken from run.known, and
	// violations count towards run's bound.
	run    *checkRun
	counts CheckCounts // what this checker walked (with a run only)
	// keyFails counts the key mismatches found so far (reported, or inside a
	// sub-trie another worker checked). A key mismatch above one already
	// found is its consequence (every ancestor of a changed vertex hashes
	// differently): it is counted in consequent instead of being reported.
	keyFails   int
	consequent int
}

// checkInvariants checks fr's whole state (see the file comment); the caller
// holds the frame for reading at least. It returns nil or an error listing the
// first violations with their vertex IDs and nibble paths.
func (fr *Frame) checkInvariants() error { return fr.checkWith(false) }

// checkChangedInvariants is checkInvariants limited to the vertices fr holds
// (and any whose key is void), and their children: cheap enough to run after
// every write of a large state.
func (fr *Frame) checkChangedInvariants() error { return fr.checkWith(true) }

// assertInvariants panics when fr breaks an invariant, in builds with the
// `invariants` tag only (elsewhere it compiles to nothing). when says what just
// happened. Only the unpersisted changes are walked (checkChangedInvariants),
// after each of a frame's first 64 writes since its last hash and then after
// every power-of-two'th, so that a debugging build stays usable on states of
// many thousand writes.
func (fr *Frame) assertInvariants(when string) {
	if !invariants {
		return
	}
	if w := fr.writes; w > 64 && w&(w-1) != 0 {
		return
	}
	if err := fr.checkChangedInvariants(); err != nil {
		panic(fmt.Sprintf("trie: %s: %v", when, err))
	}
}

func (fr *Frame) checkWith(changedOnly bool) error {
	c := &invariantChecker{fr: fr, changedOnly: changedOnly}
	c.h.fr = fr
	c.walk(vertex.RootID, nil, nil, rootTrie, "", 0, false)
	if len(c.found) > 0 {
		return &InvariantError{c.found}
	}
	return nil
}

func (c *invariantChecker) fail(id vertex.ID, where func() string, format string, args ...any) {
	if c.run != nil {
		c.run.violations.Add(1)
	}
	if len(c.found) < c.max() {
		c.found = append(c.found, Violation{id, where(), fmt.Sprintf(format, args...)})
	}
}

// keyFail reports a key mismatch at id, unless a mismatch was found below it
// since fails was taken (see keyFails): then it only counts it.
func (c *invariantChecker) keyFail(fails int, id vertex.ID, where func() string, format string, args ...any) {
	if c.keyFails > fails {
		c.consequent++
		return
	}
	c.keyFails++
	c.fail(id, where, format, args...)
}

// max is how many violations the check reports.
func (c *invariantChecker) max() int {
	if c.run != nil {
		return c.run.max
	}
	return maxViolations
}

// full reports whether the check should stop: it found enough violations, or
// (a whole-state check) it was cancelled.
func (c *invariantChecker) full() bool {
	if c.run != nil {
		return c.run.stopped()
	}
	return len(c.found) >= maxViolations
}

// nibbleString renders nibbles as hex digits, one per nibble ("-" for none).
func nibbleString(p []byte) string {
	if len(p) == 0 {
		return "-"
	}
	const digits = "0123456789abcdef"
	b := make([]byte, len(p))
	for i, n := range p {
		b[i] = digits[n&15]
	}
	return string(b)
}

// walk checks vertex id, reached at nibble path in a trie of kind tk (owner
// names the account of a storage trie), and returns its recomputed key; ok is
// false when the key could not be computed (a violation was reported below).
// must says id is referenced and so has to exist. pre, when not nil, is the
// vertex already read (a v2 branch reads its children in one range read).
func (c *invariantChecker) walk(id vertex.ID, pre *fetched, path []byte, tk trieKind, owner string, depth int, must bool) (k hashkey.Key, ok bool) {
	where := func() string {
		s := "path " + nibbleString(path)
		if tk == storageTrie {
			s = "account " + owner + " storage " + s
		}
		return s
	}
	if c.full() {
		return k, false
	}
	if r, done := c.known(id, tk); done {
		return r.key, r.ok
	}
	if depth > maxDepth {
		c.fail(id, where, "%v", errTooDeep)
		return k, false
	}
	fr := c.fr
	if top := fr.alloc.Top; id > top {
		c.fail(id, where, "ID above the allocator's top %d", top)
		return k, false
	}
	var f fetched
	if pre != nil && pre.read {
		f = *pre
	} else {
		f = c.get(id)
	}
	v, err := f.v, f.err
	switch {
	case err != nil:
		c.fail(id, where, "unreadable: %v", err)
		return k, false
	case v == nil && must:
		c.fail(id, where, "missing, but referenced")
		return k, false
	case v == nil:
		return k, true // an empty trie
	}
	if c.run != nil {
		c.count(v, f.size)
	}
	fails := c.keyFails
	if c.changedOnly && !v.Key.IsVoid() {
		if _, own := fr.vtx.Lookup(id); !own {
			return v.Key, true // not changed by fr: checked when it was written
		}
	}
	switch v.Kind {
	case vertex.Leaf:
		k, ok = c.leaf(id, v, path, tk, where, depth)
	case vertex.Branch:
		k, ok = c.branch(id, v, path, tk, owner, where, depth)
	default:
		c.fail(id, where, "unknown kind %d", v.Kind)
		return k, false
	}
	if ok && !v.Key.IsVoid() && v.Key != k {
		c.keyFail(fails, id, where, "stored key %v, recomputed %v", v.Key, k)
	}
	return k, ok
}

// keyLenOK reports whether a key of n nibbles fits a trie of kind tk.
func keyLenOK(tk trieKind, rootKind vertex.PayloadKind, n int) bool {
	if tk == storageTrie || rootKind == vertex.AccountPayload {
		return n == 2*len(hashkey.Hash{})
	}
	return n%2 == 0
}

// payload checks v's payload (a leaf's, or a branch's value) for a trie of
// kind tk at a key of n nibbles, and returns v's storage root's key (the empty
// root for no storage); ok is false when it is unusable.
func (c *invariantChecker) payload(id vertex.ID, v *node, path []byte, tk trieKind, where func() string, depth, n int) (root hashkey.Hash, ok bool) {
	root = hashkey.EmptyRoot
	want := vertex.SlotPayload
	if tk == rootTrie {
		if c.rootKind == vertex.NoPayload && (v.Payload == vertex.AccountPayload || v.Payload == vertex.RawPayload) {
			c.rootKind = v.Payload // the first leaf decides what the root trie holds
		}
		want = c.rootKind
	}
	if v.Payload != want {
		c.fail(id, where, "payload kind %d in a trie of kind %d payloads", v.Payload, want)
		return root, false
	}
	if !keyLenOK(tk, c.rootKind, n) {
		c.fail(id, where, "key of %d nibbles in this trie", n)
	}
	switch v.Payload {
	case vertex.RawPayload:
		if len(v.Value) == 0 {
			c.fail(id, where, "empty raw value")
		}
	case vertex.SlotPayload:
		if len(v.Value) == 0 || v.Value[0] == 0 || len(v.Value) > 32 {
			c.fail(id, where, "slot value %x is not minimal and non-zero", v.Value)
		}
	case vertex.AccountPayload:
		if v.Acc == nil {
			c.fail(id, where, "account payload without an account")
			return root, false
		}
		if v.Kind != vertex.Leaf {
			c.fail(id, where, "account on a branch")
			return root, false
		}
		if s := v.Acc.Storage; s != vertex.NoID {
			full := append(path[:len(path):len(path)], v.Path...)
			if c.run != nil {
				c.counts.StorageTries++
			}
			k, ok := c.walk(s, nil, nil, storageTrie, nibbleString(full), depth+1, true)
			if !ok {
				return root, false
			}
			root = k.Hash()
			if sk := v.Acc.StorageKey; sk != (hashkey.Hash{}) && sk != root {
				c.fail(id, where, "recorded storage root %v, recomputed %v", sk, root)
			}
		}
	}
	return root, true
}

func (c *invariantChecker) leaf(id vertex.ID, v *node, path []byte, tk trieKind, where func() string, depth int) (hashkey.Key, bool) {
	root, ok := c.payload(id, v, path, tk, where, depth, len(path)+len(v.Path))
	if !ok {
		return hashkey.Key{}, false
	}
	return c.h.LeafKey(&v.Vertex, &root), true
}

func (c *invariantChecker) branch(id vertex.ID, v *node, path []byte, tk trieKind, owner string, where func() string, depth int) (hashkey.Key, bool) {
	fr := c.fr
	ok := true
	if (v.Kids != nil) != (fr.db.format == vertex.FormatV1) {
		c.fail(id, where, "branch of another layout in a %v database", fr.db.format)
		return hashkey.Key{}, false
	}
	kids := bits.OnesCount16(v.Used)
	switch {
	case kids == 0:
		c.fail(id, where, "branch without children")
		ok = false
	case kids == 1 && !v.HasValue():
		c.fail(id, where, "branch with one child and no value (not collapsed)")
	}
	if v.HasValue() {
		if _, vok := c.payload(id, v, path, tk, where, depth, len(path)+len(v.Path)); !vok {
			ok = false
		}
	}
	if v.Kids == nil {
		if last := v.Base + vertex.BranchSlots - 1; v.Base < vertex.FirstFreeID || last > fr.alloc.Top {
			c.fail(id, where, "child slots %d..%d outside the allocated IDs %d..%d", v.Base, last, vertex.FirstFreeID, fr.alloc.Top)
			return hashkey.Key{}, false
		}
	}
	sub := append(append(path[:len(path):len(path)], v.Path...), 0)
	// A whole-state check reads a branch's children ahead, in one range
	// read: in v2 its 16 slots, so any record in an unused slot too.
	var slots *[16]fetched
	if c.run != nil {
		slots = c.children(v)
	}
	var keys [16]hashkey.Key
	var tainted uint16 // slots below which a key mismatch was found
	for n := 0; n < 16; n++ {
		used := v.Used&(1<<n) != 0
		if v.Kids != nil {
			if used != (v.Kids[n] != vertex.NoID) {
				c.fail(id, where, "slot %x: used bit %v but child ID %d", n, used, v.Kids[n])
				ok = false
			}
		} else if !used && c.run != nil {
			if s := slots[n]; s.err == nil && s.v != nil {
				c.fail(id, where, "slot %x is unused but vertex %d exists", n, v.Base+vertex.ID(n))
			}
		} else if !used && !c.changedOnly {
			if stray, err := fr.get(v.Base + vertex.ID(n)); err == nil && stray != nil {
				c.fail(id, where, "slot %x is unused but vertex %d exists", n, v.Base+vertex.ID(n))
			}
		}
		if !used {
			continue
		}
		sub[len(sub)-1] = byte(n)
		var pre *fetched
		if slots != nil {
			pre = &slots[n]
		}
		fails := c.keyFails
		k, kok := c.walk(v.Child(n), pre, sub, tk, owner, depth+1, true)
		if c.keyFails > fails {
			tainted |= 1 << n
		}
		if !kok {
			ok = false
			continue
		}
		keys[n] = k
	}
	if !ok || c.full() {
		return hashkey.Key{}, false
	}
	if v.ChildKeys != nil {
		var stored [16]hashkey.Key
		v.ChildKeys.Unpack(&stored)
		for n := 0; n < 16; n++ {
			if bit := uint16(1) << n; v.Used&v.ChildKeys.Used()&^v.stale&bit != 0 && stored[n] != keys[n] {
				fails := c.keyFails
				if tainted&bit != 0 {
					fails-- // a mismatch below this slot: this one is its consequence
				}
				c.keyFail(fails, id, where, "ChildKeys slot %x (vertex %d) holds %v, the child's key is %v", n, v.Child(n), stored[n], keys[n])
			}
		}
	}
	return c.h.BranchKey(&v.Vertex, &keys), true
}
