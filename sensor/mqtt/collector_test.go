package mqtt

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/sensor"
)

// broker is an embedded MQTT broker on a loopback port that a test can
// stop and start again on the same port.
type broker struct {
	t    testing.TB
	addr string
	mu   sync.Mutex
	srv  *mochi.Server
}

func newBroker(t testing.TB) *broker {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	b := &broker{t: t, addr: addr}
	b.start()
	t.Cleanup(b.stop)
	return b
}

func (b *broker) url() string { return "tcp://" + b.addr }

func (b *broker) start() {
	b.mu.Lock()
	defer b.mu.Unlock()
	srv := mochi.New(&mochi.Options{InlineClient: true, Logger: slog.New(slog.NewTextHandler(discard{}, nil))})
	require.NoError(b.t, srv.AddHook(new(auth.AllowHook), nil))
	require.NoError(b.t, srv.AddListener(listeners.NewTCP(listeners.Config{ID: "t", Address: b.addr})))
	require.NoError(b.t, srv.Serve())
	b.srv = srv
}

func (b *broker) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.srv != nil {
		// mochi's Close can deadlock with a client connecting at that
		// moment (Clients.Delete against closeListenerClients, seen once
		// in CI); a broker that does not close in 5s is left behind.
		done := make(chan struct{})
		go func(srv *mochi.Server) { _ = srv.Close(); close(done) }(b.srv)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			b.t.Log("broker: Close did not return in 5s; left running")
		}
		b.srv = nil
	}
}

