// Package mqtt is the sensor collector's agent: it subscribes to the raw
// sensor topics on an MQTT broker (automation/raw/{type}/{location} by
// default), parses each message into a sensor.Reading, and writes them
// to Redis with sensor.Client.IngestBatch, in the collector's layout
// (https://github.com/redschema/redschema/blob/main/docs/sensor-collector.md).
//
//	sensors, err := sensor.New(rdb)
//	...
//	c, err := mqtt.New("tcp://127.0.0.1:1883", sensors)
//	...
//	err = c.Run(ctx) // until ctx is done
//
// It is a module of its own (github.com/redschema/redschema/sensor/mqtt)
// so that the sensor package never depends on an MQTT client. It uses
// github.com/eclipse/paho.mqtt.golang.
//
// # Guarantees
//
//   - Resubscribes after every reconnect: the MQTT client reconnects with
//     backoff (a lost connection, a broker restart), and each new
//     connection subscribes again, with a clean session. paho does not
//     resubscribe by itself
//     (https://github.com/eclipse-paho/paho.mqtt.golang/issues/22).
//   - Bounded memory: parsed readings wait in a buffer of WithBuffer
//     readings; past it, messages are dropped and counted
//     (Stats.Dropped), and the MQTT client is never blocked.
//   - Batched: readings go to Redis in batches of up to WithBatch's size,
//     at least every batch interval: one round trip per batch.
//   - Arrival order: messages are handled one at a time, in the order the
//     MQTT client receives them (a broker delivers one publisher's
//     messages on a topic in the order they were published, at QoS 1 and
//     2), and written in that order: a batch that fails on the wire holds
//     back those after it until it is written. So a generic sensor's list
//     is newest first by arrival, its head (LINDEX 0) the last message.
//     The handler never blocks: a full buffer drops the message.
//   - At least once into Redis for what is buffered: a batch that fails
//     on the wire is retried with backoff with the same reading IDs, so
//     a retry never stores a reading twice; a reading Redis refuses
//     (sensor.ErrInvalid, keys.ErrCorrupt) is counted in Stats.Failed and
//     skipped. Messages published while the collector is not subscribed,
//     or dropped from a full buffer, are lost (QoS 1 is acknowledged on
//     receipt).
//   - Malformed messages are counted (Stats.Malformed), reported to
//     WithErrorHandler, and skipped.
//
// The sensor package's long form, with the layout this collector writes,
// is https://github.com/redschema/redschema/blob/main/docs/sensor.md.
package mqtt
