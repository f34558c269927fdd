package pubsub

import "github.com/redschema/redschema/keys"

// channelTemplate is the one channel pattern of the package: every
// Topic's channel is built from it with Template.Key, so its segments are
// validated and escaped like key segments.
var channelTemplate = keys.MustCompile(keys.Pattern{
	Template: "pubsub:{domain}:{event_type}",
	Type:     keys.Channel,
	Owner:    "pubsub",
	Area:     keys.PubSub,
	Purpose:  "typed events: JSON envelope {event, timestamp, payload, source}",
	Seed:     "001 §6",
})

// Schema returns the package's key and channel patterns with the decoder
// of each key's values: compose it with the other packages' a program
// uses into a keys.Registry (keys.Compose) to audit, inspect or document
// their keyspace.
func Schema() keys.Schema {
	return keys.Schema{
		Templates: []*keys.Template{channelTemplate},
		Decoders:  nil,
	}
}
