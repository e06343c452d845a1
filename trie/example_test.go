package trie_test

import (
	"bytes"
	"errors"
	"fmt"
	"log"
	"slices"
	"testing"

	"github.com/hexstate/hexstate/internal/trietest"

	"github.com/holiman/uint256"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// The examples follow an execution client's use of the state database; the
// walkthrough is docs/integration.md.

// exAddr and exSlot stand for keccak(address) and keccak(slot).
func exAddr(i int) hashkey.Hash { return hashkey.Keccak256([]byte{'a', byte(i)}) }
func exSlot(i int) hashkey.Hash { return hashkey.Keccak256([]byte{'s', byte(i)}) }

// exApplyBlock stands for executing block n's transactions on fr: it updates
// five accounts and writes one storage slot.
func exApplyBlock(fr *trie.Frame, n uint64) error {
	for i := 0; i < 5; i++ {
		acc := trie.Account{Nonce: n}
		acc.Balance.SetUint64(n*1000 + uint64(i))
		if err := fr.UpdateAccount(exAddr(i), acc); err != nil {
			return err
		}
	}
	return fr.UpdateStorage(exAddr(0), exSlot(int(n)), uint256.NewInt(n))
}

// exHeaderRoot stands for the state root in block n's header: a second database
// (the block's producer) applies the same blocks, one persisted frame per block.
type exProducer struct{ db *trie.DB }

func (p *exProducer) headerRoot(n uint64) hashkey.Hash {
	fr := p.db.Begin()
	if err := exApplyBlock(fr, n); err != nil {
		log.Fatal(err)
	}
	if err := p.db.Persist(fr, n); err != nil {
		log.Fatal(err)
	}
	root, err := p.db.StateRoot()
	if err != nil {
		log.Fatal(err)
	}
	return root
}

// Example_blockLoop is a client's per-block loop: each block gets a frame begun
// on its parent's frame; its root is checked against the header; a block is
// persisted once it is final (here two blocks behind the head).
func Example_blockLoop() {
	db, err := trie.Open(trie.NewMemoryBackend(), &trie.Options{Format: vertex.FormatV2})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	producerDB, err := trie.Open(trie.NewMemoryBackend(), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer producerDB.Close()
	producer := &exProducer{producerDB}

	const finalityLag = 2
	frames := map[uint64]*trie.Frame{} // unpersisted blocks' frames
	for n := uint64(1); n <= 5; n++ {
		// Begin on the parent's frame, or on the persisted base.
		var fr *trie.Frame
		if parent := frames[n-1]; parent != nil {
			fr = parent.Begin() // parent is sealed from now on
		} else {
			fr = db.Begin()
		}
		if err := exApplyBlock(fr, n); err != nil {
			log.Fatal(err)
		}
		root, err := fr.StateRoot()
		if err != nil {
			log.Fatal(err)
		}
		if root != producer.headerRoot(n) {
			fr.Rollback()
			log.Fatalf("block %d: state root mismatch", n)
		}
		frames[n] = fr
		fmt.Printf("block %d: root %s ok\n", n, root.String()[:12])

		// Persist the block that just became final. Its descendants carry on.
		if final := n - finalityLag; n > finalityLag {
			if err := db.Persist(frames[final], final); err != nil {
				log.Fatal(err)
			}
			delete(frames, final)
		}
	}
	persisted, _ := db.StateRoot()
	fmt.Printf("persisted block %d, root %s\n", db.Block(), persisted.String()[:12])
	// Output:
	// block 1: root 0xfce3d5a83e ok
	// block 2: root 0x01f50c346c ok
	// block 3: root 0x9a6e8738ab ok
	// block 4: root 0x1af35ad3ab ok
	// block 5: root 0x1f3c1af436 ok
	// persisted block 3, root 0x9a6e8738ab
}

// Example_reorg keeps two forks of one parent side by side; persisting one of
// them abandons the other, whose frames then answer ErrStale.
func Example_reorg() {
	db, err := trie.Open(trie.NewMemoryBackend(), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	parent := db.Begin()
	if err := exApplyBlock(parent, 1); err != nil {
		log.Fatal(err)
	}

	// Two competing blocks 2 on the same parent.
	forkA, forkB := parent.Begin(), parent.Begin()
	if err := exApplyBlock(forkA, 2); err != nil {
		log.Fatal(err)
	}
	if err := forkB.UpdateAccount(exAddr(9), trie.Account{Nonce: 1}); err != nil {
		log.Fatal(err)
	}
	rootA, _ := forkA.StateRoot()
	rootB, _ := forkB.StateRoot()
	fmt.Println("forks have different roots:", rootA != rootB)
	childA := forkA.Begin() // block 3 on fork A

	// The parent is sealed: it has children.
	err = parent.UpdateAccount(exAddr(9), trie.Account{})
	fmt.Println("write to the parent:", errors.Is(err, trie.ErrSealed))

	// Fork B wins: persist it (and the parent with it).
	if err := db.Persist(forkB, 2); err != nil {
		log.Fatal(err)
	}
	_, _, err = forkA.Account(exAddr(0))
	fmt.Println("read fork A:", errors.Is(err, trie.ErrStale))
	err = childA.UpdateAccount(exAddr(0), trie.Account{})
	fmt.Println("write fork A's child:", errors.Is(err, trie.ErrStale))
	root, _ := db.StateRoot()
	fmt.Println("persisted root is fork B's:", root == rootB)

	// Rollback drops a frame that turned out invalid; its siblings are unaffected.
	bad, good := forkB.Begin(), forkB.Begin()
	_ = bad.UpdateAccount(exAddr(1), trie.Account{Nonce: 666})
	bad.Rollback()
	_, _, err = bad.Account(exAddr(1))
	fmt.Println("read rolled-back frame:", errors.Is(err, trie.ErrStale))
	_, ok, err := good.Account(exAddr(9))
	fmt.Println("sibling still reads:", ok, err)
	// Output:
	// forks have different roots: true
	// write to the parent: true
	// read fork A: true
	// write fork A's child: true
	// persisted root is fork B's: true
	// read rolled-back frame: true
	// sibling still reads: true <nil>
}

// Example_reopen restarts on a persisted database: it opens with the persisted
// root and block number. (On disk, the backend is rocks.Open(dir, nil); the
// memory backend keeps its records across Close, so it can stand in here.)
func Example_reopen() {
	store := trie.NewMemoryBackend()
	db, err := trie.Open(store, nil)
	if err != nil {
		log.Fatal(err)
	}
	fr := db.Begin()
	if err := exApplyBlock(fr, 7); err != nil {
		log.Fatal(err)
	}
	if err := db.Persist(fr, 7); err != nil {
		log.Fatal(err)
	}
	before, _ := db.StateRoot()
	db.Close()

	db, err = trie.Open(store, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	after, _ := db.StateRoot()
	fmt.Println("block:", db.Block())
	fmt.Println("same root:", after == before)
	acc, ok, _ := db.Begin().Account(exAddr(3))
	fmt.Println("account 3:", ok, acc.Nonce, acc.Balance.Uint64())
	// Output:
	// block: 7
	// same root: true
	// account 3: true 7 7003
}

// ExampleFrame_AccountProof serves eth_getProof: the account proof verifies
// against the state root, the storage proof against the account's storage root.
func ExampleFrame_AccountProof() {
	db, err := trie.Open(trie.NewMemoryBackend(), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	fr := db.Begin()
	if err := exApplyBlock(fr, 1); err != nil {
		log.Fatal(err)
	}
	root, _ := fr.StateRoot()
	proof, _ := fr.AccountProof(exAddr(0))
	accountRLP, err := trie.VerifyProof(root, exAddr(0).Bytes(), proof)
	fmt.Println("account proven:", accountRLP != nil, err)

	storageRoot, _ := fr.StorageRoot(exAddr(0))
	sproof, _ := fr.StorageProof(exAddr(0), exSlot(1))
	slotRLP, err := trie.VerifyProof(storageRoot, exSlot(1).Bytes(), sproof)
	fmt.Printf("slot value RLP: %x %v\n", slotRLP, err)

	absent, _ := fr.AccountProof(exAddr(99))
	v, err := trie.VerifyProof(root, exAddr(99).Bytes(), absent)
	fmt.Println("absent account:", v == nil, err)
	// Output:
	// account proven: true <nil>
	// slot value RLP: 01 <nil>
	// absent account: true <nil>
}

// TestExampleRoots pins the roots Example_blockLoop prints to the generic-trie
// oracle, so the // Output lines are not just what the code happened to print.
func TestExampleRoots(t *testing.T) {
	m := trietest.Model{}
	fr := trietest.NewStore(t, trietest.Memory).OpenWith(trie.Options{Format: vertex.FormatV1, Workers: 1}).Begin()
	want := []string{"0xfce3d5a83e", "0x01f50c346c", "0x9a6e8738ab", "0x1af35ad3ab", "0x1f3c1af436"}
	for n := uint64(1); n <= 5; n++ {
		for i := 0; i < 5; i++ {
			trietest.PutAccount(t, fr, m, exAddr(i), trietest.Acc(n, n*1000+uint64(i)))
		}
		trietest.PutSlot(t, fr, m, exAddr(0), exSlot(int(n)), n)
		if got := trietest.OracleRoot(t, m).String()[:12]; got != want[n-1] {
			t.Fatalf("block %d: oracle root %s, the example prints %s", n, got, want[n-1])
		}
	}
}

// ExampleDB_NewStateLoader is a snap sync: the state at a pivot block arrives as
// ranges of accounts in hash order, each with its storage, and is streamed into
// an empty database; the committed root must equal the pivot header's.
func ExampleDB_NewStateLoader() {
	// The state the peers serve, sorted by address hash (here: 200 accounts,
	// every tenth with two slots).
	var state []trie.AccountLeaf
	for i := 0; i < 200; i++ {
		a := trie.AccountLeaf{AddrHash: exAddr(i), Account: trie.Account{Nonce: uint64(i)}}
		if i%10 == 0 {
			a.Storage = []trie.SlotLeaf{{Hash: exSlot(1)}, {Hash: exSlot(2)}}
			a.Storage[0].Value.SetUint64(1)
			a.Storage[1].Value.SetUint64(2)
			if bytes.Compare(a.Storage[0].Hash[:], a.Storage[1].Hash[:]) > 0 {
				a.Storage[0], a.Storage[1] = a.Storage[1], a.Storage[0]
			}
		}
		state = append(state, a)
	}
	slices.SortFunc(state, func(a, b trie.AccountLeaf) int { return bytes.Compare(a.AddrHash[:], b.AddrHash[:]) })
	header := exStateRoot(state) // stands for the pivot block header's state root

	db, err := trie.Open(trie.NewMemoryBackend(), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	loader, err := db.NewStateLoader()
	if err != nil {
		log.Fatal(err)
	}
	for len(state) > 0 { // one range response at a time
		n := min(len(state), 128)
		if err := loader.Add(state[:n]); err != nil {
			loader.Abort()
			log.Fatal(err)
		}
		state = state[n:]
	}
	root, err := loader.Commit(1000) // the pivot block
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("block:", db.Block(), "matches the header:", root == header)
	acc, ok, _ := db.Begin().Account(exAddr(42))
	fmt.Println("account 42:", ok, acc.Nonce)
	// Output:
	// block: 1000 matches the header: true
	// account 42: true 42
}

// exStateRoot computes the root of state by writing it account by account.
func exStateRoot(state []trie.AccountLeaf) hashkey.Hash {
	db, err := trie.Open(trie.NewMemoryBackend(), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	fr := db.Begin()
	for _, a := range state {
		if err := fr.UpdateAccount(a.AddrHash, a.Account); err != nil {
			log.Fatal(err)
		}
		for _, s := range a.Storage {
			if err := fr.UpdateStorage(a.AddrHash, s.Hash, &s.Value); err != nil {
				log.Fatal(err)
			}
		}
	}
	root, err := fr.StateRoot()
	if err != nil {
		log.Fatal(err)
	}
	return root
}
