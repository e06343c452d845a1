package trie_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/internal/ethtests"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// This file runs the ethereum/tests TrieTests vectors against trie.Trie, in both
// vertex formats. The vectors are read from disk (see internal/ethtests).

var trieFormats = []vertex.Format{vertex.FormatV1, vertex.FormatV2}

// trieOp is one step of a case: Put(key, value), or Delete(key) when del is set.
type trieOp struct {
	key, value []byte
	del        bool
}

// trieCase is one TrieTests case, ready to apply: keys already hashed for the
// secure-trie files.
type trieCase struct {
	file, name string
	ordered    bool // "in" is an ordered list (trietest*.json); else a map
	ops        []trieOp
	root       hashkey.Hash
}

func (c *trieCase) String() string { return c.file + " " + c.name }

// rawTrieCase is a case as written; In is a list of [key, value|null] or an object.
type rawTrieCase struct {
	In         json.RawMessage `json:"in"`
	Root       string          `json:"root"`
	HexEncoded bool            `json:"hexEncoded"`
}

// loadTrieCases reads one TrieTests file in case-name order.
func loadTrieCases(t *testing.T, file string, secure, ordered bool) []*trieCase {
	t.Helper()
	var raw map[string]rawTrieCase
	ethtests.LoadJSON(t, &raw, "TrieTests", file)
	if len(raw) == 0 {
		t.Fatalf("TrieTests/%s: no cases", file)
	}
	var cases []*trieCase
	for name, rc := range raw {
		c := &trieCase{file: file, name: name, ordered: ordered}
		root, err := ethtests.Hex(rc.Root)
		if err != nil || len(root) != 32 {
			t.Fatalf("%s %s: bad root %q", file, name, rc.Root)
		}
		copy(c.root[:], root)
		var pairs [][2]*string
		if ordered {
			if err := json.Unmarshal(rc.In, &pairs); err != nil {
				t.Fatalf("%s %s: in: %v", file, name, err)
			}
		} else if pairs, err = objectPairs(rc.In); err != nil {
			t.Fatalf("%s %s: in: %v", file, name, err)
		}
		for i, p := range pairs {
			if p[0] == nil {
				t.Fatalf("%s %s: in[%d]: null key", file, name, i)
			}
			key, err := decodeField(*p[0], rc.HexEncoded)
			if err != nil {
				t.Fatalf("%s %s: in[%d] key: %v", file, name, i, err)
			}
			if secure {
				key = hashkey.Keccak256(key).Bytes()
			}
			op := trieOp{key: key, del: p[1] == nil}
			if !op.del {
				if op.value, err = decodeField(*p[1], rc.HexEncoded); err != nil {
					t.Fatalf("%s %s: in[%d] value: %v", file, name, i, err)
				}
			}
			c.ops = append(c.ops, op)
		}
		cases = append(cases, c)
	}
	sort.Slice(cases, func(i, j int) bool { return cases[i].name < cases[j].name })
	return cases
}

// decodeField applies the "0x hex or ASCII" convention; with hexEncoded every
// field is hex, prefixed or not.
func decodeField(s string, hexEncoded bool) ([]byte, error) {
	if hexEncoded {
		return ethtests.Hex(s)
	}
	return ethtests.Bytes(s)
}

// objectPairs returns the members of a JSON object of strings (or nulls) in the
// order they are written.
func objectPairs(raw json.RawMessage) ([][2]*string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("want an object, got %v (%v)", tok, err)
	}
	var out [][2]*string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("object key %v", tok)
		}
		var v *string
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("value of %q: %w", k, err)
		}
		out = append(out, [2]*string{&k, v})
	}
	return out, nil
}

// finalState is what a sequence of ops leaves in the trie.
func finalState(ops []trieOp) map[string][]byte {
	m := map[string][]byte{}
	for _, op := range ops {
		if op.del || len(op.value) == 0 {
			delete(m, string(op.key))
		} else {
			m[string(op.key)] = op.value
		}
	}
	return m
}

// touchedKeys are every key the ops mention, in first-mention order.
func touchedKeys(ops []trieOp) [][]byte {
	seen := map[string]bool{}
	var keys [][]byte
	for _, op := range ops {
		if !seen[string(op.key)] {
			seen[string(op.key)] = true
			keys = append(keys, op.key)
		}
	}
	return keys
}

