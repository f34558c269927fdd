package ratelimit

import (
	_ "embed"
	"encoding/json"
	"strconv"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

// The scripts, each a complete script as sent (after the prelude helpers
// it uses). Every Limiter sends the same text: its policy travels in ARGV
// (policyJSON, singleArgs), so each script has one SHA whatever the
// policy. A Limiter declares its check operations in New.
var (
	//go:embed allow.lua
	allowSrc string
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

// singleSrc is the lean script of each algorithm (see fixed.lua).
var singleSrc = map[Algorithm]string{FixedWindow: fixedSrc, Sliding: slidingSrc, SlidingCounter: swcSrc, GCRA: gcraSrc}

// singleNeeds is the shared helpers each lean script calls.
var singleNeeds = map[Algorithm][]call.Helper{Sliding: {call.Batched}}

// singleArgs is what a lean script reads after the cost (and, for a
// sliding log, the nonce): the rule's numbers, as each script's header
// lists them.
func singleArgs(r Rule, o options) []any {
	rate, pms := strconv.Itoa(r.Limit.Rate), r.Limit.Period.Milliseconds()
	switch r.Algorithm {
	case Sliding:
		shared := "0"
		if o.noWindow || o.rateLimit {
			shared = "1"
		}
		return []any{rate, strconv.FormatInt(pms, 10), strconv.FormatInt(pms+1, 10), shared}
	case GCRA:
		return []any{rate, strconv.FormatInt(pms, 10), strconv.Itoa(r.capacity())}
	}
	return []any{rate, strconv.FormatInt(pms, 10)}
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
	l.allowOp = pkg.Declare("allow", allowSrc, tmpls, call.Needs(call.Batched), call.Shared())
	l.peekOp = pkg.Declare("peek", allowSrc, tmpls, call.Needs(call.Batched), call.Shared())
	l.atMostOp = pkg.Declare("allow at most", allowSrc, tmpls, call.Needs(call.Batched), call.Shared())
	l.adjustOp = pkg.Declare("adjust", adjustSrc, append(tmpls[:len(tmpls):len(tmpls)], adjustKey), call.Needs(call.Batched))
	if len(l.policy) == 1 && l.cfgIdx == 0 && !l.opt.hasAuto {
		st := tmpls[len(tmpls)-1:]
		if !l.opt.noBlocks {
			st = tmpls
		}
		l.singleOp = pkg.Declare("allow", singleSrc[l.policy[0].Algorithm], st, call.Needs(singleNeeds[l.policy[0].Algorithm]...), call.Shared())
		l.singleArgs = singleArgs(l.policy[0], l.opt)
		l.singleOne = append([]any{1}, l.singleArgs...)
	}
}
