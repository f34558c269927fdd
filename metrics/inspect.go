package metrics

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redschema/redschema/keys"
)

// Decoders for redschema inspect: counters and gauges decode to their
// number, hashes to their fields with numbers parsed (a Latest gauge's
// totals to values and Set times), the flush ledger and
// gauge parts to their parts, rollup streams to buckets with start times.
// decoders returns the decoder of each key pattern's values (see
// Schema), as redschema inspect and the dashboard show them.
func decoders() map[*keys.Template]keys.Decoder {
	out := map[*keys.Template]keys.Decoder{}
	set := func(t *keys.Template, d keys.Decoder) { out[t] = d }
	count := keys.StringDecoder(func(_ keys.Ref, v string) (any, error) {
		n, err := number(v)
		if err != nil {
			return nil, err
		}
		return map[string]any{"value": n}, nil
	})
	for _, t := range []*keys.Template{connCurrentKey, connMaxKey, acceptedKey, totalKey, speedKey, maxSpeedKey,
		endpointKey, errorsKey, endpointErrorsKey, counterKey, gaugeKey, histogramKey} {
		set(t, count)
	}
	numbers := keys.HashDecoder(func(_ keys.Ref, m map[string]string) (any, error) {
		out := map[string]any{}
		for f, v := range m {
			n, err := number(v)
			if err != nil {
				return nil, fmt.Errorf("field %q: %w", f, err)
			}
			out[f] = n
		}
		return out, nil
	})
	for _, t := range []*keys.Template{endpointTotalsKey, perSecondKey, pendingKey, rollupOpenKey} {
		set(t, numbers)
	}
	// A counter's or histogram's totals hold numbers; a Latest gauge's
	// hold "value:stamp_ms".
	set(totalsKey, keys.HashDecoder(func(_ keys.Ref, m map[string]string) (any, error) {
		out := map[string]any{}
		for f, v := range m {
			if val, at, ok := strings.Cut(v, ":"); ok {
				n, err1 := strconv.ParseInt(val, 10, 64)
				ms, err2 := strconv.ParseInt(at, 10, 64)
				if err1 != nil || err2 != nil {
					return nil, fmt.Errorf("field %q is %.40q, not value:stamp_ms", f, v)
				}
				out[f] = map[string]any{"value": n, "set_at": time.UnixMilli(ms).UTC()}
				continue
			}
			n, err := number(v)
			if err != nil {
				return nil, fmt.Errorf("field %q: %w", f, err)
			}
			out[f] = n
		}
		return out, nil
	}))
	set(ledgerKey, keys.FieldsDecoder(func(_ keys.Ref, inst, v string) (any, error) {
		seq, at, ok := strings.Cut(v, ":")
		s, err1 := strconv.ParseInt(seq, 10, 64)
		ms, err2 := strconv.ParseInt(at, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("ledger field %q is %.40q, not seq:ms", inst, v)
		}
		return map[string]any{"instance": inst, "last_batch": s, "applied_at": time.UnixMilli(ms).UTC()}, nil
	}))
	set(partsKey, keys.FieldsDecoder(func(_ keys.Ref, f, v string) (any, error) {
		p := strings.Split(v, ":")
		if len(p) != 3 {
			return nil, fmt.Errorf("gauge part %q is %.60q, not value:expires_ms:written_ms", f, v)
		}
		val, err := number(p[0])
		exp, err1 := strconv.ParseInt(p[1], 10, 64)
		wr, err2 := strconv.ParseInt(p[2], 10, 64)
		if err != nil || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("gauge part %q is %.60q, not value:expires_ms:written_ms", f, v)
		}
		dim, inst, _ := strings.Cut(f, "|")
		return map[string]any{"dimension": dim, "instance": inst, "value": val,
			"expires_at": time.UnixMilli(exp).UTC(), "written_at": time.UnixMilli(wr).UTC()}, nil
	}))
	set(rollupStateKey, keys.HashDecoder(func(_ keys.Ref, m map[string]string) (any, error) {
		return m, nil // lease holder, expiry and per-tier watermarks, as the drain reads them
	}))
	bucket := keys.StreamDecoder(func(_ keys.Ref, id string, fields map[string]any) (any, error) {
		start, _, _ := strings.Cut(id, "-")
		ms, err := strconv.ParseInt(start, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("entry ID %q", id)
		}
		sums := map[string]any{}
		names := make([]string, 0, len(fields))
		for f := range fields {
			names = append(names, f)
		}
		sort.Strings(names)
		for _, f := range names {
			s, _ := fields[f].(string)
			n, err := number(s)
			if err != nil {
				return nil, fmt.Errorf("entry %s field %q: %w", id, f, err)
			}
			sums[f] = n
		}
		return map[string]any{"bucket_start": time.UnixMilli(ms).UTC(), "sums": sums}, nil
	})
	for _, t := range rollupTierKeys {
		set(t, bucket)
	}
	return out
}

// number parses an integer, or a float (histogram sums).
func number(s string) (any, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("%.40q is not a number", s)
	}
	return f, nil
}
