package dashboard

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/redschema/redschema/ratelimit"
)

// namedLimiter is a limiter registered WithLimiter.
type namedLimiter struct {
	name string
	l    *ratelimit.Limiter
}

// adminPolicy has one rule per runtime config field, so that the admin
// limiter validates every field of a config edit. It never checks a
// request.
var adminPolicy = ratelimit.Policy{
	{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerMinute(1)},
	{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerHour(1)},
	{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerDay(1)},
	{Algorithm: ratelimit.GCRA, Limit: ratelimit.Limit{Rate: 1, Period: time.Second, Burst: 1}},
}

// lookupRow is what one registered limiter would decide for an identifier.
type lookupRow struct {
	Limiter     string `json:"limiter"`
	Policy      string `json:"policy"`
	Allowed     bool   `json:"allowed"`
	Rule        int    `json:"rule"`
	Limit       int    `json:"limit"`
	Remaining   int    `json:"remaining"`
	RetryAfterM int64  `json:"retry_after_ms"`
	ResetAfterM int64  `json:"reset_after_ms"`
}

type blockRow struct {
	ID          string `json:"id"`
	RemainingMs int64  `json:"remaining_ms"` // -1: no TTL
}

type rateReply struct {
	Limiters   []string          `json:"limiters"`
	Blocks     []blockRow        `json:"blocks"`
	Configured []string          `json:"configured"`
	ID         string            `json:"id,omitempty"`
	Lookup     []lookupRow       `json:"lookup"`
	Key        string            `json:"key,omitempty"`
	Config     *ratelimit.Config `json:"config,omitempty"`
}

// maxRateRows is how many blocks and configured keys the page lists.
const maxRateRows = 200

// rateLimits answers the rate limits page: the blocks and the API keys
// with a runtime config (ratelimit.Inspector.Overview: one SCAN pipeline
// and one read pipeline per node), and, with
// ?id=, what each limiter of WithLimiter would decide for it
// (Limiter.Peek, which writes nothing), with ?key=, that API key's config.
func (h *Handler) rateLimits(r *http.Request) (any, error) {
	ctx := r.Context()
	out := rateReply{Limiters: []string{}, Blocks: []blockRow{}, Lookup: []lookupRow{}}
	for _, nl := range h.opt.limiters {
		out.Limiters = append(out.Limiters, nl.name)
	}
	ov, err := h.rateInsp.Overview(ctx, maxRateRows)
	if err != nil {
		return nil, err
	}
	for _, b := range ov.Blocks {
		ms := int64(-1)
		if b.Remaining >= 0 {
			ms = b.Remaining.Milliseconds()
		}
		out.Blocks = append(out.Blocks, blockRow{ID: b.ID, RemainingMs: ms})
	}
	if out.Configured = ov.Configured; out.Configured == nil {
		out.Configured = []string{}
	}
	if id := r.URL.Query().Get("id"); id != "" {
		out.ID = id
		for _, nl := range h.opt.limiters {
			res, err := nl.l.Peek(ctx, id)
			if err != nil {
				return nil, rateErr(err)
			}
			out.Lookup = append(out.Lookup, lookupRow{Limiter: nl.name, Policy: policyText(nl.l.Policy()), Allowed: res.Allowed,
				Rule: res.Rule, Limit: res.Limit, Remaining: res.Remaining,
				RetryAfterM: res.RetryAfter.Milliseconds(), ResetAfterM: res.ResetAfter.Milliseconds()})
		}
	}
	if key := r.URL.Query().Get("key"); key != "" {
		cfg, err := h.admin.Config(ctx, key)
		if err != nil {
			return nil, rateErr(err)
		}
		out.Key, out.Config = key, &cfg
	}
	return out, nil
}

func policyText(p ratelimit.Policy) string {
	s := ""
	for i, r := range p {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s %s", r.Algorithm, r.Limit)
	}
	return s
}

func rateErr(err error) error {
	if errors.Is(err, ratelimit.ErrInvalid) {
		return badRequest("%v", err)
	}
	return err
}

// liftBlock lifts the block on the form's id with Limiter.Unblock: the
// block key is shared by every limiter of the namespace, so one call lifts
// it everywhere (and every instance's deny cache hears of it), and the
// identifier's counters are kept: what it used still counts.
func (h *Handler) liftBlock(r *http.Request) (any, error) {
	id := r.PostFormValue("id")
	if id == "" {
		return nil, badRequest("id is required")
	}
	was, err := h.admin.Unblock(r.Context(), id)
	if err != nil {
		return nil, rateErr(err)
	}
	return map[string]any{"lifted": id, "was_blocked": was}, nil
}

// setConfig replaces an API key's runtime config (Limiter.SetConfig;
// all-zero fields delete it). Fields: key, per_minute, per_hour, per_day,
// burst (empty is 0).
func (h *Handler) setConfig(r *http.Request) (any, error) {
	key := r.PostFormValue("key")
	if key == "" {
		return nil, badRequest("key is required")
	}
	var cfg ratelimit.Config
	for name, dst := range map[string]*int{"per_minute": &cfg.PerMinute, "per_hour": &cfg.PerHour, "per_day": &cfg.PerDay, "burst": &cfg.Burst} {
		v := r.PostFormValue(name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, badRequest("%s must be a whole number >= 0, got %q", name, v)
		}
		*dst = n
	}
	if err := h.admin.SetConfig(r.Context(), key, cfg); err != nil {
		return nil, rateErr(err)
	}
	return map[string]any{"key": key, "config": cfg}, nil
}
