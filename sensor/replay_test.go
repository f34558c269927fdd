package sensor

import (
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/harness"
)

// A write whose reply is lost after the server ran it, and which go-redis
// sends again, reports its first outcome and stores (and counts) the
// reading once: alone, in a batch, under each duplicate policy.
func TestLostReplyStoresOnce(t *testing.T) {
	for _, enc := range encodings {
		for _, policy := range []DuplicatePolicy{KeepBoth, LastWins, FirstWins} {
			t.Run(enc.name+"/"+policy.arg(), func(t *testing.T) {
				e := harness.New(t)
				ctx := e.Ctx()
				pc, p := e.ProxyClient(nil)
				c, err := New(pc, append([]Option{WithNamespace(e.NS), WithDuplicates(policy)}, enc.opts...)...)
				require.NoError(t, err)
				followServerClock(e, c)
				for _, op := range []*call.Op{ingestEnvOp, ingestListOp, ingestCompactOp, touchLocationOp} {
					require.NoError(t, op.Load(ctx, pc), "EVALSHA must not fall back to EVAL, so the SHA is on the wire")
				}
				at := e.Now().Add(-time.Minute)
				for i, r := range []Reading{
					MotionReading("study", "m", true, 1, at),
					TemperatureReading("study", 21.5, "°C", at),
					GenericReading("pressure", "study", 1013, "hPa", at),
				} {
					tg := c.mustTarget(t, r.Type, r.Location)
					lost := p.Lost()
					p.LoseReply(tg.ingest.Script().Hash())
					res, err := c.Ingest(ctx, r)
					require.NoError(t, err, r.Type)
					require.Equal(t, lost+1, p.Lost(), "%s: the reply was lost once", r.Type)
					assert.Equal(t, Stored, res.Outcome, r.Type)
					rs, err := c.Latest(ctx, r.Type, "study", 10)
					require.NoError(t, err)
					assert.Len(t, rs, 1, "%s: stored once", r.Type)
					s, err := c.Aggregate(ctx, r.Type, "study", at, at, time.Minute, MinuteTier)
					require.NoError(t, err)
					require.Len(t, s.Buckets, 1)
					assert.Equal(t, int64(1), s.Buckets[0].Count, "%s: counted once", r.Type)

					// A second reading of the sensor at that time, lost
					// and resent: its first outcome under the policy.
					r2 := r
					r2.ID = "second-" + strconv.Itoa(i)
					p.LoseReply(wireID(c, r2.ID))
					res, err = c.Ingest(ctx, r2)
					require.NoError(t, err)
					want := map[DuplicatePolicy]Outcome{KeepBoth: Stored, LastWins: Stored, FirstWins: Duplicate}[policy]
					assert.Equal(t, want, res.Outcome, "%s: the first run's outcome", r.Type)
					rs, err = c.Latest(ctx, r.Type, "study", 10)
					require.NoError(t, err)
					wantN := map[DuplicatePolicy]int{KeepBoth: 2, LastWins: 1, FirstWins: 1}[policy]
					assert.Len(t, rs, wantN, r.Type)
				}

				// A batch: the whole pipeline is resent.
				var batch []Reading
				for i := range 20 {
					batch = append(batch, TemperatureReading("batch", float64(i), "°C", at.Add(time.Duration(i)*time.Millisecond)))
				}
				batch[7].ID = "lose-me"
				lost := p.Lost()
				p.LoseReply(wireID(c, "lose-me"))
				res, err := c.IngestBatch(ctx, batch)
				require.NoError(t, err)
				require.Equal(t, lost+1, p.Lost())
				for _, r := range res {
					assert.Equal(t, Stored, r.Outcome)
				}
				rs, err := c.Latest(ctx, Temperature, "batch", 100)
				require.NoError(t, err)
				assert.Len(t, rs, 20, "each reading once")

				// A batch of one generic sensor's readings, more than a
				// single write searches: the resent pipeline finds them all.
				batch = batch[:0]
				for i := range 3 * dupScan {
					batch = append(batch, GenericReading("pressure", "batch", float64(i), "hPa", at.Add(time.Duration(i)*time.Millisecond)))
				}
				batch[len(batch)-1].ID = "lose-me-too"
				p.LoseReply(wireID(c, "lose-me-too"))
				_, err = c.IngestBatch(ctx, batch)
				require.NoError(t, err)
				require.Equal(t, lost+2, p.Lost())
				rs, err = c.Latest(ctx, "pressure", "batch", 1000)
				require.NoError(t, err)
				assert.Len(t, rs, 3*dupScan, "each reading once")
			})
		}
	}
}

// Connections cut every 20 ms under many goroutines: a write reports a
// wire error or its true outcome, never Duplicate or Late for a fresh
// reading, and what the writers were told was stored is there, once.
func TestCutConnectionsNeverMisreport(t *testing.T) {
	e := harness.New(t)
	e.RequireShortWaits(2 * time.Second)
	ctx := e.Ctx()
	pc, p := e.ProxyClient(nil)
	c, err := New(pc, WithNamespace(e.NS), WithDuplicates(FirstWins))
	require.NoError(t, err)
	followServerClock(e, c)
	stop := make(chan struct{})
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				p.CutNow()
			}
		}
	}()
	var stored, wire, wrong atomic.Int64
	var mu sync.Mutex
	ids := map[string]bool{}
	var wg sync.WaitGroup
	deadline := time.Now().Add(1500 * time.Millisecond)
	base := e.Now().Add(-time.Hour)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				r := TemperatureReading("cut", float64(i), "°C", base.Add(time.Duration(g*100000+i)*time.Millisecond))
				r.ID = "g" + strconv.Itoa(g) + "-" + strconv.Itoa(i)
				res, err := c.Ingest(ctx, r)
				switch {
				case err != nil && (errors.Is(err, ErrInvalid) || errors.Is(err, ErrNotFound)):
					wrong.Add(1)
				case err != nil:
					wire.Add(1)
				case res.Outcome != Stored:
					wrong.Add(1)
				default:
					stored.Add(1)
					mu.Lock()
					ids[r.ID] = true
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	t.Logf("%d stored, %d wire errors, %d cuts, %d misreported", stored.Load(), wire.Load(), p.Cuts(), wrong.Load())
	assert.Positive(t, p.Cuts())
	assert.Positive(t, stored.Load())
	assert.Zero(t, wrong.Load())
	rs, err := c.Range(ctx, Temperature, "cut", base, base.Add(time.Hour), maxRangeLimit)
	require.NoError(t, err)
	seen := map[string]int{}
	for _, r := range rs {
		seen[r.ID]++
	}
	for id := range ids {
		assert.Equal(t, 1, seen[id], "reading %s reported stored is there once", id)
	}
	for id, n := range seen {
		assert.Equal(t, 1, n, "reading %s stored once", id)
	}
}

// wireID is the form of a reading ID on the wire (the compact encoding
// sends a short hash of it).
func wireID(c *Client, id string) string {
	if c.opt.compact {
		return shortID(id)
	}
	return id
}
