package chat

import (
	_ "embed"
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed lib.lua
	libLua string
	//go:embed open.lua
	openLua string
	//go:embed open_fast.lua
	openFastLua string
	//go:embed move.lua
	moveLua string
	//go:embed unassign.lua
	unassignLua string
	//go:embed resolve.lua
	resolveLua string
	//go:embed priority.lua
	priorityLua string
	//go:embed append.lua
	appendLua string
	//go:embed append_fast.lua
	appendFastLua string
	//go:embed read.lua
	readLua string
	//go:embed reconcile.lua
	reconcileLua string
	//go:embed add_admin.lua
	addAdminLua string
	//go:embed remove_admin.lua
	removeAdminLua string
	//go:embed admins.lua
	adminsLua string
	//go:embed dashboard.lua
	dashboardLua string
	//go:embed messages.lua
	messagesLua string
	//go:embed queue.lua
	queueLua string
	//go:embed conversation.lua
	conversationLua string
)

// limits returns lib.lua's ARGV[9..16]: MAX_ADMINS, MAX_CAPACITY,
// AVAIL_MS, REPLAY_MS, PRUNE, DRAIN, SKEW, STATS_MS, for availability
// that lasts avail; AVAIL_MS is negative when an availability key without
// a TTL is another writer's word (others: WithoutTag).
func limits(avail time.Duration, others bool) []any {
	ms := unit.MsCeil(avail)
	if others {
		ms = -ms
	}
	return []any{maxAdmins, maxCapacity, ms, unit.MsCeil(replayWindow),
		pruneBatch, maxDrain, unit.MsCeil(maxSkew), unit.MsCeil(statsTTL)}
}

const (
	// pruneBatch is how many expired conversations one routing call drops
	// besides those it meets.
	pruneBatch = 100
	// maxSkew is how far ahead of server time a stored time may be before
	// it counts as corrupt.
	maxSkew = 24 * time.Hour
	// maxDrain is the most backlog conversations one call hands out; the
	// rest go at the next routing call (Reconcile, RunReconciler).
	maxDrain = 1000
)

// conversational declares a conversation script (lib.lua's layout); its
// KEYS templates are the shared keys (per-admin and operation keys are
// checked by the scripts themselves).
func conversational(name, body string, opts ...call.OpOption) *call.Op {
	return pkg.Declare(name, body, []*keys.Template{stateKey, activeKey, unreadKey, backlogKey, rosterKey, cursorKey},
		append(opts, call.Uses(libLua, call.JSONStr, call.ScoreMS), call.Shared())...)
}

// reading declares a read-only script of its own layout, with lib.lua's
// guard.
func reading(name, body string, ts ...*keys.Template) *call.Op {
	return pkg.Declare(name, body, ts, call.Uses(libLua, call.JSONStr, call.ScoreMS), call.Shared())
}

var (
	openOp        = conversational("open", openLua, call.Head(openFastLua))
	moveOp        = conversational("assign", moveLua, call.On(call.None, ErrNotFound))
	unassignOp    = conversational("unassign", unassignLua, call.On(call.None, ErrNotFound))
	resolveOp     = conversational("resolve", resolveLua, call.On(call.None, ErrNotFound))
	priorityOp    = conversational("set priority", priorityLua, call.On(call.None, ErrNotFound))
	appendOp      = conversational("append", appendLua, call.Needs(call.RFC3339), call.On(call.None, ErrNotFound), call.Head(appendFastLua))
	readOp        = conversational("mark read", readLua, call.On(call.None, ErrNotFound))
	reconcileOp   = conversational("reconcile", reconcileLua)
	addAdminOp    = conversational("add admin", addAdminLua)
	removeAdminOp = conversational("remove admin", removeAdminLua)
	adminsOp      = conversational("admins", adminsLua)

	dashboardOp    = reading("dashboard", dashboardLua, dashboardKey, activeKey, unreadKey, assignmentsKey, statsKey)
	messagesOp     = reading("messages", messagesLua, messagesKey)
	queueOp        = reading("queue", queueLua, backlogKey, activeKey, stateKey)
	conversationOp = reading("conversation", conversationLua, stateKey, activeKey, unreadKey)
)
