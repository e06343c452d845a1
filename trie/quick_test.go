package trie

import (
	"github.com/hexstate/hexstate/vertex"
	"testing"
)

func TestQuickEmptyValues(t *testing.T) {
	for _, f := range []vertex.Format{vertex.FormatV1, vertex.FormatV2} {
		tr := NewTrieFormat(f)
		ops := [][2]string{{"do", "verb"}, {"ether", "wookiedoo"}, {"horse", "stallion"}, {"shaman", "horse"}, {"doge", "coin"}, {"ether", ""}, {"dog", "puppy"}, {"shaman", ""}}
		for _, o := range ops {
			tr.Put([]byte(o[0]), []byte(o[1]))
		}
		if h := tr.Hash(); h.String() != "0x5991bb8c6514148a29db676a14ac506cd2cd5775ace63c30a4fe457715e9ac84" {
			t.Fatalf("%v: %v", f, h)
		}
		v, _ := tr.Get([]byte("dog"))
		if string(v) != "puppy" {
			t.Fatal(string(v))
		}
		p, err := tr.Prove([]byte("doge"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := VerifyProof(tr.Hash(), []byte("doge"), p)
		if err != nil || string(got) != "coin" {
			t.Fatal(string(got), err)
		}
		it := tr.Iterator([]byte("doe"))
		var keys []string
		for it.Next() {
			keys = append(keys, string(it.Key()))
		}
		t.Log(keys)
	}
}
