package vertex

// Allocator hands out vertex IDs in increasing order; IDs are never reused (a
// cache keyed by ID can then never confuse an old vertex with a new one). Its
// state is the last ID handed out, persisted in the admin record.
//
// How many IDs a new vertex takes depends on the format: in v2 a new branch
// reserves BranchSlots consecutive IDs for its children at once; in v1 every child
// takes one ID when it is created.
type Allocator struct {
	Top ID // last ID handed out; FirstFreeID-1 for a new database
}

// BranchSlots is how many consecutive IDs a format-v2 branch reserves.
const BranchSlots = 16

// Take returns the first of n fresh consecutive IDs.
func (a *Allocator) Take(n int) ID {
	id := a.Top + 1
	a.Top += ID(n)
	return id
}

// InitBranch makes b an empty branch with path p in format f: in format v2 it
// takes the branch's 16 child slots from a now; in v1 it gives the branch an
// empty child array (kids, or a new one when kids is nil), whose IDs AddChild
// takes one by one.
func (a *Allocator) InitBranch(b *Vertex, f Format, p []byte, kids *[16]ID) {
	b.Kind, b.Path = Branch, p
	if f == FormatV1 {
		if kids == nil {
			kids = new([16]ID)
		}
		b.Kids = kids
	} else {
		b.Base = a.Take(BranchSlots)
	}
}

// AddChild marks slot n of branch b used and returns the child's ID: Base+n in
// format v2, a fresh ID from a in v1.
func (a *Allocator) AddChild(b *Vertex, n byte) ID {
	b.Used |= 1 << n
	if b.Kids != nil {
		b.Kids[n] = a.Take(1)
		return b.Kids[n]
	}
	return b.Base + ID(n)
}
