// Command sensor-collector is seed 003's collector agent in one process:
// an embedded MQTT broker, simulated motion, temperature, illuminance and
// pressure sensors publishing on automation/raw/{type}/{location}, the
// collector writing them to Redis in batches, then the seed's queries as
// its occupancy, light and behaviour agents ask them, and an audit of the
// keyspace against the registry.
//
// Every key is under KEY_PREFIX (default "collector:", so that the audit
// covers this program's keys only on a shared server; set it empty for the
// seed's bare keys).
//
// It is a module of its own (it needs the MQTT sub-module and a broker):
//
//	cd examples/sensor-collector && go run .                 # embedded Redis
//	REDIS_URL=redis://127.0.0.1:6379/0 go run .
//	REDIS_URL=127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003 go run .
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math"
	"net"
	"os"
	"sync"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"

	"github.com/redschema/redschema/connect"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/sensor"
	"github.com/redschema/redschema/sensor/mqtt"
)

func main() {
	prefix, ok := os.LookupEnv("KEY_PREFIX")
	if !ok {
		prefix = "collector:"
	}
	if err := run(prefix, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run collects an hour of readings and answers the agents' questions,
// with every key under prefix.
func run(prefix string, w io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rdb, closeRedis, err := connect.FromEnv(ctx, w)
	if err != nil {
		return err
	}
	defer closeRedis()

	// The broker, on a free loopback port.
	srv, url, err := startBroker()
	if err != nil {
		return err
	}
	defer srv.Close()
	fmt.Fprintln(w, "mqtt broker:", url)

	ns := keys.Namespace{Prefix: prefix}
	sensors, err := sensor.New(rdb, sensor.WithNamespace(ns))
	if err != nil {
		return err
	}
	col, err := mqtt.New(url, sensors, mqtt.WithBatch(200, 50*time.Millisecond))
	if err != nil {
		return err
	}
	cctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- col.Run(cctx) }()
	// On every way out, the collector stops writing before the client
	// closes.
	stopCollector := sync.OnceValue(func() error { stop(); return <-done })
	defer stopCollector()
	if err := waitFor(ctx, func() bool { return col.Stats().Subscriptions > 0 }); err != nil {
		return fmt.Errorf("collector never subscribed: %w", err)
	}

	// The last hour of four sensors, one reading a minute each, published
	// as the seed's Home Assistant bridge would.
	now := time.Now()
	n := 0
	pub := func(topic, payload string) error {
		n++
		return srv.Publish(topic, []byte(payload), false, 1)
	}
	for i := 60; i >= 0; i-- {
		at := now.Add(-time.Duration(i) * time.Minute).UTC().Format(time.RFC3339Nano)
		motion := "off"
		if i == 4 || i == 25 || i == 26 { // someone in the study 4 and 25 minutes ago
			motion = "on"
		}
		temp := 21 + math.Sin(float64(i)/10)
		lux := 300 + 5*float64(60-i)
		for _, m := range [][2]string{
			{"automation/raw/motion/study", fmt.Sprintf(`{"timestamp":%q,"state":%q,"entity_id":"binary_sensor.motion_study","sequence":%d}`, at, motion, 60-i)},
			{"automation/raw/temperature/living_room", fmt.Sprintf(`{"timestamp":%q,"value":%.1f,"unit":"°C"}`, at, temp)},
			{"automation/raw/illuminance/living_room", fmt.Sprintf(`{"timestamp":%q,"value":%.0f,"unit":"lux"}`, at, lux)},
			{"automation/raw/pressure/kitchen", fmt.Sprintf(`{"timestamp":%q,"value":%.2f,"unit":"hPa","trend":"stable"}`, at, 1013.25-float64(i)/100)},
		} {
			if err := pub(m[0], m[1]); err != nil {
				return err
			}
		}
	}
	if err := waitFor(ctx, func() bool { return col.Stats().Ingested == uint64(n) }); err != nil {
		return fmt.Errorf("readings not all written (%+v): %w", col.Stats(), err)
	}
	if err := stopCollector(); err != nil {
		return err
	}
	st := col.Stats()
	fmt.Fprintf(w, "collector: %d messages received, %d readings written, %d dropped, %d malformed\n\n", st.Received, st.Ingested, st.Dropped, st.Malformed)

	// The occupancy agent.
	fmt.Fprintln(w, "occupancy agent")
	recent, err := sensors.Latest(ctx, sensor.Motion, "study", 10)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Recent motion events in the study: %d, newest %s %s\n", len(recent), recent[0].State, recent[0].Time.Local().Format("15:04"))
	in, err := sensors.MotionWithin(ctx, "study", 10*time.Minute)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "Has there been motion in the study in the last 10 minutes?", in)
	since, err := sensors.SinceMotion(ctx, "study")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "When was the last motion in the study? %v ago\n", since.Round(time.Minute))
	// The light agent.
	fmt.Fprintln(w, "light agent")
	temps, err := sensors.Latest(ctx, sensor.Temperature, "living_room", 5)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Recent temperature readings in the living room:")
	for _, r := range temps {
		fmt.Fprintf(w, " %.1f", r.Value)
	}
	fmt.Fprintln(w)
	t, err := sensors.Current(ctx, sensor.Temperature, "living_room")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "What's the current temperature in the living room? %.1f %s\n", t.Value, t.Unit)
	trend, err := sensors.Aggregate(ctx, sensor.Illuminance, "living_room", now.Add(-time.Hour), now, 15*time.Minute, sensor.AutoTier)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "What was the illuminance trend in the last hour? (%s tier)\n", trend.Tier)
	for _, b := range trend.Buckets {
		fmt.Fprintf(w, "  %s  %2d readings  avg %.0f lux (min %.0f, max %.0f)\n", b.Start.Local().Format("15:04"), b.Count, b.Avg, b.Min, b.Max)
	}
	// The behaviour agent.
	fmt.Fprintln(w, "behaviour agent")
	y, m, d := now.Date()
	midnight := time.Date(y, m, d, 0, 0, 0, 0, time.Local)
	today, err := sensors.Since(ctx, sensor.Motion, "study", midnight, 0)
	if err != nil {
		return err
	}
	on := 0
	for _, r := range today {
		if r.State == sensor.On {
			on++
		}
	}
	fmt.Fprintf(w, "All motion events in the study today: %d events since 00:00, %d of them motion\n", len(today), on)
	// An episode: from the first "on" of a run of motion to the "off"
	// that ends it, among the last hour's events.
	hour, err := sensors.Since(ctx, sensor.Motion, "study", now.Add(-time.Hour), 0)
	if err != nil {
		return err
	}
	var from, to time.Time
	for _, r := range hour {
		if r.State == sensor.On && from.IsZero() {
			from = r.Time
		} else if r.State == sensor.Off && !from.IsZero() {
			to = r.Time
			break
		}
	}
	if to.IsZero() {
		return fmt.Errorf("no motion episode in the study's last hour (%d events)", len(hour))
	}
	// The seed reads both types with one ZRANGEBYSCORE of the shared
	// sorted set; here each type is one call, told apart on the server.
	fmt.Fprintf(w, "Environmental conditions in the living room during the episode %s-%s:\n", from.Local().Format("15:04"), to.Local().Format("15:04"))
	for _, typ := range []string{sensor.Temperature, sensor.Illuminance} {
		rs, err := sensors.Range(ctx, typ, "living_room", from, to, 0)
		if err != nil {
			return err
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, r := range rs {
			lo, hi = math.Min(lo, r.Value), math.Max(hi, r.Value)
		}
		fmt.Fprintf(w, "  %-11s %d readings, %.1f to %.1f %s\n", typ, len(rs), lo, hi, rs[0].Unit)
	}

	// Discovery, without KEYS.
	types, err := sensors.Types(ctx, "kitchen")
	if err != nil {
		return err
	}
	locs, err := sensors.Locations(ctx)
	if err != nil {
		return err
	}
	p, err := sensors.Current(ctx, "pressure", "kitchen")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Sensors in the kitchen: %v; locations: %v; kitchen pressure %s\n", types, locs, p.Data)
	last10, err := sensors.Latest(ctx, "pressure", "kitchen", 10)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Last 10 pressure readings in the kitchen: %.2f ... %.2f hPa\n", last10[len(last10)-1].Value, last10[0].Value)

	reg, err := keys.Compose(sensor.Schema())
	if err != nil {
		return err
	}
	rep, err := reg.Audit(ctx, rdb, keys.AuditOptions{Namespace: ns})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\naudit of %q: %d keys, %d problems\n", prefix, rep.Scanned, len(rep.Problems()))
	for _, p := range rep.Problems() {
		fmt.Fprintln(w, "  problem:", p)
	}
	return nil
}

// startBroker starts an embedded MQTT broker on a free loopback port.
func startBroker() (*mochi.Server, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	srv := mochi.New(&mochi.Options{InlineClient: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := srv.AddHook(new(auth.AllowHook), nil); err != nil {
		return nil, "", err
	}
	if err := srv.AddListener(listeners.NewTCP(listeners.Config{ID: "tcp", Address: addr})); err != nil {
		return nil, "", err
	}
	if err := srv.Serve(); err != nil {
		return nil, "", err
	}
	return srv, "tcp://" + addr, nil
}

func waitFor(ctx context.Context, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}
