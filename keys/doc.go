// Package keys is the one place in redschema that spells a Redis key.
//
// Every package declares its key patterns as Templates: a pattern such as
// "session:user:{user_id}:{session_id}" with its Redis type, default TTL
// (or the reason a key may persist), owning package, area and purpose,
// and returns them with their values' decoders as its Schema. A program
// composes the schemas it uses into a Registry (Compose; there is no
// global one), which prints the schema as a Markdown table, audits a live
// Redis against it with SCAN and decodes a key's value. A Namespace adds
// a prefix ("ha:") and says whether hash tags are written; a Layout maps
// areas to databases.
//
//	sessions := keys.MustCompile(keys.Pattern{
//		Template: "session:user:{user_id}:{session_id}", Tag: "user_id",
//		Type: keys.Hash, TTL: time.Hour, Owner: "session", Area: keys.Sessions,
//		Purpose: "one login session",
//	})
//	k, err := sessions.Key(keys.Namespace{Prefix: "ha:"}, "42", "s1") // "ha:session:user:{42}:s1"
//	reg, err := keys.Compose(keys.Schema{Templates: []*keys.Template{sessions}}, lock.Schema())
//	fmt.Print(reg.Markdown(keys.TableOptions{Layout: keys.SeedLayout()}))
//
// # Guarantees
//
//   - Injective: a key splits back into exactly its values (Template.Parse);
//     "a:b"+"c" and "a"+"b:c" are different keys.
//   - Canonical: Template.Parse accepts only the encoding Template.Key
//     writes, so a key has one decoding.
//   - Slot-stable: user input can never add, close or move a hash tag, so
//     it cannot move a key to another cluster slot.
//   - Glob-safe: encoded values hold no glob character, so Template.Match
//     patterns for SCAN need escaping only in the prefix.
//   - Minimal escaping: only ':', '%', '{', '}', '*', '?', '[', ']', '\' and
//     control bytes are percent-encoded; other IDs are written unchanged.
//   - Checked input: an empty, oversize (maxSegmentLen) or invalid UTF-8
//     value is an error wrapping ErrInvalid, naming the placeholder,
//     before anything is written.
//   - Co-location: the Tag placeholder's value is written in braces
//     ("session:index:{42}"), so an entity's keys share a cluster slot.
//   - Real slots: Slot and SameSlot use Redis's CRC16, so tests check
//     co-location on miniredis too, whose CLUSTER KEYSLOT is a constant.
//   - No migration: tags are on by default, on a standalone server too;
//     Namespace.NoHashTags leaves the braces out (standalone servers only).
//   - One client per database: Layout.Clients builds them from one set of
//     options, keeping their DB for the areas the layout does not place;
//     on a cluster one client in all, and a DB other than 0 is refused.
//   - No KEYS: Registry.Audit scans a namespace with SCAN (every master of
//     a cluster): key counts, missing TTLs, wrong types, memory and the
//     biggest keys per pattern, strays grouped by prefix, in bounded memory.
//   - Bounded reads: Registry.Inspect reads a collection one page of 100 at
//     a time (HSCAN, SSCAN, LRANGE, ZRANGE, XRANGE; Collection.Next is
//     the cursor of the next page), and a record hash only up to 1,024
//     fields, counted first.
//
// The fuzz targets prove the first four. The reference systems whose
// layouts the registered patterns follow, and how close NoHashTags comes
// to their key bytes, are described in
// https://github.com/redschema/redschema/blob/main/docs/README.md.
package keys
