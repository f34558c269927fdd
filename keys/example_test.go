package keys_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/keys"
)

func Example() {
	sessions := keys.MustCompile(keys.Pattern{
		Template: "session:user:{user_id}:{session_id}",
		Type:     keys.Hash,
		TTL:      time.Hour,
		Tag:      "user_id",
		Owner:    "session",
		Area:     keys.Sessions,
		Purpose:  "one login session",
	})
	index := keys.MustCompile(keys.Pattern{
		Template: "session:index:{user_id}",
		Type:     keys.Set,
		TTLNote:  "outlives the user's last session",
		Tag:      "user_id",
		Owner:    "session",
		Area:     keys.Sessions,
		Purpose:  "session IDs of a user",
	})
	ns := keys.Namespace{Prefix: "ha:"}

	k1, _ := sessions.Key(ns, "42", "s1")
	k2, _ := index.Key(ns, "42")
	fmt.Println(k1, k2, keys.SameSlot(k1, k2))

	// A ':' in an ID is escaped: it cannot pose as a separator.
	k3, _ := sessions.Key(ns, "42:s1", "x")
	fmt.Println(k3)
	args, _ := sessions.Parse(ns, k3)
	fmt.Printf("%q\n", args)

	_, err := sessions.Key(ns, "", "s1")
	fmt.Println(errors.Is(err, keys.ErrInvalid), err)

	// A package returns its templates as its Schema; a program composes
	// the schemas it uses into a registry.
	schema := keys.Schema{Templates: []*keys.Template{sessions, index}}
	reg, err := keys.Compose(schema)
	if err != nil {
		panic(err)
	}
	fmt.Print(reg.Markdown(keys.TableOptions{Namespace: ns, Layout: keys.SeedLayout()}))
	// Output:
	// ha:session:user:{42}:s1 ha:session:index:{42} true
	// ha:session:user:{42%3As1}:x
	// ["42:s1" "x"]
	// true keys: invalid key for "session:user:{user_id}:{session_id}": segment {user_id} is empty
	// | Key pattern | Type | TTL | DB | Package | Description |
	// |---|---|---|---|---|---|
	// | `ha:session:index:{{user_id}}` | SET | outlives the user's last session | 0 | session | session IDs of a user |
	// | `ha:session:user:{{user_id}}:{session_id}` | HASH | 1h | 0 | session | one login session |
}

func ExampleNamespace_noHashTags() {
	presence := keys.MustCompile(keys.Pattern{Template: "presence:{user_id}", Tag: "user_id", Type: keys.String, TTL: time.Minute, Owner: "presence"})
	seed, _ := presence.Key(keys.Namespace{NoHashTags: true}, "12345")
	tagged, _ := presence.Key(keys.Namespace{}, "12345")
	fmt.Println(seed, tagged)
	// Output: presence:12345 presence:{12345}
}

func ExampleTemplate_Match() {
	meta := keys.MustCompile(keys.Pattern{Template: "meta:{sensor_type}:{location}", Tag: "location", Type: keys.Hash, TTL: 24 * time.Hour, Owner: "sensor"})
	fmt.Println(meta.Match(keys.Namespace{}, map[string]string{"location": "kitchen"}))
	// Output: meta:*:{kitchen}
}

func ExampleSlot() {
	fmt.Println(keys.Slot("presence:{12345}") == keys.Slot("connections:{12345}"))
	fmt.Println(keys.Slot("foo"))
	// Output:
	// true
	// 12182
}

// A collection is read a page at a time: Inspect returns the first page,
// Inspect with each page's Next for the one after, until Next is empty.
func ExampleRegistry_Inspect_pages() {
	srv, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer c.Close()
	ctx := context.Background()

	reg := &keys.Registry{}
	log := reg.MustRegister(keys.Pattern{Template: "log:{page}", Type: keys.List, TTL: time.Hour, Owner: "demo", Purpose: "visits"})
	reg.SetDecoder(log, keys.ListDecoder(func(_ keys.Ref, s string) (any, error) { return s, nil }))
	ns := keys.Namespace{Prefix: "app:"}
	k, _ := log.Key(ns, "home")
	for i := 0; i < 250; i++ {
		c.RPush(ctx, k, i)
	}

	cursor := ""
	for {
		in, err := reg.Inspect(ctx, c, ns, k, cursor)
		if err != nil {
			panic(err)
		}
		page := in.Value.(keys.Collection)
		fmt.Printf("from %q: %d of %d, next %q\n", cursor, len(page.Items), page.Len, page.Next)
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	// Output:
	// from "": 100 of 250, next "100"
	// from "100": 100 of 250, next "200"
	// from "200": 50 of 250, next ""
}
