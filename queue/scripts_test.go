package queue

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redschema/redschema/internal/calltest"
	"github.com/redschema/redschema/internal/unit"
)

// TestScriptsAreFiles: every queue script is its .lua file sent as
// written after the prelude (and lib.lua, for all but the three that need
// none of it), and every file compiles after the prelude.
func TestScriptsAreFiles(t *testing.T) { calltest.CheckScripts(t, pkg) }

// TestLuaConstants: the bounds enqueue_lib.lua writes as literals are
// Go's.
func TestLuaConstants(t *testing.T) {
	for _, want := range []string{
		fmt.Sprintf("local REPLY_TTL_MS = '%d'\n", unit.MsCeil(replayWindow)),
		fmt.Sprintf("local MAX_DELAY_MS = %d\n", unit.MsCeil(maxDelay+clockSlack)),
	} {
		if !strings.Contains(enqueueLib, want) {
			t.Errorf("enqueue_lib.lua lacks %q", want)
		}
	}
}
