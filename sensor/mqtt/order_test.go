package mqtt

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/sensor"
)

// Messages of one topic are written in the order they arrive (issue 33,
// defect 10: the MQTT client ran handlers concurrently, and 200 in-order
// QoS 1 messages gave about 40 inversions in a generic sensor's list,
// whose head is the layout's "most recent reading").
func TestCollectorWritesOneTopicInArrivalOrder(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	sensors, err := sensor.New(e.Client, sensor.WithNamespace(e.NS))
	require.NoError(t, err)
	b := newBroker(t)
	c, err := New(b.url(), sensors, WithBatch(50, 5*time.Millisecond))
	require.NoError(t, err)
	start(t, c)
	harness.WaitFor(t, "a subscription", func() bool { return c.Stats().Subscriptions == 1 })

	const n = 200
	for i := range n {
		b.publish("automation/raw/pressure/lobby", strconv.Itoa(i))
	}
	harness.WaitFor(t, "every reading written", func() bool { return c.Stats().Ingested == n })

	rs, err := sensors.Latest(ctx, "pressure", "lobby", n)
	require.NoError(t, err)
	require.Len(t, rs, n)
	var got []string
	inversions := 0
	for i, r := range rs { // newest first
		got = append(got, fmt.Sprint(r.Value))
		if i > 0 && r.Value > rs[i-1].Value {
			inversions++
		}
	}
	assert.Zero(t, inversions, "newest first: %v", got)
	// The list itself, as the collector's readers see it: LINDEX 0 is
	// the most recent reading.
	raw, err := e.Client.LRange(ctx, e.NS.Prefix+"sensor:pressure:{lobby}", 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, raw, n)
	for i, m := range raw {
		assert.Contains(t, m, `"data":{"value":`+strconv.Itoa(n-1-i)+`}`, "list entry %d", i)
	}
}
