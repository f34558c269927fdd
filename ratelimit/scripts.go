package ratelimit

import (
	_ "embed"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

// The scripts. allow.lua, adjust.lua and block.lua are complete scripts
// as sent (after the prelude helpers they use): a Limiter's policy travels
// in ARGV (policyJSON). A one-rule policy without runtime config still
// compiles its numbers into single.lua and its algorithm's script. A
// Limiter declares its check operations in New.
var (
	//go:embed blockkey.lua
	blockKeySrc string
	//go:embed allow.lua
	allowSrc string
	//go:embed single.lua
	singleSrc string
	//go:embed fixed.lua
	fixedSrc string
	//go:embed sliding.lua
	slidingSrc string
	//go:embed swc.lua
	swcSrc string
	//go:embed gcra.lua
	gcraSrc string
	//go:embed block.lua
	blockSrc string
	//go:embed set_config.lua
	setConfigSrc string
	//go:embed adjust.lua
	adjustSrc string
	//go:embed reset.lua
	resetSrc string
	//go:embed unblock.lua
	unblockSrc string
	//go:embed delete_config.lua
	deleteConfigSrc string
	//go:embed heartbeat.lua
	heartbeatSrc string

	blockOp     = pkg.Declare("block", blockSrc, []*keys.Template{blockKey})
	setConfigOp = pkg.Declare("set config", setConfigSrc, []*keys.Template{configKey})
	resetOp     = pkg.Declare("reset", resetSrc, []*keys.Template{blockKey})
	unblockOp   = pkg.Declare("unblock", unblockSrc, []*keys.Template{blockKey})
	delConfigOp = pkg.Declare("delete config", deleteConfigSrc, []*keys.Template{configKey})
	heartbeatOp = pkg.Declare("heartbeat", heartbeatSrc, []*keys.Template{instancesKey})
)

// policyJSON is the policy as allow.lua and adjust.lua read it: one JSON
// array (see allow.lua's header) of whether to read the block key,
// whether the sliding log's key is shared, WithAutoBlock's numbers (or
// false), whether there is a config hash, then four values per rule:
// algorithm name, rate, period in ms, burst.
func policyJSON(o options, policy Policy) string {
	var auto any = false
	if o.hasAuto {
		auto = []int64{int64(o.auto.refusals), o.auto.within.Milliseconds(), o.auto.block.Milliseconds()}
	}
	q := []any{!o.noBlocks, o.noWindow || o.rateLimit, auto, o.runtimeCfg}
	for _, r := range policy {
		q = append(q, r.Algorithm.String(), r.Limit.Rate, r.Limit.Period.Milliseconds(), r.Limit.Burst)
	}
	b, err := json.Marshal(q)
	if err != nil {
		panic(err) // numbers, names and booleans only
	}
	return string(b)
}

// limitMarker is where a single-rule limiter's numbers are compiled into
// single.lua.
const limitMarker = "--[[limit]]"

// flags are the first two lines of every check script: whether it reads
// the block key KEYS[1] (allow.lua is always passed it; the single-rule
// scripts are not, when false), and whether the sliding log's key has no
// window segment (limiters of other windows may then share it, so its TTL
// is only ever lengthened).
func flags(o options) string {
	return "local CHECK_BLOCK = " + strconv.FormatBool(!o.noBlocks) +
		"\nlocal SHARED_KEY = " + strconv.FormatBool(o.noWindow || o.rateLimit) +
		"\nlocal AUTO_BLOCK = " + autoBlockLua(o) + "\n"
}

// autoBlockLua is WithAutoBlock's numbers as a Lua table, or nil.
func autoBlockLua(o options) string {
	if !o.hasAuto {
		return "nil"
	}
	return "{" + strconv.Itoa(o.auto.refusals) + ", " + strconv.FormatInt(o.auto.within.Milliseconds(), 10) +
		", " + strconv.FormatInt(o.auto.block.Milliseconds(), 10) + "}"
}

// singleBody returns the lean script of a one-rule policy.
func singleBody(r Rule, o options) string {
	body := map[Algorithm]string{FixedWindow: fixedSrc, Sliding: slidingSrc, SlidingCounter: swcSrc, GCRA: gcraSrc}[r.Algorithm]
	pms := int64(r.Limit.Period / time.Millisecond)
	nums := strconv.Itoa(r.Limit.Rate) + ", " + strconv.FormatInt(pms, 10) + ", " + strconv.Itoa(r.capacity()) +
		", '" + strconv.FormatInt(pms, 10) + "', '" + strconv.FormatInt(pms+1, 10) + "'"
	return flags(o) + blockKeySrc + "\n" + strings.Replace(singleSrc, limitMarker, nums, 1) + "\n" + body
}

// checkOps declares the limiter's operations: allow, peek and allow at
// most (one script, allow.lua), adjust, and the lean single-rule allow
// when the policy allows it. Checks may share pipelines: a resent check is
// recognised where the state allows it, and otherwise only makes the
// limiter stricter (see "Retries" in docs/ratelimit.md).
func (l *Limiter) checkOps() {
	tmpls := []*keys.Template{blockKey}
	if l.cfgIdx > 0 {
		tmpls = append(tmpls, configKey)
	}
	for _, s := range l.specs {
		tmpls = append(tmpls, s.tmpl)
	}
	if l.opt.hasAuto {
		tmpls = append(tmpls, refusalsKey)
	}
	l.allowOp = pkg.Declare("allow", allowSrc, tmpls, call.Shared())
	l.peekOp = pkg.Declare("peek", allowSrc, tmpls, call.Shared())
	l.atMostOp = pkg.Declare("allow at most", allowSrc, tmpls, call.Shared())
	l.adjustOp = pkg.Declare("adjust", adjustSrc, append(tmpls[:len(tmpls):len(tmpls)], adjustKey))
	if len(l.policy) == 1 && l.cfgIdx == 0 && !l.opt.hasAuto {
		st := tmpls[len(tmpls)-1:]
		if !l.opt.noBlocks {
			st = tmpls
		}
		l.singleOp = pkg.Declare("allow", singleBody(l.policy[0], l.opt), st, call.Shared())
	}
}
