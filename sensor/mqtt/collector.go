package mqtt

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/sensor"
)

// Ingester is where a Collector writes: a *sensor.Client.
type Ingester interface {
	IngestBatch(ctx context.Context, rs []sensor.Reading) ([]sensor.Result, error)
}

var _ Ingester = (*sensor.Client)(nil)

// Collector subscribes to sensor topics on an MQTT broker and writes the
// readings to Redis in batches. Create it with New and start it with Run.
type Collector struct {
	broker  string
	sink    Ingester
	opt     options
	buf     chan sensor.Reading
	running atomic.Bool

	received, malformed, dropped, ingested, failed, connects, subscriptions atomic.Uint64
}

// Stats counts what a Collector did since New.
type Stats struct {
	Received      uint64 // messages delivered by the broker and handled (counted malformed, buffered or dropped)
	Malformed     uint64 // messages the parser refused
	Dropped       uint64 // readings dropped because the buffer was full
	Ingested      uint64 // readings written (any Outcome)
	Failed        uint64 // readings Redis refused (invalid, corrupt key), or still unwritten when Run ended
	Connects      uint64 // connections made to the broker
	Subscriptions uint64 // subscriptions made (one per connection that subscribed)
}

// Stats returns the counters.
func (c *Collector) Stats() Stats {
	// Received first: whatever it counts, the counters read after it
	// account for (handle counts it last).
	return Stats{
		Received: c.received.Load(), Malformed: c.malformed.Load(), Dropped: c.dropped.Load(),
		Ingested: c.ingested.Load(), Failed: c.failed.Load(), Connects: c.connects.Load(), Subscriptions: c.subscriptions.Load(),
	}
}

// Run connects to the broker and collects until ctx is done; it then
// disconnects, writes what the buffer still holds (for at most
// FinalFlush), and returns nil. It returns an error only when the
// Collector is already running.
//
// The connection is kept up by the MQTT client: it reconnects with
// backoff after a lost connection or a broker restart, and every new
// connection subscribes again (a clean session, so the broker keeps no
// state between connections; the client library does not resubscribe on
// its own). Each message is parsed on arrival, one at a time in arrival
// order, given a reading ID, and put in the buffer (or dropped when it is
// full). A writer sends the buffer to Redis in batches of up to the batch
// size, in buffer order, at least every batch interval; a batch that
// fails on the wire (Redis down, a
// failover) is retried with backoff, with the same reading IDs, so that a
// retry never stores a reading twice; a reading Redis refuses (invalid,
// corrupt key) is counted in Failed and skipped.
func (c *Collector) Run(ctx context.Context) error {
	if !c.running.CompareAndSwap(false, true) {
		return pkg.Invalidf("run", "the collector is already running")
	}
	defer c.running.Store(false)
	o := paho.NewClientOptions().AddBroker(c.broker).SetClientID(c.opt.clientID).
		SetCleanSession(true).SetAutoReconnect(true).SetConnectRetry(true).
		SetConnectRetryInterval(200 * time.Millisecond).SetMaxReconnectInterval(2 * time.Second).
		SetConnectTimeout(5 * time.Second).SetKeepAlive(10 * time.Second).
		// One message at a time, in the order the client receives them:
		// handle never blocks, so the client's loop is never held up.
		SetOrderMatters(true)
	if c.opt.user != "" {
		o.SetUsername(c.opt.user).SetPassword(c.opt.pass)
	}
	o.SetOnConnectHandler(func(cl paho.Client) {
		c.connects.Add(1)
		go c.subscribe(ctx, cl)
	})
	o.SetConnectionLostHandler(func(_ paho.Client, err error) {
		c.report(fmt.Errorf("mqtt: connection to %s lost: %w", c.broker, err))
	})
	cl := paho.NewClient(o)
	cl.Connect() // with ConnectRetry, the client keeps trying in the background
	c.write(ctx)
	cl.Disconnect(250)
	return nil
}

// FinalFlush bounds how long Run writes the buffer after ctx is done.
const FinalFlush = 5 * time.Second

