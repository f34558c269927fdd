package presence

import "github.com/redschema/redschema/internal/call"

// The package's bounds, for its external tests.
const (
	MaxConnIDLen       = maxConnIDLen
	MaxUsernameLen     = maxUsernameLen
	DefaultMaxMetadata = defaultMetadata
	MaxMetadata        = maxMetadata
	MaxConnections     = maxConnections
	MaxUsers           = maxUsers
	DefaultPipelines   = call.DefaultLanes
	MaxPipelines       = call.MaxLanes
	MaxTTL             = maxTTL
	MaxRetention       = maxRetention
	MaxTypingTTL       = maxTypingTTL
)
