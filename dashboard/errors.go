package dashboard

import "errors"

// ErrInvalid is returned by New for a bad option.
var ErrInvalid = errors.New("dashboard: invalid option")
