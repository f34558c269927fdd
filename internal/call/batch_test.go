package call_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/call"
)

// TestBatchError checks the shared batch error: its text (the first three
// failures and a count), errors.Is and errors.As through it and through a
// wrapper, and the wording of one not made by Pkg.Batch.
func TestBatchError(t *testing.T) {
	errs := []error{nil, errHeld, nil, pkg.Invalidf("x", "bad"), errGone, errGone, nil}
	err := fmt.Errorf("wrapped: %w", pkg.Batch(errs, "reading", "not written"))
	assert.Equal(t, "wrapped: calltest: 4 of 7 readings not written: reading 1: calltest: held; "+
		"reading 3: calltest: x: invalid argument: bad; reading 4: calltest: not found; and 1 more", err.Error())
	assert.ErrorIs(t, err, errHeld)
	assert.ErrorIs(t, err, errInvalid)
	assert.ErrorIs(t, err, errGone)
	var be *call.BatchError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, errs, be.Errs, "one entry per item, nil for those that succeeded")
	assert.Len(t, be.Unwrap(), 4)
	var ce *call.Error
	require.ErrorAs(t, err, &ce, "an item's own error type is found through it")
	assert.Equal(t, "x", ce.Op)

	bare := &call.BatchError{Errs: []error{nil, errGone}}
	assert.Equal(t, "batch: 1 of 2 items failed: item 1: calltest: not found", bare.Error())
	assert.False(t, errors.Is(&call.BatchError{Errs: []error{nil}}, errGone))
}
