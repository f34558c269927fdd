package call

import (
	"fmt"
	"strings"
)

// BatchError reports the items of a batch call that failed (queue's
// EnqueueBatch, sensor's IngestBatch): Errs has one entry per item, nil
// for an item that succeeded. It matches every item's error with
// errors.Is and errors.As. The packages export it as their BatchError (an
// alias), so errors.As(err, &be) with be a *queue.BatchError or a
// *sensor.BatchError finds it.
type BatchError struct {
	Errs []error

	pkg, item, failed string // wording of Error; see Pkg.Batch
}

// Batch returns a *BatchError over errs whose text names the items as
// item ("item", "reading") and what happened to them as failed ("not
// written"):
//
//	sensor: 2 of 5 readings not written: reading 1: …; reading 3: …
func (p *Pkg) Batch(errs []error, item, failed string) *BatchError {
	return &BatchError{Errs: errs, pkg: p.Name, item: item, failed: failed}
}

// Error summarises the failed items (the first three, and a count). A
// BatchError not made by Pkg.Batch reads "batch: n of m items failed: …".
func (e *BatchError) Error() string {
	pkg, item, failed := e.pkg, e.item, e.failed
	if pkg == "" {
		pkg = "batch"
	}
	if item == "" {
		item = "item"
	}
	if failed == "" {
		failed = "failed"
	}
	var b strings.Builder
	n := 0
	for i, err := range e.Errs {
		if err == nil {
			continue
		}
		if n < 3 {
			if n > 0 {
				b.WriteString("; ")
			}
			fmt.Fprintf(&b, "%s %d: %v", item, i, err)
		}
		n++
	}
	if n > 3 {
		fmt.Fprintf(&b, "; and %d more", n-3)
	}
	return fmt.Sprintf("%s: %d of %d %ss %s: %s", pkg, n, len(e.Errs), item, failed, b.String())
}

// Unwrap returns the items' errors (the nil ones left out).
func (e *BatchError) Unwrap() []error {
	var out []error
	for _, err := range e.Errs {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}
