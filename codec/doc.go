// Package codec is the value encoding that redschema packages use for the
// caller's payload types.
//
// The packages that store the caller's values (queue's job payloads,
// cache's entries, pubsub's event payloads) take a WithCodec option; JSON
// is the default everywhere. Decode is how a package reads a value back.
//
//	var p Payload
//	err := codec.Decode(nil, key, data, &p) // nil: JSON
//	if errors.Is(err, keys.ErrCorrupt) {
//		// data at key is not a Payload; err names the key
//	}
//
// # Guarantees
//
//   - A nil Codec means JSON; the zero JSON value is ready to use.
//   - A value that does not decode is a *keys.CorruptError naming the key
//     (errors.Is(err, keys.ErrCorrupt)); a value that decodes gives nil.
package codec
