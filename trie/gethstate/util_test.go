package gethstate_test

import "fmt"

// errorf is fmt.Errorf, named for brevity in the test helpers.
func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
