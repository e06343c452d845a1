// Command hexstate-demo builds a small Ethereum state in an embedded RocksDB,
// persists it as the block after the store's current one (block 1 in a new
// store; an existing store never goes back), prints its root, proves an account and verifies the proof, then
// reopens the database and checks the root survived.
//
//	go run ./cmd/hexstate-demo [-dir DIR] [-accounts N] [-format v1|v2]
package main

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/hexstate/hexstate/cmd/internal/dbopen"
	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
	"github.com/holiman/uint256"
)

func main() {
	dir := flag.String("dir", "", "database directory (default: a temporary one, removed at exit)")
	accounts := flag.Int("accounts", 20000, "accounts to create (every 10th gets 20 storage slots)")
	format := flag.String("format", "v2", "layout of a new database: v1 or v2")
	flag.Parse()
	if err := run(*dir, *accounts, *format); err != nil {
		fmt.Fprintln(os.Stderr, "hexstate-demo:", err)
		os.Exit(1)
	}
}

func run(dir string, accounts int, format string) error {
	f := vertex.FormatV2
	switch format {
	case "v1":
		f = vertex.FormatV1
	case "v2":
	default:
		return fmt.Errorf("unknown format %q (want v1 or v2)", format)
	}
	if dir == "" {
		tmp, err := os.MkdirTemp("", "hexstate-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	db, err := dbopen.Open(dir, f)
	if err != nil {
		return err
	}
	start := time.Now()
	tx := db.Begin()
	for i := 0; i < accounts; i++ {
		addr := addrHash(i)
		acc := trie.Account{Nonce: uint64(i), CodeHash: hashkey.EmptyCodeHash}
		acc.Balance.SetUint64(uint64(i) * 1e9)
		if err := tx.UpdateAccount(addr, acc); err != nil {
			return err
		}
		if i%10 == 0 {
			for s := 0; s < 20; s++ {
				if err := tx.UpdateStorage(addr, slotHash(s), uint256.NewInt(uint64(i+s+1))); err != nil {
					return err
				}
			}
		}
	}
	root, err := tx.StateRoot()
	if err != nil {
		return err
	}
	built := time.Since(start)
	block := db.Block() + 1 // on top of what the store holds: never rewind it
	if err := db.Persist(tx, block); err != nil {
		return err
	}
	fmt.Printf("built %d accounts in %v (format %v, %s), persisted as block %d\n", accounts, built.Round(time.Millisecond), f, dir, block)
	fmt.Printf("state root  %v\n", root)

	probe := addrHash(accounts / 2)
	proof, err := tx.AccountProof(probe)
	if err != nil {
		return err
	}
	val, err := trie.VerifyProof(root, probe[:], proof)
	if err != nil {
		return fmt.Errorf("verifying the proof: %w", err)
	}
	fmt.Printf("proof of account %d: %d nodes, verified, account RLP %d bytes\n", accounts/2, len(proof), len(val))
	if err := db.Close(); err != nil {
		return err
	}

	db, err = dbopen.Open(dir, f)
	if err != nil {
		return err
	}
	defer db.Close()
	again, err := db.StateRoot()
	if err != nil {
		return err
	}
	if !bytes.Equal(again[:], root[:]) {
		return fmt.Errorf("reopened root %v, persisted %v", again, root)
	}
	if db.Block() != block {
		return fmt.Errorf("reopened at block %d, persisted block %d", db.Block(), block)
	}
	fmt.Printf("reopened at block %d: root %v matches\n", db.Block(), again)
	return nil
}

func addrHash(i int) hashkey.Hash {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(i))
	return hashkey.Keccak256([]byte("account"), b[:])
}

func slotHash(i int) hashkey.Hash {
	var b [32]byte
	binary.BigEndian.PutUint64(b[24:], uint64(i))
	return hashkey.Keccak256(b[:])
}
