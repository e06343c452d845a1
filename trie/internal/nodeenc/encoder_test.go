package nodeenc

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
)

// randomKey returns a hash key or, one time in four, an embedded node's key
// (1 to 31 bytes).
func randomKey(r *rand.Rand) hashkey.Key {
	n := 32
	if r.IntN(4) == 0 {
		n = 1 + r.IntN(31)
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	k, ok := hashkey.KeyFromBytes(b)
	if !ok {
		panic("bad key length")
	}
	return k
}

// TestBranchPacked checks BranchPacked against Branch and PackChildKeys: for
// branches with and without a path and a value, whose old children's keys
// cover a superset of the used slots that are not fresh, the RLP and the
// packed keys must be those of the full key array.
func TestBranchPacked(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var e, ref Encoder
	for i := range 2000 {
		v := vertex.Vertex{Kind: vertex.Branch, Used: uint16(r.Uint32())}
		if v.Used == 0 {
			v.Used = 1
		}
		if r.IntN(3) == 0 {
			v.Path = []byte{byte(r.IntN(16)), byte(r.IntN(16))}[:1+r.IntN(2)]
		}
		if r.IntN(5) == 0 {
			v.Payload, v.Value = vertex.RawPayload, []byte("value")
		}
		var want, oldKids, fresh [16]hashkey.Key
		var oldUsed, freshSet uint16
		for n := range 16 {
			bit := uint16(1) << n
			if v.Used&bit != 0 {
				want[n] = randomKey(r)
			}
			switch {
			case v.Used&bit != 0 && r.IntN(3) == 0: // recomputed
				freshSet |= bit
				fresh[n] = want[n]
				if r.IntN(2) == 0 { // an old, stale key
					oldUsed |= bit
					oldKids[n] = randomKey(r)
				}
			case v.Used&bit != 0:
				oldUsed |= bit
				oldKids[n] = want[n]
			case r.IntN(4) == 0: // a slot emptied since the old keys
				oldUsed |= bit
				oldKids[n] = randomKey(r)
			}
		}
		var old vertex.ChildKeys
		if oldUsed != 0 || r.IntN(2) == 0 {
			old = vertex.PackChildKeys(nil, oldUsed, &oldKids)
		}
		if old == nil {
			freshSet, fresh = v.Used, want
		}
		wi, wo := ref.Branch(&v, &want)
		wantKeys := vertex.PackChildKeys(nil, v.Used, &want)
		prefix := []byte("arena")
		gi, gout, packed := e.BranchPacked(&v, old, freshSet, &fresh, bytes.Clone(prefix))
		if !bytes.Equal(gi, wi) || !bytes.Equal(gout, wo) {
			t.Fatalf("case %d: RLP %x / %x, want %x / %x", i, gi, gout, wi, wo)
		}
		if !bytes.Equal(packed, wantKeys) {
			t.Fatalf("case %d: packed keys %x, want %x", i, packed, wantKeys)
		}
	}
}
