package metrics

import (
	"testing"

	"github.com/redschema/redschema/internal/calltest"
)

// TestScriptsAreFiles: every script the package sends is its .lua files
// as written (the prelude, parts.lua, the script), and every
// .lua file compiles on its own after the prelude.
func TestScriptsAreFiles(t *testing.T) { calltest.CheckScripts(t, pkg) }
