package lock

import (
	"testing"

	"github.com/redschema/redschema/internal/calltest"
)

// TestScriptsAreFiles: every lock script is its .lua file sent as written
// after the prelude (and, for the five that issue a fencing token,
// lib.lua), and every file compiles after the prelude.
func TestScriptsAreFiles(t *testing.T) { calltest.CheckScripts(t, pkg) }