// applyOps builds a trie of format f from ops. With emptyPut a delete is issued as
// Put(key, empty) instead of Delete(key). With hashEach the root is taken after
// every op and returned; the case's final root is still checked by the caller.
func applyOps(t *testing.T, what string, f vertex.Format, ops []trieOp, emptyPut, hashEach bool) (*trie.Trie, []hashkey.Hash) {
	t.Helper()
	tr := trie.NewTrieFormat(f)
	if h := tr.Hash(); h != hashkey.EmptyRoot {
		t.Fatalf("%s [%v]: empty trie Hash() = %v, want %v", what, f, h, hashkey.EmptyRoot)
	}
	var steps []hashkey.Hash
	for i, op := range ops {
		var err error
		switch {
		case op.del && emptyPut:
			err = tr.Put(op.key, []byte{})
		case op.del:
			err = tr.Delete(op.key)
		default:
			err = tr.Put(op.key, op.value)
		}
		if err != nil {
			kind := "Put"
			if op.del {
				kind = map[bool]string{true: "Put(empty)", false: "Delete"}[emptyPut]
			}
			t.Fatalf("%s [%v]: op %d %s(%x): %v", what, f, i, kind, op.key, err)
		}
		if hashEach {
			steps = append(steps, tr.Hash())
		}
	}
	return tr, steps
}

// checkContents checks Get, the iterator and proofs of tr against the final state
// of ops under root.
func checkContents(t *testing.T, what string, f vertex.Format, tr *trie.Trie, ops []trieOp, root hashkey.Hash) {
	t.Helper()
	want := finalState(ops)
	for _, key := range touchedKeys(ops) {
		v, ok := want[string(key)]
		got, err := tr.Get(key)
		if err != nil {
			t.Errorf("%s [%v]: Get(%x): %v", what, f, key, err)
			continue
		}
		if !ok {
			if len(got) != 0 {
				t.Errorf("%s [%v]: Get(%x) of a deleted key = %x, want nothing", what, f, key, got)
			}
		} else if !bytes.Equal(got, v) {
			t.Errorf("%s [%v]: Get(%x) = %x, want %x", what, f, key, got, v)
		}

		proof, err := tr.Prove(key)
		if !ok {
			// An absent key: Prove may refuse, but a proof it gives must not prove a value.
			if err == nil {
				if pv, perr := trie.VerifyProof(root, key, proof); perr == nil && len(pv) != 0 {
					t.Errorf("%s [%v]: VerifyProof of deleted key %x returned value %x", what, f, key, pv)
				}
			}
			continue
		}
		if err != nil {
			t.Errorf("%s [%v]: Prove(%x): %v", what, f, key, err)
			continue
		}
		pv, err := trie.VerifyProof(root, key, proof)
		if err != nil {
			t.Errorf("%s [%v]: VerifyProof(root %v, key %x, %d-node proof): %v", what, f, root, key, len(proof), err)
		} else if !bytes.Equal(pv, v) {
			t.Errorf("%s [%v]: VerifyProof(key %x) = %x, want %x", what, f, key, pv, v)
		}
		bad := root
		bad[0] ^= 0xff
		if pv, err := trie.VerifyProof(bad, key, proof); err == nil && bytes.Equal(pv, v) {
			t.Errorf("%s [%v]: VerifyProof accepted the proof of %x against a wrong root %v", what, f, key, bad)
		}
	}

	// The iterator yields exactly the final keys, in order.
	wantKeys := make([]string, 0, len(want))
	for k := range want {
		wantKeys = append(wantKeys, k)
	}
	sort.Strings(wantKeys)
	it := tr.Iterator(nil)
	var gotKeys []string
	for it.Next() {
		k := string(it.Key())
		gotKeys = append(gotKeys, k)
		if v, ok := want[k]; !ok {
			t.Errorf("%s [%v]: iterator yielded key %x, not in the trie", what, f, k)
		} else if !bytes.Equal(it.Value(), v) {
			t.Errorf("%s [%v]: iterator value of %x = %x, want %x", what, f, k, it.Value(), v)
		}
		if len(gotKeys) > len(want)+1 {
			break
		}
	}
	if err := it.Err(); err != nil {
		t.Errorf("%s [%v]: iterator: %v", what, f, err)
	}
	if strings.Join(gotKeys, "\x00") != strings.Join(wantKeys, "\x00") {
		t.Errorf("%s [%v]: iterator yielded %d keys %x, want %d keys %x", what, f, len(gotKeys), gotKeys, len(wantKeys), wantKeys)
	}
}

