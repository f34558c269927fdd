// Package keys is the one place in redschema that spells a Redis key.
//
// Every package declares its key patterns here, in a Registry, with the
// Redis type, default TTL (or the reason a key may persist), owning package,
// area (database) and purpose. The registry prints the schema as a Markdown
// table and audits a live Redis against it with SCAN.
//
// # Templates
//
// A Pattern's Template names its segments, separated by ':'. Literal
// segments are written as they are; "{name}" placeholders fill a whole
// segment:
//
//	session:user:{user_id}:{session_id}
//
// Template.Key builds a key from values given in placeholder order, under a
// Namespace (a prefix such as seed 000's "ha:", and the hash-tag setting).
//
// # Segment encoding
//
// Values are percent-encoded, byte by byte, only where they must be: the
// separator ':', the escape '%', the hash-tag braces '{' '}', the glob
// characters '*' '?' '[' ']' '\', and ASCII control bytes. Everything the
// seed documents put in IDs (letters, digits, "-_.@/", space, non-ASCII
// UTF-8) is written unchanged, so ordinary keys are byte-identical to the
// seeds. The consequences, proven by the fuzz targets:
//
//   - injective: an encoded value never contains ':', and every placeholder
//     is a whole segment, so a key splits back into exactly its values
//     (Template.Parse); "a:b"+"c" and "a"+"b:c" are different keys;
//   - canonical: Unescape accepts only what Escape produces, so every key
//     has one decoding;
//   - slot-stable: user input can never add, close or move a hash tag, so it
//     cannot move a key to another cluster slot;
//   - glob-safe: encoded values contain no glob character, so SCAN MATCH
//     patterns built by Template.Match need escaping only in the prefix.
//
// Values must be non-empty, at most MaxSegmentLen bytes and valid UTF-8;
// otherwise Key returns a *SegmentError (ErrInvalidKey) naming the
// placeholder and the reason, before anything is written.
//
// # Hash tags
//
// A Pattern may name one placeholder as its Tag. The braces go around that
// placeholder's value ("session:index:{42}"), never around a prefix, so keys
// of one entity share a slot while entities spread over the cluster. Keys
// that one script touches together use the same tag value; tests assert it
// with SameSlot, which computes slots with Redis's CRC16 (miniredis's
// CLUSTER KEYSLOT is a constant). Tags are on by default, on a standalone
// server too, so moving to a cluster needs no key migration; set
// Namespace.NoHashTags for keys byte-identical to the seeds on a standalone
// server.
//
// # Databases
//
// A Layout maps areas to database numbers (SeedLayout is seed 001's
// allocation) and Layout.Clients builds one client per database from one
// set of options; on a cluster it collapses to one client and DB 0.
//
// # Audit
//
// Registry.Audit scans a namespace (every master of a cluster) and reports,
// per pattern, the key count, keys without the TTL they should have, keys of
// the wrong type and a MEMORY USAGE sample, plus keys no pattern matches.
package keys
