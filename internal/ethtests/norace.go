//go:build !race

package ethtests

// RaceEnabled reports whether the binary was built with -race; long tests sample.
const RaceEnabled = false
