//go:build !linux

package manual

// adviseHuge does nothing where there is no transparent huge page advice.
func adviseHuge([]byte) {}
