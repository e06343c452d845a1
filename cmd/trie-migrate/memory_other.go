//go:build !linux

package main

// limitMallocArenas does nothing here: the arena cap is glibc's (see the
// Linux version).
func limitMallocArenas() {}
