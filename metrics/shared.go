package metrics

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/keys"
)

// maxSharedKeys bounds the endpoint keys a Reader WithSharedKeys reads:
// beyond it Read fails rather than hold an unbounded list (the
// home-automation service's raw paths have no bound of their own).
const maxSharedKeys = maxSeries

// sharedEndpoint is one requests:endpoint:* or errors:endpoint:* key a
// SCAN found, whoever wrote it.
type sharedEndpoint struct {
	key    string
	name   string // the endpoint: the key's segment decoded, or as is
	errors bool   // an errors:endpoint key
	cmd    *redis.StringCmd
}

// scanEndpoints finds every requests:endpoint:* and errors:endpoint:* key
// under the namespace, on every master, in one SCAN pass (MATCH
// "<prefix>*:endpoint:*", the kind checked on each key).
func (r *Reader) scanEndpoints(ctx context.Context) ([]sharedEndpoint, error) {
	const op = "read"
	reqPrefix := r.ns.Prefix + "requests:endpoint:"
	errPrefix := r.ns.Prefix + "errors:endpoint:"
	match := strings.TrimSuffix(r.ns.Match(), "*") + "*:endpoint:*"
	var (
		mu    sync.Mutex
		found []sharedEndpoint
		over  bool
	)
	err := keys.ForEachNode(ctx, r.rdb, func(ctx context.Context, node redis.UniversalClient) error {
		it := node.Scan(ctx, 0, match, 1000).Iterator()
		for it.Next(ctx) {
			k := it.Val()
			e := sharedEndpoint{key: k}
			var rest string
			var ok bool
			t := endpointKey
			if rest, ok = strings.CutPrefix(k, reqPrefix); !ok {
				if rest, ok = strings.CutPrefix(k, errPrefix); !ok {
					continue
				}
				e.errors, t = true, endpointErrorsKey
			}
			e.name = rest
			if v, err := t.Parse(r.ns, k); err == nil {
				e.name = v[0]
			}
			mu.Lock()
			full := len(found) >= maxSharedKeys
			if full {
				over = true
			} else {
				found = append(found, e)
			}
			mu.Unlock()
			if full {
				return nil
			}
		}
		return it.Err()
	})
	if err != nil {
		return nil, pkg.Wrap(ctx, op, match, err)
	}
	if over {
		return nil, pkg.Fail(op, match, nil, fmt.Errorf("more than %d endpoint keys: delete the raw-path keys the other writer left (docs/metrics.md, Shared keys)", maxSharedKeys))
	}
	return found, nil
}

// sharedTotals turns the GETs of the keys scanEndpoints found into
// endpoint rows: at most the Reader's cap, the endpoints with the most
// requests, the others summed into the Overflow row so that the rows
// still add up to every key's count. A key holding data this package did
// not write is left out, its error appended to corrupt.
func (r *Reader) sharedTotals(ctx context.Context, found []sharedEndpoint, corrupt *[]error) ([]EndpointTotals, error) {
	const op = "read"
	byEp := map[string]*EndpointTotals{}
	for _, e := range found {
		v, err := e.cmd.Result()
		if errors.Is(err, redis.Nil) {
			continue // deleted since the SCAN
		}
		if redis.HasErrorPrefix(err, "WRONGTYPE") {
			*corrupt = append(*corrupt, pkg.Fail(op, e.key, nil, keys.Corrupt(e.key, errors.New("not a string"))))
			continue
		}
		if err != nil {
			return nil, pkg.Wrap(ctx, op, e.key, err)
		}
		n, perr := strconv.ParseInt(v, 10, 64)
		if perr != nil {
			*corrupt = append(*corrupt, pkg.Fail(op, e.key, nil, keys.Corrupt(e.key, fmt.Errorf("%.32q is not an integer", v))))
			continue
		}
		t := byEp[e.name]
		if t == nil {
			t = &EndpointTotals{Endpoint: e.name}
			byEp[e.name] = t
		}
		if e.errors {
			t.Errors += n
		} else {
			t.Requests += n
		}
	}
	out := make([]EndpointTotals, 0, len(byEp))
	var over *EndpointTotals
	for name, t := range byEp {
		if name == Overflow {
			over = t
			continue
		}
		out = append(out, *t)
	}
	if len(out) > r.cap {
		sort.Slice(out, func(i, j int) bool {
			if out[i].Requests != out[j].Requests {
				return out[i].Requests > out[j].Requests
			}
			return out[i].Endpoint < out[j].Endpoint
		})
		if over == nil {
			over = &EndpointTotals{Endpoint: Overflow}
		}
		for _, t := range out[r.cap:] {
			over.Requests += t.Requests
			over.Errors += t.Errors
		}
		out = out[:r.cap]
	}
	if over != nil {
		out = append(out, *over)
	}
	return out, nil
}
