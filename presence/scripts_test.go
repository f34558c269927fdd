package presence

import (
	"testing"

	"github.com/redschema/redschema/internal/calltest"
)

// Every script is whole .lua files of the package: its head, the
// prelude, lib.lua and its own file, each as written; every file compiles
// after the prelude.
func TestScriptsAreFiles(t *testing.T) { calltest.CheckScripts(t, pkg) }
