package chat

import (
	_ "embed"
	"fmt"
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/presence"
)

var (
	//go:embed guard.lua
	guardLua string
	//go:embed stats.lua
	statsLua string
	//go:embed lib.lua
	libLua string
	//go:embed route.lua
	routeLua string
	//go:embed open.lua
	openLua string
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

// luaConsts puts the package's bounds before every script.
var luaConsts = fmt.Sprintf("local MAX_ADMINS, MAX_CAPACITY, AVAIL_MS, REPLAY_MS, PRUNE, DRAIN, SKEW, STATS_MS = %d, %d, %d, %d, %d, %d, %d, %d\n",
	maxAdmins, maxCapacity, unit.MsCeil(presence.AvailabilityTTL), unit.MsCeil(ReplayWindow), pruneBatch, maxDrain, unit.MsCeil(maxSkew), unit.MsCeil(statsTTL))

const (
	// pruneBatch is how many expired conversations one routing call drops
	// besides those it meets.
	pruneBatch = 100
	// maxSkew is how far ahead of server time a stored time may be before
	// it counts as corrupt.
	maxSkew = 24 * time.Hour
)

// appendHead is Append's fast path (append_fast.lua) in a block of its
// own, after the constants it uses.
var appendHead = fmt.Sprintf("do\nlocal SKEW, REPLAY_MS, BAND = %d, %d, 2251799813685248\n%s\nend\n",
	unit.MsCeil(maxSkew), unit.MsCeil(ReplayWindow), appendFastLua)

// maxDrain is the most backlog conversations one call hands out; the
// rest go at the next routing call (Reconcile, RunReconciler).
const maxDrain = 1000

// conversational declares a script of lib.lua's layout; its KEYS
// templates are the shared keys (per-admin and operation keys are checked
// by the scripts themselves).
func conversational(name, body string, opts ...call.OpOption) *call.Op {
	return pkg.Declare(name, luaConsts+guardLua+statsLua+libLua+body,
		[]*keys.Template{stateKey, activeKey, unreadKey, backlogKey, rosterKey, cursorKey}, opts...)
}

// routing declares a conversational script that hands conversations out
// (with route.lua).
func routing(name, body string, opts ...call.OpOption) *call.Op {
	return conversational(name, routeLua+"\n"+body, opts...)
}

func reading(name, body string, ts ...*keys.Template) *call.Op {
	return pkg.Declare(name, luaConsts+guardLua+statsLua+body, ts)
}

var (
	openOp        = routing("open", openLua)
	moveOp        = routing("assign", moveLua, call.On(call.None, ErrNotFound))
	unassignOp    = routing("unassign", unassignLua, call.On(call.None, ErrNotFound))
	resolveOp     = routing("resolve", resolveLua, call.On(call.None, ErrNotFound))
	priorityOp    = conversational("set priority", priorityLua, call.On(call.None, ErrNotFound))
	appendOp      = conversational("append", appendLua, call.On(call.None, ErrNotFound), call.Head(appendHead))
	readOp        = conversational("mark read", readLua, call.On(call.None, ErrNotFound))
	reconcileOp   = routing("reconcile", reconcileLua)
	addAdminOp    = routing("add admin", addAdminLua)
	removeAdminOp = routing("remove admin", removeAdminLua)
	adminsOp      = routing("admins", adminsLua)

	dashboardOp    = reading("dashboard", dashboardLua, dashboardKey, activeKey, unreadKey, assignmentsKey, statsKey)
	messagesOp     = reading("messages", messagesLua, messagesKey)
	queueOp        = reading("queue", queueLua, backlogKey, activeKey)
	conversationOp = reading("conversation", conversationLua, stateKey, activeKey, unreadKey)
)
