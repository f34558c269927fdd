package queue

import (
	"errors"

	"github.com/redschema/redschema/internal/call"
)

// Errors returned by this package. Match them with errors.Is: they come
// wrapped in an error that names the operation and the key. A network
// failure, a timeout or a cluster error is returned as such, never as one
// of these.
var (
	// ErrDuplicate: Enqueue refused a job ID that is still live (pending,
	// scheduled or in flight) or inside its uniqueness window; Requeue
	// found the ID live again.
	ErrDuplicate = errors.New("queue: duplicate job")
	// ErrEmpty: TryDequeue found no ready job.
	ErrEmpty = errors.New("queue: no ready job")
	// ErrLeaseLost: Ack, Nack, Release or Extend of a delivery whose lease
	// was recovered (it expired and the job was delivered again or dead
	// lettered) or whose job was deleted or purged. The outcome is not
	// recorded.
	ErrLeaseLost = errors.New("queue: lease lost")
	// ErrNotFound: no job with that ID in the state asked for.
	ErrNotFound = errors.New("queue: job not found")
	// ErrInvalid: bad input (a nil client, an empty or reserved queue
	// name, a bad option, a bound exceeded, a payload that does not
	// encode); nothing was written. A value that cannot be a key segment
	// (a job ID) also matches keys.ErrInvalid.
	ErrInvalid = errors.New("queue: invalid argument")
	// ErrTooLarge: the encoded job exceeds the queue's payload limit.
	// Nothing was written.
	ErrTooLarge = errors.New("queue: payload too large")
	// ErrShutdown is the cause of a handler context cancelled because
	// Run's shutdown grace period ended. A handler that then returns an
	// error has its job released (ready again, no attempt counted) rather
	// than failed.
	ErrShutdown = errors.New("queue: shutting down")
	// ErrCancelled is the cause of a handler context cancelled because
	// Cancel asked for its job to stop; a handler that then returns an
	// error has its job leave the queue as cancelled (not retried).
	// Extend returns it (the lease is extended) for a job Cancel flagged.
	ErrCancelled = errors.New("queue: job cancelled")
	// ErrEventsTrimmed: ReadEvents resumed after an event that is before
	// the events stream's first entry: the stream was trimmed past the
	// reader's position (it keeps about the WithEvents length), so events
	// that followed it may be gone unread. It comes with the events read,
	// from the oldest the stream keeps; resuming after the last of them
	// does not report it again. A reader that keeps state from the events
	// should rebuild it from the queue (List, Stats).
	ErrEventsTrimmed = errors.New("queue: events trimmed before they were read")
	// ErrNotDurable: with WithDurability, a write that was done (the job
	// enqueued, the outcome recorded; the call's result comes with it)
	// but that fewer replicas than asked acknowledged in time, so a
	// failover may still lose it. Sending it again is safe: the writes
	// are idempotent. It is the same error in every package
	// (lock.ErrNotDurable, session.ErrNotDurable).
	ErrNotDurable = call.ErrNotDurable
)

// pkg is the package's error vocabulary for the call layer.
var pkg = &call.Pkg{Name: "queue", ErrInvalid: ErrInvalid}
