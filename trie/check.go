package trie

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
)

// This file is the whole-state consistency check (DB.Check, Frame.CheckState):
// the invariant checker of invariants.go run over a whole state on several
// goroutines, reading the store itself rather than the record cache, with
// counts, progress and a bounded list of violations. check_run.go holds its
// machinery.
//
// Stored keys are trusted by design: the hasher takes a persisted branch's
// key and its children's keys from its record. A record changed behind the
// database's back (a leaf's value, a stored key) is then served silently and
// the next block's root comes out wrong. The check recomputes every key from
// the leaves up, so it finds such a change: a changed leaf shows as its
// parent's stored child key (or, without child keys, the parent's stored key)
// no longer matching; a changed branch key as that branch's mismatch; and the
// recomputed root then differs from the admin record's.

// DefaultCheckMax is how many violations a check reports when
// CheckOptions.Max is 0.
const DefaultCheckMax = 20

// CheckOptions configures DB.Check and Frame.CheckState. The zero value (and
// nil) is valid.
type CheckOptions struct {
	// Workers is how many goroutines walk the state (default GOMAXPROCS). The
	// account trie is split into sub-tries below its top levels; each worker
	// checks whole sub-tries, with the storage tries of their accounts.
	Workers int
	// Max is how many violations are reported (default DefaultCheckMax); the
	// check stops once it has found that many.
	Max int
	// WantRoot, when not nil, is the root the state must hash to: a mismatch
	// is a violation. Frame.CheckState uses it (a frame recovered from a
	// journal is checked against the root recorded for it); DB.Check always
	// compares with the admin record's root and ignores it.
	WantRoot *hashkey.Hash
	// CountRecords makes DB.Check also count the records the store holds at
	// or below the allocator's top (one scan of the store) and report how
	// many of them the walk did not reach (CheckReport.Unreachable; not
	// computed when the walk stopped early).
	CountRecords bool
	// Progress, when not nil, is called every ProgressEvery (default 5 s)
	// while the check runs, from a goroutine of its own, with the counts so
	// far.
	Progress      func(CheckCounts)
	ProgressEvery time.Duration
}

// CheckCounts is what a check walked.
type CheckCounts struct {
	Vertices     uint64 // vertices read (branches and leaves, in every trie)
	Branches     uint64
	Leaves       uint64
	Accounts     uint64 // account leaves
	StorageTries uint64 // accounts with storage
	Slots        uint64 // storage slots
	Bytes        uint64 // record bytes read from the store
}

func (c *CheckCounts) add(d CheckCounts) {
	c.Vertices += d.Vertices
	c.Branches += d.Branches
	c.Leaves += d.Leaves
	c.Accounts += d.Accounts
	c.StorageTries += d.StorageTries
	c.Slots += d.Slots
	c.Bytes += d.Bytes
}

// CheckReport is the outcome of a check.
type CheckReport struct {
	Format vertex.Format
	Block  uint64    // the persisted block (DB.Check)
	Top    vertex.ID // the allocator's top the state was checked against
	// Root is the recomputed state root (zero when it could not be computed);
	// WantRoot is the root it was compared with (zero when none was given).
	Root, WantRoot hashkey.Hash
	Counts         CheckCounts
	// Records and Unreachable are set by DB.Check with
	// CheckOptions.CountRecords: the records at or below the allocator's top
	// and how many of them no reference reaches (garbage, not corruption).
	Records, Unreachable uint64
	// LeafEntries is how many entries the leaf index holds (marker not
	// counted), set by DB.Check when the database has one.
	LeafEntries uint64
	Workers     int
	Elapsed     time.Duration
	// Violations are the first violations found (at most CheckOptions.Max),
	// sub-tries in key order and their ancestors after them; each names its
	// vertex and path (for a storage trie, the account's key too).
	Violations []Violation
	// Found is how many violations were found in all (at least
	// len(Violations)); Stopped says the walk stopped at Max, so there may be
	// more.
	Found   int
	Stopped bool
	// Consequent counts key mismatches not listed because a mismatch was
	// found below them: every ancestor of a changed vertex hashes differently.
	Consequent int
}

// OK reports whether the check found nothing wrong.
func (r *CheckReport) OK() bool { return len(r.Violations) == 0 }

// Err returns nil for a clean report, else an *InvariantError listing its
// violations.
func (r *CheckReport) Err() error {
	if r.OK() {
		return nil
	}
	return &InvariantError{Violations: r.Violations}
}