// runTrieCase checks one case in one format and returns the root it got.
func runTrieCase(t *testing.T, c *trieCase, f vertex.Format) hashkey.Hash {
	t.Helper()
	tr, _ := applyOps(t, c.String(), f, c.ops, false, false)
	got := tr.Hash()
	if got != c.root {
		t.Errorf("%s [%v]: root mismatch\n got:  %v\n want: %v", c, f, got, c.root)
	}
	if again := tr.Hash(); again != got {
		t.Errorf("%s [%v]: second Hash() = %v, first %v", c, f, again, got)
	}
	checkContents(t, c.String(), f, tr, c.ops, c.root)

	// Hashing after every op must not disturb the final root.
	_, steps := applyOps(t, c.String()+" (hash after each op)", f, c.ops, false, true)
	if last := steps[len(steps)-1]; last != c.root {
		t.Errorf("%s [%v] hashing after each op: final root mismatch\n got:  %v\n want: %v", c, f, last, c.root)
	}

	// An empty value deletes, as Delete does.
	hasDel := false
	for _, op := range c.ops {
		hasDel = hasDel || op.del
	}
	if hasDel {
		tr, _ := applyOps(t, c.String()+" (Put empty for null)", f, c.ops, true, false)
		if h := tr.Hash(); h != c.root {
			t.Errorf("%s [%v] with Put(key, empty) instead of Delete: root mismatch\n got:  %v\n want: %v", c, f, h, c.root)
		}
	}

	// A map's root does not depend on insertion order.
	if !c.ordered {
		rng := rand.New(rand.NewSource(int64(len(c.name)) * 7919))
		ops := append([]trieOp(nil), c.ops...)
		for round := 0; round < 6; round++ {
			if round == 0 {
				for i, j := 0, len(ops)-1; i < j; i, j = i+1, j-1 {
					ops[i], ops[j] = ops[j], ops[i]
				}
			} else {
				rng.Shuffle(len(ops), func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })
			}
			tr, _ := applyOps(t, c.String(), f, ops, false, false)
			if h := tr.Hash(); h != c.root {
				order := make([]string, len(ops))
				for i, op := range ops {
					order[i] = fmt.Sprintf("%x", op.key)
				}
				t.Errorf("%s [%v] insertion order %d %v: root mismatch\n got:  %v\n want: %v", c, f, round, order, h, c.root)
			}
		}
	}
	return got
}

// stepHashes returns the root after every op of c in format f.
func stepHashes(t *testing.T, c *trieCase, f vertex.Format) []hashkey.Hash {
	_, steps := applyOps(t, c.String(), f, c.ops, false, true)
	return steps
}

func TestTrieTests(t *testing.T) {
	files := []struct {
		file            string
		secure, ordered bool
	}{
		{"trietest.json", false, true},
		{"trietest_secureTrie.json", true, true},
		{"trieanyorder.json", false, false},
		{"trieanyorder_secureTrie.json", true, false},
		{"hex_encoded_securetrie_test.json", true, false},
	}
	for _, fl := range files {
		t.Run(fl.file, func(t *testing.T) {
			for _, c := range loadTrieCases(t, fl.file, fl.secure, fl.ordered) {
				t.Run(c.name, func(t *testing.T) {
					roots := map[vertex.Format]hashkey.Hash{}
					for _, f := range trieFormats {
						t.Run(f.String(), func(t *testing.T) { roots[f] = runTrieCase(t, c, f) })
					}
					if r1, r2 := roots[vertex.FormatV1], roots[vertex.FormatV2]; r1 != r2 {
						t.Errorf("%s: v1 root %v != v2 root %v", c, r1, r2)
					}
					// The formats must agree after every op, not just at the end.
					s1, s2 := stepHashes(t, c, vertex.FormatV1), stepHashes(t, c, vertex.FormatV2)
					for i := range s1 {
						if s1[i] != s2[i] {
							t.Errorf("%s: after op %d (key %x) v1 root %v != v2 root %v", c, i, c.ops[i].key, s1[i], s2[i])
							break
						}
					}
					// NewTrie() (the default format) agrees too.
					def := trie.NewTrie()
					for i, op := range c.ops {
						var err error
						if op.del {
							err = def.Delete(op.key)
						} else {
							err = def.Put(op.key, op.value)
						}
						if err != nil {
							t.Fatalf("%s [NewTrie]: op %d: %v", c, i, err)
						}
					}
					if h := def.Hash(); h != c.root {
						t.Errorf("%s [NewTrie default format]: root mismatch\n got:  %v\n want: %v", c, h, c.root)
					}
				})
			}
		})
	}
}

