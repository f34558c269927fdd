package aimemory

import (
	"testing"

	"github.com/redschema/redschema/internal/calltest"
)

// Every script the package sends is its .lua files as written, after the
// prelude, and every .lua file compiles on its own after the prelude.
func TestScriptsAreFiles(t *testing.T) { calltest.CheckScripts(t, pkg) }
