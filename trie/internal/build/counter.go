package build

import "github.com/hexstate/hexstate/vertex"

// Counter counts the IDs a Builder takes for the same keys, without
// building anything: it follows Add and Finish on the depths of the open
// branches alone. Keys are bytes here (a nibble path of even length), so that
// the count needs no nibble conversion. The count excludes the top vertex's
// ID, which the builder's caller gives, and any storage tries (which the
// caller counts with a Counter of their own).
type Counter struct {
	v1    bool
	stack []int  // depths of the open branches
	last  []byte // the last key (aliased: the caller's keys do not change)
	has   bool
	ids   int
}

// Reset readies c to count a new trie in format f.
func (c *Counter) Reset(f vertex.Format) {
	c.v1, c.stack, c.has, c.ids = f == vertex.FormatV1, c.stack[:0], false, 0
}

// Add follows Builder.Add for key.
func (c *Counter) Add(key []byte) {
	if c.has {
		d := NibblePrefix(c.last, key)
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
func (c *Counter) placed() {
	if c.v1 {
		c.ids++
	}
}

// Finish follows Builder.Finish and returns the count.
func (c *Counter) Finish() int {
	for range c.stack {
		c.placed()
	}
	c.stack = c.stack[:0]
	return c.ids
}

// NibblePrefix returns the length in nibbles of the common prefix of byte
// strings a and b.
func NibblePrefix(a, b []byte) int {
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

// NibbleAt returns nibble d of byte string k.
func NibbleAt(k []byte, d int) byte {
	if d%2 == 0 {
		return k[d/2] >> 4
	}
	return k[d/2] & 0xf
}