// TestTrieTestsNextPrev runs TrieTests/trietestnextprev.json: each test is
// [key, prev, next] where next is the first key greater than key and prev the
// greatest key less than it ("" for none).
func TestTrieTestsNextPrev(t *testing.T) {
	var raw map[string]struct {
		In    []string    `json:"in"`
		Tests [][3]string `json:"tests"`
	}
	ethtests.LoadJSON(t, &raw, "TrieTests", "trietestnextprev.json")
	if len(raw) == 0 {
		t.Fatal("trietestnextprev.json: no cases")
	}
	for name, c := range raw {
		t.Run(name, func(t *testing.T) {
			for _, f := range trieFormats {
				t.Run(f.String(), func(t *testing.T) {
					tr := trie.NewTrieFormat(f)
					for _, k := range c.In {
						key, err := ethtests.Bytes(k)
						if err != nil {
							t.Fatal(err)
						}
						// The value is the key itself (with a marker so "" would not delete).
						if err := tr.Put(key, append([]byte("v:"), key...)); err != nil {
							t.Fatalf("trietestnextprev.json %s [%v]: Put(%q): %v", name, f, key, err)
						}
					}
					for _, tc := range c.Tests {
						key, err1 := ethtests.Bytes(tc[0])
						wantPrev, err2 := ethtests.Bytes(tc[1])
						wantNext, err3 := ethtests.Bytes(tc[2])
						if err1 != nil || err2 != nil || err3 != nil {
							t.Fatalf("bad test %q", tc)
						}
						next, err := nextKey(tr, key)
						if err != nil {
							t.Errorf("trietestnextprev.json %s [%v]: next of %q: %v", name, f, key, err)
						} else if !bytes.Equal(next, wantNext) {
							t.Errorf("trietestnextprev.json %s [%v]: next of %q = %q, want %q", name, f, key, next, wantNext)
						}
						prev, err := prevKey(tr, key)
						if err != nil {
							t.Errorf("trietestnextprev.json %s [%v]: prev of %q: %v", name, f, key, err)
						} else if !bytes.Equal(prev, wantPrev) {
							t.Errorf("trietestnextprev.json %s [%v]: prev of %q = %q, want %q", name, f, key, prev, wantPrev)
						}
					}
				})
			}
		})
	}
}

// nextKey is the first key of tr greater than key (nil for none): Iterator(key),
// skipping key itself when present. It also checks the yielded value.
func nextKey(tr *trie.Trie, key []byte) ([]byte, error) {
	it := tr.Iterator(key)
	for it.Next() {
		k := it.Key()
		if bytes.Compare(k, key) < 0 {
			return nil, fmt.Errorf("Iterator(%q) yielded smaller key %q", key, k)
		}
		if want := append([]byte("v:"), k...); !bytes.Equal(it.Value(), want) {
			return nil, fmt.Errorf("Iterator(%q): value of %q = %q, want %q", key, k, it.Value(), want)
		}
		if bytes.Equal(k, key) {
			continue
		}
		return append([]byte(nil), k...), it.Err()
	}
	return nil, it.Err()
}

// prevKey is the greatest key of tr less than key (nil for none), found by
// iterating from the start.
func prevKey(tr *trie.Trie, key []byte) ([]byte, error) {
	it := tr.Iterator(nil)
	var prev, last []byte
	for it.Next() {
		k := it.Key()
		if last != nil && bytes.Compare(k, last) <= 0 {
			return nil, fmt.Errorf("iterator out of order: %q after %q", k, last)
		}
		last = append(last[:0:0], k...)
		if bytes.Compare(k, key) >= 0 {
			break
		}
		prev = append(prev[:0:0], k...)
	}
	return prev, it.Err()
}