// subscribe subscribes on a new connection, trying again while the
// connection holds.
func (c *Collector) subscribe(ctx context.Context, cl paho.Client) {
	filters := map[string]byte{}
	for _, t := range c.opt.topics {
		filters[t] = c.opt.qos
	}
	for attempt := 0; ctx.Err() == nil && cl.IsConnectionOpen(); attempt++ {
		tok := cl.SubscribeMultiple(filters, c.handle)
		if tok.WaitTimeout(10*time.Second) && tok.Error() == nil {
			c.subscriptions.Add(1)
			return
		}
		c.report(fmt.Errorf("mqtt: subscribe to %v: %v", c.opt.topics, tok.Error()))
		if sleep(ctx, backoff(attempt)) != nil {
			return
		}
	}
}

// handle parses one message into the buffer; it never blocks. The MQTT
// client calls it for one message at a time, in arrival order
// (SetOrderMatters), so the buffer, the batches and a generic sensor's
// list keep that order. It counts the message received last, once it is
// counted malformed or dropped or is in the buffer, so that Stats never
// shows a message received that no other counter accounts for yet.
func (c *Collector) handle(_ paho.Client, m paho.Message) {
	defer c.received.Add(1)
	r, err := c.opt.parser(m.Topic(), m.Payload(), time.Now())
	if err != nil {
		c.malformed.Add(1)
		c.report(err)
		return
	}
	if r.ID == "" {
		r.ID = newID()
	}
	select {
	case c.buf <- r:
	default:
		c.dropped.Add(1)
	}
}

// write sends the buffer to Redis in batches until ctx is done, then
// writes what is left for at most FinalFlush.
func (c *Collector) write(ctx context.Context) {
	tick := time.NewTicker(c.opt.interval)
	defer tick.Stop()
	pending := make([]sensor.Reading, 0, c.opt.batch)
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), FinalFlush)
			defer cancel()
			for {
				select {
				case r := <-c.buf:
					pending = append(pending, r)
					if len(pending) < c.opt.batch {
						continue
					}
				default:
				}
				if len(pending) == 0 {
					return
				}
				pending = c.flush(fctx, pending)
				if fctx.Err() != nil {
					c.failed.Add(uint64(len(pending) + len(c.buf)))
					return
				}
			}
		case r := <-c.buf:
			if pending = append(pending, r); len(pending) >= c.opt.batch {
				pending = c.flush(ctx, pending)
			}
		case <-tick.C:
			if len(pending) > 0 {
				pending = c.flush(ctx, pending)
			}
		}
	}
}

// flush writes rs, retrying what failed on the wire until it is written
// or ctx is done; it returns what is left (empty, or what ctx cut off),
// reusing rs's array.
func (c *Collector) flush(ctx context.Context, rs []sensor.Reading) []sensor.Reading {
	for attempt := 0; len(rs) > 0; attempt++ {
		res, err := c.sink.IngestBatch(ctx, rs)
		if err == nil {
			c.ingested.Add(uint64(len(rs)))
			return rs[:0]
		}
		var be *sensor.BatchError
		if !errors.As(err, &be) || len(be.Errs) != len(rs) {
			be = &sensor.BatchError{Errs: make([]error, len(rs))}
			for i := range be.Errs {
				be.Errs[i] = err
			}
		}
		retry := rs[:0]
		var first error
		for i, e := range be.Errs {
			switch {
			case e == nil && res != nil && res[i].Outcome != 0:
				c.ingested.Add(1)
			case e == nil:
				retry = append(retry, rs[i])
			case errors.Is(e, sensor.ErrInvalid) || errors.Is(e, keys.ErrCorrupt):
				c.failed.Add(1)
				c.report(e)
			default:
				retry = append(retry, rs[i])
				if first == nil {
					first = e
				}
			}
		}
		rs = retry
		if len(rs) == 0 {
			return rs
		}
		c.report(fmt.Errorf("mqtt: %d readings not written, retrying: %w", len(rs), first))
		if sleep(ctx, backoff(attempt)) != nil {
			return rs
		}
	}
	return rs
}

func (c *Collector) report(err error) {
	if c.opt.onError != nil && err != nil {
		c.opt.onError(err)
	}
}

// backoff is 100 ms doubling up to 5 s.
func backoff(attempt int) time.Duration {
	d := 100 * time.Millisecond << min(attempt, 6)
	return min(d, 5*time.Second)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
