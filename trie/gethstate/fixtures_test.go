package gethstate_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/tests"

	"github.com/hexstate/hexstate/internal/ethtests"
)

// The fixtures are ethereum/tests' BlockchainTests (ValidBlocks, InvalidBlocks,
// TransitionTests), read from $HEXSTATE_ETHTESTS/BlockchainTests or, by default,
// from ../shared/testdata/ethereum-tests/BlockchainTests beside the repository.

// skipMessage is logged when the fixtures are absent.
const skipMessage = "ethereum/tests BlockchainTests not found: clone https://github.com/ethereum/tests " +
	"and set " + ethtests.EnvVar + "=/path/to/tests (expects BlockchainTests/ValidBlocks, InvalidBlocks, TransitionTests)"

// gethRejects lists the fixtures go-ethereum itself fails (its own test suite
// skips them; see the vectors' README), by file and fixture name prefix.
var gethRejects = []struct{ file, prefix string }{
	{"TransitionTests/bcArrowGlacierToParis/powToPosBlockRejection.json", "powToPosBlockRejection_ArrowGlacierToParisAtDiffC0000"},
	{"TransitionTests/bcFrontierToHomestead/blockChainFrontierWithLargerTDvsHomesteadBlockchain.json", "blockChainFrontierWithLargerTDvsHomesteadBlockchain_FrontierToHomesteadAt5"},
	{"TransitionTests/bcFrontierToHomestead/blockChainFrontierWithLargerTDvsHomesteadBlockchain2.json", "blockChainFrontierWithLargerTDvsHomesteadBlockchain2_FrontierToHomesteadAt5"},
}

// fixture is one blockchain test.
type fixture struct {
	file, name string // file relative to BlockchainTests
	test       *tests.BlockTest
	order      []common.Hash               // the hashes of the blocks with headers, in insertion order
	parent     map[common.Hash]common.Hash // block hash -> parent hash, from the headers
	number     map[common.Hash]uint64
}

// fixtureJSON is the part of a fixture the finality oracle needs.
type fixtureJSON struct {
	Blocks []struct {
		Header *struct {
			Hash       common.Hash   `json:"hash"`
			ParentHash common.Hash   `json:"parentHash"`
			Number     *jsonQuantity `json:"number"`
		} `json:"blockHeader"`
	} `json:"blocks"`
}

// jsonQuantity is a hex quantity.
type jsonQuantity struct{ v uint64 }

func (q *jsonQuantity) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	n, err := ethtests.Quantity(s)
	if err != nil {
		return err
	}
	q.v = n.Uint64()
	return nil
}

// fixturesDir returns the BlockchainTests directory, or skips t.
func fixturesDir(t testing.TB) string {
	t.Helper()
	d, err := ethtests.Locate()
	if err == nil {
		d = filepath.Join(d, "BlockchainTests")
		if _, err = os.Stat(d); err == nil {
			return d
		}
	}
	t.Skipf("%s (%v)", skipMessage, err)
	return ""
}

// loadFixtures reads every fixture under dir, the ones go-ethereum rejects
// excepted, sorted by file and name; keep (nil: all) selects files.
func loadFixtures(t testing.TB, keep func(file string) bool) []*fixture {
	t.Helper()
	dir := fixturesDir(t)
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".json") {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatalf("walk %s: %v", dir, err)
	}
	slices.Sort(files)
	var out []*fixture
	for _, file := range files {
		if keep != nil && !keep(file) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		var bts map[string]*tests.BlockTest
		var raw map[string]fixtureJSON
		if err := json.Unmarshal(b, &bts); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if err := json.Unmarshal(b, &raw); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		names := make([]string, 0, len(bts))
		for name := range bts {
			names = append(names, name)
		}
		slices.Sort(names)
	next:
		for _, name := range names {
			for _, r := range gethRejects {
				if file == r.file && strings.HasPrefix(name, r.prefix) {
					continue next
				}
			}
			f := &fixture{file: file, name: name, test: bts[name], parent: map[common.Hash]common.Hash{}, number: map[common.Hash]uint64{}}
			for _, blk := range raw[name].Blocks {
				if h := blk.Header; h != nil && h.Number != nil {
					f.order = append(f.order, h.Hash)
					f.parent[h.Hash] = h.ParentHash
					f.number[h.Hash] = h.Number.v
				}
			}
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no fixtures under %s", dir)
	}
	return out
}

// finalityOracle stands in for the consensus layer: when the block at index
// cur of the insertion order is the newest, a block is final if every block
// inserted after it descends from it, so persisting it abandons no fork the
// fixture still builds on. (Fixtures reorg back to genesis, deeper than any
// finality depth a test could use.)
type finalityOracle struct {
	f   *fixture
	cur int // index in f.order of the block being inserted
}

// at records that block hash is being inserted.
func (o *finalityOracle) at(hash common.Hash) {
	if i := slices.Index(o.f.order, hash); i >= 0 {
		o.cur = i
	}
}

// mayFinalize is a ChainOptions.MayFinalize.
func (o *finalityOracle) mayFinalize(hash common.Hash, number uint64) bool {
	for _, later := range o.f.order[o.cur+1:] {
		if !o.descends(later, hash, number) {
			return false
		}
	}
	return true
}

func (o *finalityOracle) descends(x, anc common.Hash, number uint64) bool {
	for {
		if x == anc {
			return true
		}
		n, ok := o.f.number[x]
		if !ok || n <= number {
			return false
		}
		x = o.f.parent[x]
	}
}
