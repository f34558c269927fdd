package pubsub

import "github.com/redschema/redschema/keys"

// channelTemplate is the one channel pattern of the package: every
// Topic's channel is built from it with Template.Key, so its segments are
// validated and escaped like key segments.
var channelTemplate = keys.Register(keys.Pattern{
	Template: "pubsub:{domain}:{event_type}",
	Type:     keys.Channel,
	Owner:    "pubsub",
	Area:     keys.PubSub,
	Purpose:  "typed events: JSON envelope {event, timestamp, payload, source}",
	Seed:     "001 §6",
})
