package trie

import "github.com/hexstate/hexstate/vertex"

// idCounter counts the IDs a streamBuilder takes for the same keys, without
// building anything: it follows add and finish on the depths of the open
// branches alone. Keys are bytes here (a nibble path of even length), so that
// the count needs no nibble conversion. The count excludes the top vertex's
// ID, which the builder's caller gives, and any storage tries (which the
// caller adds, see accountIDs).
type idCounter struct {
	v1    bool
	stack []int  // depths of the open branches
	last  []byte // the last key (aliased: the caller's keys do not change)
	has   bool
	ids   int
}

func (c *idCounter) reset(f vertex.Format) {
	c.v1, c.stack, c.has, c.ids = f == vertex.FormatV1, c.stack[:0], false, 0
}

// add follows streamBuilder.add for key.
func (c *idCounter) add(key []byte) {
	if c.has {
		d := nibblePrefix(c.last, key)
		for len(c.stack) > 0 && c.stack[len(c.stack)-1] > d {
			c.stack = c.stack[:len(c.stack)-1]
			c.placed()
		}
		if len(c.stack) == 0 || c.stack[len(c.stack)-1] < d {
			c.stack = append(c.stack, d)
			if !c.v1 {
				c.ids += vertex.BranchSlots
			}
		}
		if d < 2*len(c.last) { // else the last key is the branch's value
			c.placed()
		}
	}
	c.has, c.last = true, key
}

// placed counts a vertex placed into its parent: an ID in format v1.
func (c *idCounter) placed() {
	if c.v1 {
		c.ids++
	}
}

// finish follows streamBuilder.finish and returns the count.
func (c *idCounter) finish() int {
	for range c.stack {
		c.placed()
	}
	c.stack = c.stack[:0]
	return c.ids
}

// storageIDs returns how many IDs addAccount takes for a's storage: the
// storage trie's ID and those of its vertices.
func (c *idCounter) storageIDs(f vertex.Format, a *AccountLeaf) int {
	if len(a.Storage) == 0 {
		return 0
	}
	c.reset(f)
	for j := range a.Storage {
		c.add(a.Storage[j].Hash[:])
	}
	return 1 + c.finish()
}

// nibblePrefix returns the length in nibbles of the common prefix of byte
// strings a and b.
func nibblePrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if x := a[i] ^ b[i]; x != 0 {
			if x&0xf0 == 0 {
				return 2*i + 1
			}
			return 2 * i
		}
	}
	return 2 * n
}

// nibbleAt returns nibble d of byte string k.
func nibbleAt(k []byte, d int) byte {
	if d%2 == 0 {
		return k[d/2] >> 4
	}
	return k[d/2] & 0xf
}
