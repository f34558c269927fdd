package dashboard

import (
	"errors"
	"strings"

	"github.com/redschema/redschema/keys"
)

// ErrInvalid is returned by New for a bad option.
var ErrInvalid = errors.New("dashboard: invalid option")

// leftOut splits the error of an Inspector's overview that leaves a key
// of another type out (keys.ErrCorrupt) into one line per key, for the
// page to list beside what was read, from any other error, which fails
// the page.
func leftOut(err error) ([]string, error) {
	if err == nil {
		return nil, nil
	}
	if !errors.Is(err, keys.ErrCorrupt) {
		return nil, err
	}
	return strings.Split(err.Error(), "\n"), nil
}