func (b *broker) publish(topic, payload string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	require.NoError(b.t, b.srv.Publish(topic, []byte(payload), false, 1))
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// start runs a collector until the test ends.
func start(t *testing.T, c *Collector) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// N messages published, N readings in Redis, across a broker restart:
// the collector reconnects and subscribes again by itself.
func TestCollectorAcrossBrokerRestart(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	sensors, err := sensor.New(e.Client, sensor.WithNamespace(e.NS))
	require.NoError(t, err)
	b := newBroker(t)
	var errs atomic.Int64
	c, err := New(b.url(), sensors, WithBatch(50, 20*time.Millisecond), WithErrorHandler(func(error) { errs.Add(1) }))
	require.NoError(t, err)
	start(t, c)
	harness.WaitFor(t, "the first subscription", func() bool { return c.Stats().Subscriptions == 1 })

	base := e.Now().Add(-10 * time.Minute).Truncate(time.Millisecond)
	publish := func(from, n int) {
		for i := from; i < from+n; i++ {
			at := base.Add(time.Duration(i) * time.Second).UTC().Format(time.RFC3339Nano)
			switch i % 4 {
			case 0:
				b.publish("automation/raw/motion/study", fmt.Sprintf(`{"timestamp":%q,"state":"on","entity_id":"binary_sensor.motion_study","sequence":%d}`, at, i))
			case 1:
				b.publish("automation/raw/temperature/living_room", fmt.Sprintf(`{"timestamp":%q,"value":%d.5,"unit":"°C"}`, at, 20+i%5))
			case 2:
				b.publish("automation/raw/illuminance/living_room", fmt.Sprintf(`{"timestamp":%q,"illuminance":%d,"illuminance_unit":"lux"}`, at, 100*i))
			case 3:
				b.publish("automation/raw/pressure/kitchen", fmt.Sprintf(`{"timestamp":%q,"value":1013.25,"unit":"hPa","trend":"stable"}`, at))
			}
		}
	}
	const n = 200
	publish(0, n)
	harness.WaitFor(t, "the first readings in Redis", func() bool { return c.Stats().Ingested == n })

	b.stop()
	harness.WaitFor(t, "the collector to see the broker go", func() bool { return errs.Load() > 0 })
	b.start()
	harness.WaitFor(t, "a new subscription after the restart", func() bool { return c.Stats().Subscriptions == 2 })
	publish(n, n)
	harness.WaitFor(t, "the readings after the restart in Redis", func() bool { return c.Stats().Ingested == 2*n })

	count := func(typ, loc string) int {
		rs, err := sensors.Range(ctx, typ, loc, base, base.Add(time.Hour), 0)
		require.NoError(t, err)
		return len(rs)
	}
	got := count(sensor.Motion, "study") + count(sensor.Temperature, "living_room") +
		count(sensor.Illuminance, "living_room") + count("pressure", "kitchen")
	assert.Equal(t, 2*n, got, "N messages published, N readings in Redis")
	st := c.Stats()
	assert.Equal(t, uint64(2*n), st.Received)
	assert.Zero(t, st.Dropped+st.Malformed+st.Failed)
	assert.GreaterOrEqual(t, st.Connects, uint64(2))
	since, err := sensors.SinceMotion(ctx, "study")
	require.NoError(t, err)
	assert.Greater(t, since, time.Duration(0))
	p, err := sensors.Current(ctx, "pressure", "kitchen")
	require.NoError(t, err)
	assert.JSONEq(t, `{"value":1013.25,"unit":"hPa","trend":"stable"}`, string(p.Data))
	assert.Equal(t, "automation/raw/pressure/kitchen", p.Topic)
}

// slowSink blocks until released, counting batches.
type slowSink struct {
	release chan struct{}
	batches atomic.Int64
	n       atomic.Int64
}

func (s *slowSink) IngestBatch(ctx context.Context, rs []sensor.Reading) ([]sensor.Result, error) {
	select {
	case <-s.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s.batches.Add(1)
	s.n.Add(int64(len(rs)))
	out := make([]sensor.Result, len(rs))
	for i := range out {
		out[i] = sensor.Result{ID: rs[i].ID, Outcome: sensor.Stored}
	}
	return out, nil
}

// The buffer is bounded: while Redis does not take writes, messages past
// the buffer are dropped and counted, and the MQTT client is never
// blocked; malformed messages are counted and skipped; readings go in
// batches.
func TestCollectorBuffersBoundedly(t *testing.T) {
	b := newBroker(t)
	sink := &slowSink{release: make(chan struct{})}
	c, err := New(b.url(), sink, WithBuffer(20), WithBatch(10, time.Millisecond))
	require.NoError(t, err)
	start(t, c)
	harness.WaitFor(t, "a subscription", func() bool { return c.Stats().Subscriptions == 1 })
	for i := range 100 {
		b.publish("automation/raw/temperature/hall", fmt.Sprint(20+i%3))
	}
	b.publish("automation/raw/temperature/hall", "warm")
	b.publish("automation/raw/motion/hall", "1")
	harness.WaitFor(t, "every message received", func() bool { return c.Stats().Received == 102 })
	st := c.Stats()
	assert.Equal(t, uint64(2), st.Malformed)
	assert.GreaterOrEqual(t, st.Dropped, uint64(100-20-10), "at most the buffer and one batch wait")
	close(sink.release)
	harness.WaitFor(t, "the buffer written", func() bool { return uint64(sink.n.Load()) == 100-c.Stats().Dropped })
	assert.Less(t, sink.batches.Load(), sink.n.Load(), "batches of several readings")
}

func TestParse(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	r, err := Parse("automation/raw/motion/study", []byte(`{"timestamp":"2025-01-01T11:59:00.5Z","state":true,"entity_id":"binary_sensor.motion_study","sequence":42}`), now)
	require.NoError(t, err)
	assert.Equal(t, sensor.Reading{Type: sensor.Motion, Location: "study", Time: time.Date(2025, 1, 1, 11, 59, 0, 5e8, time.UTC),
		State: sensor.On, Value: 1, HasValue: true, EntityID: "binary_sensor.motion_study", Sequence: 42, CollectedAt: now}, r)
	r, err = Parse("automation/raw/illuminance/living_room", []byte(`{"timestamp":1735732740000,"illuminance":450,"illuminance_unit":"lux"}`), now)
	require.NoError(t, err)
	assert.Equal(t, 450.0, r.Value)
	assert.Equal(t, "lux", r.Unit)
	assert.Equal(t, int64(1735732740000), r.Time.UnixMilli())
	r, err = Parse("home/raw/humidity/bathroom", []byte(" 71.5 "), now)
	require.NoError(t, err)
	assert.Equal(t, sensor.Reading{Type: "humidity", Location: "bathroom", Time: now, Value: 71.5, HasValue: true, CollectedAt: now}, r)
	r, err = Parse("automation/raw/motion/hall", []byte("OFF"), now)
	require.NoError(t, err)
	assert.Equal(t, sensor.Off, r.State)
	r, err = Parse("automation/raw/pressure/kitchen", []byte(`{"value":1013.25,"unit":"hPa","trend":"stable","timestamp":"2025-01-01T11:00:00Z"}`), now)
	require.NoError(t, err)
	assert.JSONEq(t, `{"value":1013.25,"unit":"hPa","trend":"stable"}`, string(r.Data))
	assert.Equal(t, "automation/raw/pressure/kitchen", r.Topic)
	for _, bad := range []struct{ topic, payload string }{
		{"motion", "on"},
		{"automation/raw/temperature/", "1"},
		{"automation/raw/temperature/hall", "warm"},
		{"automation/raw/temperature/hall", `{"unit":"°C"}`},
		{"automation/raw/temperature/hall", `{"value":1,"timestamp":"yesterday"}`},
		{"automation/raw/motion/hall", "1"},
		{"automation/raw/pressure/kitchen", `{"value":`},
	} {
		_, err := Parse(bad.topic, []byte(bad.payload), now)
		require.ErrorIs(t, err, ErrInvalid, "%s %s", bad.topic, bad.payload)
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	sink := &slowSink{}
	for i, opts := range [][]Option{
		{WithQoS(3)},
		{WithBuffer(-1)},
		{WithBuffer(0)},
		{WithBuffer(maxBuffer + 1)},
		{WithBatch(0, time.Second)},
		{WithBatch(maxBatch+1, time.Second)},
		{WithBatch(10, 0)},
		{WithBatch(10, time.Hour)},
		{WithTopics("")},
	} {
		_, err := New("tcp://127.0.0.1:1", sink, opts...)
		assert.ErrorIs(t, err, ErrInvalid, "case %d", i)
	}
	_, err := New("", sink)
	require.ErrorIs(t, err, ErrInvalid)
	_, err = New("tcp://127.0.0.1:1", nil)
	require.ErrorIs(t, err, ErrInvalid)
}

// flakySink fails its first calls as a network would, then writes.
type flakySink struct {
	fails atomic.Int64
	mu    sync.Mutex
	ids   map[string]int
}

func (s *flakySink) IngestBatch(_ context.Context, rs []sensor.Reading) ([]sensor.Result, error) {
	if s.fails.Add(-1) >= 0 {
		return make([]sensor.Result, len(rs)), &net.OpError{Op: "read", Err: fmt.Errorf("connection reset")}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]sensor.Result, len(rs))
	for i, r := range rs {
		s.ids[r.ID]++
		out[i] = sensor.Result{ID: r.ID, Outcome: sensor.Stored}
	}
	return out, nil
}

// A batch that fails on the wire is retried with the same reading IDs
// until it is written.
func TestCollectorRetriesWithTheSameIDs(t *testing.T) {
	b := newBroker(t)
	sink := &flakySink{ids: map[string]int{}}
	sink.fails.Store(3)
	var errs atomic.Int64
	c, err := New(b.url(), sink, WithBatch(100, 10*time.Millisecond), WithErrorHandler(func(error) { errs.Add(1) }))
	require.NoError(t, err)
	start(t, c)
	harness.WaitFor(t, "a subscription", func() bool { return c.Stats().Subscriptions == 1 })
	for i := range 30 {
		b.publish("automation/raw/temperature/hall", fmt.Sprint(i))
	}
	harness.WaitFor(t, "every reading written", func() bool { return c.Stats().Ingested == 30 })
	sink.mu.Lock()
	defer sink.mu.Unlock()
	assert.Len(t, sink.ids, 30)
	for id, n := range sink.ids {
		assert.Equal(t, 1, n, id)
	}
	assert.GreaterOrEqual(t, errs.Load(), int64(3), "each failed attempt reported")
}