// CheckState checks fr's whole state — the account trie and every storage
// trie, as fr sees them — on opts.Workers goroutines: it recomputes every key
// from the leaves up and compares each stored key and each stored child key
// with it, checks that every referenced vertex exists and that no ID is above
// fr's allocator top, and the other invariants listed in invariants.go. The
// persisted vertices are read from the backend, not through the record cache
// (which the check leaves as it was), one path of the trie at a time: memory
// does not grow with the state.
//
// Violations are in the report, not the error: the error is one that kept the
// check from running (a closed database, a stale frame, a cancelled ctx). It
// runs as a read of fr, which it does not change. A frame recovered from a
// journal is checked the same way, with opts.WantRoot set to the root
// recorded for it.
func (fr *Frame) CheckState(ctx context.Context, opts *CheckOptions) (*CheckReport, error) {
	if err := fr.enter(useRead, "check state"); err != nil {
		return nil, err
	}
	defer fr.leave(useRead)
	o := opts.withDefaults()
	rep, err := fr.checkState(ctx, &o)
	if err != nil {
		return nil, err
	}
	if o.WantRoot != nil {
		rep.WantRoot = *o.WantRoot
		rep.compareRoot("the wanted root")
	}
	return rep, nil
}

// Check checks the persisted state, as Frame.CheckState does, against the
// admin record: the root it records must be the recomputed one, and no ID may
// be above its allocator top. It holds the database's read lock while it runs
// (a Persist waits for it). A store whose admin record changed since Open is
// reported, and checked against what the database opened with. It first
// waits for a persist still being written (Flush), so that the backend holds
// the persisted state it checks.
func (db *DB) Check(ctx context.Context, opts *CheckOptions) (*CheckReport, error) {
	// Flush, then hold the read lock with no write pending: a Persist that
	// slips in between hands its write to the writer, so flush again.
	for {
		if err := db.Flush(); err != nil {
			return nil, err
		}
		db.mu.RLock()
		if db.pending == nil || db.closed {
			break
		}
		db.mu.RUnlock()
	}
	defer db.mu.RUnlock()
	if db.closed {
		return nil, ErrClosed
	}
	o := opts.withDefaults()
	o.WantRoot = nil
	rec, err := db.backend.Admin()
	if err != nil {
		return nil, fmt.Errorf("trie: check: reading the admin record: %w", err)
	}
	rep, err := db.base.checkState(ctx, &o)
	if err != nil {
		return nil, err
	}
	rep.Block, rep.WantRoot = db.block, db.root
	adminWhere := func() string { return "admin record" }
	switch a, err := decodeAdmin(rec); {
	case err != nil:
		rep.addViolation(vertex.NoID, adminWhere, fmt.Sprintf("unreadable: %v", err))
	case a.top != db.base.alloc.Top || a.root != db.root || a.block != db.block || a.format != db.format || (a.records != 0 && a.records != db.records):
		rep.addViolation(vertex.NoID, adminWhere, fmt.Sprintf("changed since the database was opened: top %d, block %d, root %v, format %v, records %v; opened with top %d, block %d, root %v, format %v, records %v",
			a.top, a.block, a.root, a.format, a.records, db.base.alloc.Top, db.block, db.root, db.format, db.records))
	}
	rep.compareRoot("the admin record's root")
	if o.CountRecords {
		if err := db.countRecords(rep); err != nil {
			return nil, err
		}
	}
	if db.leafIdx && rep.OK() { // the index is compared with a sound trie only
		if err := db.checkLeafIndex(ctx, rep, o.Workers, o.Max); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// withDefaults returns a copy of o (nil: the defaults) with zero fields set.
func (o *CheckOptions) withDefaults() CheckOptions {
	var r CheckOptions
	if o != nil {
		r = *o
	}
	if r.Workers <= 0 {
		r.Workers = runtime.GOMAXPROCS(0)
	}
	if r.Max <= 0 {
		r.Max = DefaultCheckMax
	}
	if r.ProgressEvery <= 0 {
		r.ProgressEvery = 5 * time.Second
	}
	return r
}

// compareRoot adds a violation at the root when the recomputed root is not
// WantRoot (which want names). A root that could not be recomputed was
// reported already.
func (r *CheckReport) compareRoot(want string) {
	if r.Root != (hashkey.Hash{}) && r.Root != r.WantRoot {
		r.addViolation(vertex.RootID, func() string { return "state root" },
			fmt.Sprintf("recomputed root %v, %s is %v", r.Root, want, r.WantRoot))
	}
}

// addViolation appends a violation found after the walk (the root's, the
// admin record's). It is listed even when the list holds Max already: it is
// the headline of the damage below.
func (r *CheckReport) addViolation(id vertex.ID, where func() string, reason string) {
	r.Found++
	r.Violations = append(r.Violations, Violation{ID: id, Where: where(), Reason: reason})
}

// countRecords sets rep.Records and rep.Unreachable by scanning the store's
// records from vertex.RootID up to the allocator's top.
func (db *DB) countRecords(rep *CheckReport) error {
	top := db.base.alloc.Top
	var n uint64
	err := db.backend.VertexRange(vertex.RootID, int(top-vertex.RootID+1), func(vertex.ID, []byte) error {
		n++
		return nil
	})
	if err != nil {
		return fmt.Errorf("trie: check: counting records: %w", err)
	}
	rep.Records = n
	if !rep.Stopped && n > rep.Counts.Vertices {
		rep.Unreachable = n - rep.Counts.Vertices
	}
	return nil
}
