package presence

// The package's bounds, for its external tests.
const (
	MaxConnIDLen       = maxConnIDLen
	MaxUsernameLen     = maxUsernameLen
	DefaultMaxMetadata = defaultMetadata
	MaxMetadata        = maxMetadata
	MaxConnections     = maxConnections
	MaxUsers           = maxUsers
	DefaultPipelines   = defaultPipelines
	MaxPipelines       = maxPipelines
	MaxTTL             = maxTTL
	MaxRetention       = maxRetention
	MaxTypingTTL       = maxTypingTTL
)
