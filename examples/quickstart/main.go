// Command quickstart declares a key pattern, writes and reads a key built
// from it, audits the keyspace, and prints the schema table.
//
//	go run ./examples/quickstart                 # embedded Redis
//	REDIS_URL=redis://127.0.0.1:6379/0 go run ./examples/quickstart
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/redschema/redschema/internal/demo"
	"github.com/redschema/redschema/keys"
)

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	ctx := context.Background()
	rdb, closeRedis, err := demo.Connect(os.Stdout)
	if err != nil {
		return err
	}
	defer closeRedis()

	// A registry of our own keeps the table to this program's patterns;
	// library packages register in keys.Default().
	reg := keys.NewRegistry()
	greeting, err := reg.Register(keys.Pattern{
		Template: "greeting:{user_id}",
		Type:     keys.String,
		TTL:      time.Hour,
		Tag:      "user_id",
		Owner:    "quickstart",
		Purpose:  "last greeting sent to a user",
	})
	if err != nil {
		return err
	}
	ns := keys.Namespace{Prefix: "quickstart:"}

	key, err := greeting.Key(ns, "user:42") // the ':' is escaped, not a separator
	if err != nil {
		return err
	}
	if err := rdb.Set(ctx, key, "hello", greeting.TTL()).Err(); err != nil {
		return err
	}
	val, err := rdb.Get(ctx, key).Result()
	if err != nil {
		return err
	}
	ttl, err := rdb.TTL(ctx, key).Result()
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s = %q (ttl %v, cluster slot %d)\n", key, val, ttl, keys.Slot(key))

	_, err = greeting.Key(ns, "")
	fmt.Println("an empty ID is refused:", err)

	rep, err := reg.Audit(ctx, rdb, keys.AuditOptions{Namespace: ns})
	if err != nil {
		return err
	}
	fmt.Printf("audit: %d keys scanned, problems: %d\n\n", rep.Scanned, len(rep.Problems()))
	fmt.Print(reg.Markdown(keys.TableOptions{Namespace: ns}))
	return rdb.Del(ctx, key).Err()
}
