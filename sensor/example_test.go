package sensor_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/sensor"
)

func connect() (*redis.Client, func()) {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	return rdb, func() { _ = rdb.Close(); m.Close() }
}

func Example() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()
	sensors, err := sensor.New(rdb)
	if err != nil {
		panic(err)
	}
	now := time.Now()
	_, err = sensors.IngestBatch(ctx, []sensor.Reading{
		sensor.MotionReading("study", "binary_sensor.motion_study", true, 42, now.Add(-3*time.Minute)),
		sensor.TemperatureReading("living_room", 22.5, "°C", now.Add(-time.Minute)),
		sensor.IlluminanceReading("living_room", 450, "lux", now.Add(-time.Minute)),
		sensor.GenericReading("pressure", "kitchen", 1013.25, "hPa", now),
	})
	if err != nil {
		panic(err)
	}

	// The occupancy agent: motion in the study in the last 10 minutes?
	in, _ := sensors.MotionWithin(ctx, "study", 10*time.Minute)
	fmt.Println("motion in the study:", in)
	// The light agent: the current temperature in the living room.
	t, _ := sensors.Current(ctx, sensor.Temperature, "living_room")
	fmt.Println("living room:", t.Value, t.Unit)
	// Discovery, without KEYS.
	types, _ := sensors.Types(ctx, "living_room")
	fmt.Println("living room sensors:", types)
	locs, _ := sensors.Locations(ctx)
	fmt.Println("locations:", locs)
	// Output:
	// motion in the study: true
	// living room: 22.5 °C
	// living room sensors: [illuminance temperature]
	// locations: [kitchen living_room study]
}

// Aggregates per bucket, from the rollup tier that fits.
func ExampleClient_Aggregate() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()
	sensors, _ := sensor.New(rdb)
	hour := time.Now().Truncate(time.Hour)
	if time.Since(hour) < 10*time.Minute {
		hour = hour.Add(-time.Hour) // a whole hour of readings, none in the future
	}
	for i, v := range []float64{20, 21, 23, 22} {
		r := sensor.TemperatureReading("hall", v, "°C", hour.Add(time.Duration(i)*time.Minute))
		if _, err := sensors.Ingest(ctx, r); err != nil {
			panic(err)
		}
	}
	s, err := sensors.Aggregate(ctx, sensor.Temperature, "hall", hour, hour, time.Hour, sensor.AutoTier)
	if err != nil {
		panic(err)
	}
	b := s.Buckets[0]
	fmt.Printf("tier %s: count %d, min %v, max %v, avg %v, first %v, last %v\n", s.Tier, b.Count, b.Min, b.Max, b.Avg, b.First, b.Last)
	// Output:
	// tier hour: count 4, min 20, max 23, avg 21.5, first 20, last 22
}

// An admin page reads the locations, a location's types, a type's latest
// readings and its hourly series in one pipeline, through an Inspector.
func ExampleNewInspector() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()
	sensors, _ := sensor.New(rdb)
	now := time.Now()
	for i, v := range []float64{21, 22} {
		r := sensor.TemperatureReading("hall", v, "°C", now.Add(time.Duration(i-2)*time.Minute))
		if _, err := sensors.Ingest(ctx, r); err != nil {
			panic(err)
		}
	}
	in, err := sensor.NewInspector(rdb)
	if err != nil {
		panic(err)
	}
	v, err := in.ReadView(ctx, sensor.Temperature, "hall", 10, now.Add(-24*time.Hour), now, time.Hour)
	if err != nil {
		panic(err)
	}
	fmt.Println(v.Locations, v.Types, len(v.Latest), v.Latest[0].Value)
	// Output:
	// [hall] [temperature] 2 22
}

// The duplicate policy decides what a second reading of a sensor at the
// same time does; readings older than the retention are dropped.
func ExampleWithDuplicates() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()
	sensors, _ := sensor.New(rdb, sensor.WithDuplicates(sensor.FirstWins))
	at := time.Now().Add(-time.Minute)
	first, _ := sensors.Ingest(ctx, sensor.TemperatureReading("hall", 20, "°C", at))
	second, _ := sensors.Ingest(ctx, sensor.TemperatureReading("hall", 21, "°C", at))
	old, _ := sensors.Ingest(ctx, sensor.TemperatureReading("hall", 19, "°C", at.Add(-48*time.Hour)))
	fmt.Println(first.Outcome, second.Outcome, old.Outcome)
	// Output:
	// stored duplicate late
}

// With hash tags off, the keys are the sensor collector's, byte for byte.
func ExampleWithNamespace() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()
	sensors, _ := sensor.New(rdb, sensor.WithNamespace(keys.Namespace{NoHashTags: true}))
	_, _ = sensors.Ingest(ctx, sensor.MotionReading("study", "binary_sensor.motion_study", true, 1, time.Now()))
	_, _ = sensors.Ingest(ctx, sensor.GenericReading("pressure", "kitchen", 1013.25, "hPa", time.Now()))
	for _, k := range []string{"sensor:motion:study", "meta:motion:study", "sensor:pressure:kitchen", "meta:pressure:kitchen"} {
		fmt.Println(k, rdb.Type(ctx, k).Val())
	}
	_, err := sensors.Ingest(ctx, sensor.GenericReading("environmental", "kitchen", 1, "", time.Now()))
	fmt.Println(errors.Is(err, sensor.ErrInvalid))
	// Output:
	// sensor:motion:study zset
	// meta:motion:study hash
	// sensor:pressure:kitchen list
	// meta:pressure:kitchen hash
	// true
}

// The collector's own service writes its keys but no discovery index:
// Reindex finds its readings (SCAN, about 1,000 keys a call) so that
// Types and Locations list them.
func ExampleClient_Reindex() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()
	sensors, err := sensor.New(rdb, sensor.WithNamespace(keys.Namespace{NoHashTags: true}), sensor.WithoutReadingIDs())
	if err != nil {
		panic(err)
	}
	// The collector stores a motion event and a pressure reading.
	ms := time.Now().Add(-time.Minute).UnixMilli()
	ts := time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
	rdb.ZAdd(ctx, "sensor:motion:study", redis.Z{Score: float64(ms),
		Member: fmt.Sprintf(`{"timestamp":%q,"state":"on","entity_id":"binary_sensor.motion_study","sequence":42,"collected_at":%d}`, ts, ms)})
	rdb.LPush(ctx, "sensor:pressure:kitchen",
		fmt.Sprintf(`{"data":{"value":1013.25,"unit":"hPa"},"original_topic":"automation/raw/pressure/kitchen","timestamp":%q,"collected_at":%d}`, ts, ms))

	locs, _ := sensors.Locations(ctx)
	fmt.Println("before:", locs)
	for cur := ""; ; {
		res, err := sensors.Reindex(ctx, cur)
		if err != nil {
			panic(err)
		}
		for _, e := range res.Skipped {
			fmt.Println("skipped:", e)
		}
		if cur = res.Next; cur == "" {
			break
		}
	}
	locs, _ = sensors.Locations(ctx)
	fmt.Println("after:", locs)
	p, _ := sensors.Current(ctx, "pressure", "kitchen")
	fmt.Println("kitchen:", p.Value, p.Unit)
	// Output:
	// before: []
	// after: [kitchen study]
	// kitchen: 1013.25 hPa
}
