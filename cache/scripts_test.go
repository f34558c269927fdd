package cache

import (
	"testing"

	"github.com/redschema/redschema/internal/calltest"
)

// TestScriptsAreFiles: every cache script is its .lua file sent as
// written after the prelude, and every file compiles after the prelude.
func TestScriptsAreFiles(t *testing.T) { calltest.CheckScripts(t, pkg) }
