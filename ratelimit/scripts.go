package ratelimit

import (
	_ "embed"
	"strconv"
	"strings"
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

// The scripts. A Limiter compiles its policy into allow.lua (and, for a
// one-rule policy without runtime config, into single.lua and its
// algorithm's script), so each call sends only keys, the cost and a nonce;
// it declares the resulting operations in New.
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

	blockOp     = pkg.Declare("block", blockKeySrc+"\n"+blockSrc, []*keys.Template{blockKey})
	setConfigOp = pkg.Declare("set config", setConfigSrc, []*keys.Template{configKey})
	resetOp     = pkg.Declare("reset", resetSrc, []*keys.Template{blockKey})
	unblockOp   = pkg.Declare("unblock", unblockSrc, []*keys.Template{blockKey})
	delConfigOp = pkg.Declare("delete config", deleteConfigSrc, []*keys.Template{configKey})
	heartbeatOp = pkg.Declare("heartbeat", heartbeatSrc, []*keys.Template{instancesKey})
)

// rulesMarker is where a limiter's policy is compiled into allow.lua.
const rulesMarker = "--[[rules]]"

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

// generalBody returns allow.lua with rules compiled in.
func generalBody(o options, rules []string) string {
	return flags(o) + blockKeySrc + "\n" + strings.Replace(allowSrc, rulesMarker, strings.Join(rules, ", "), 1)
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
// most (one script, allow.lua compiled with the policy), and the lean single-rule allow when
// the policy allows it. Checks may share pipelines: a resent check is
// recognised where the state allows it, and otherwise only makes the
// limiter stricter (see "Retries" in docs/ratelimit.md).
func (l *Limiter) checkOps(rules []string) {
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
	body := generalBody(l.opt, rules)
	l.allowOp = pkg.Declare("allow", body, tmpls, call.Shared())
	l.peekOp = pkg.Declare("peek", body, tmpls, call.Shared())
	l.atMostOp = pkg.Declare("allow at most", body, tmpls, call.Shared())
	adj := flags(l.opt) + blockKeySrc + "\n" + strings.Replace(adjustSrc, rulesMarker, strings.Join(rules, ", "), 1)
	l.adjustOp = pkg.Declare("adjust", adj, append(tmpls[:len(tmpls):len(tmpls)], adjustKey))
	if len(l.policy) == 1 && l.cfgIdx == 0 && !l.opt.hasAuto {
		st := tmpls[len(tmpls)-1:]
		if !l.opt.noBlocks {
			st = tmpls
		}
		l.singleOp = pkg.Declare("allow", singleBody(l.policy[0], l.opt), st, call.Shared())
	}
}
