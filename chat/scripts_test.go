package chat

import (
	"testing"

	"github.com/redschema/redschema/internal/calltest"
)

// TestScriptsAreFiles: every chat script is its .lua files sent as
// written (append_fast.lua, the prelude, lib.lua, the script), and every
// file compiles after the prelude.
func TestScriptsAreFiles(t *testing.T) { calltest.CheckScripts(t, pkg) }
