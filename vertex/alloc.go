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
