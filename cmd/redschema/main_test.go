package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSchema(t *testing.T) {
	var out bytes.Buffer
	code, err := run(context.Background(), []string{"schema", "-prefix", "ha:", "-layout", "seed", "-owner", "lock"}, &out)
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Contains(t, out.String(), "| Key pattern | Type | TTL | DB | Package | Description |")
	assert.Contains(t, out.String(), "`ha:cron:last-run:{{job_name}}`")
	assert.NotContains(t, out.String(), "| session |")

	out.Reset()
	_, err = run(context.Background(), []string{"schema", "-no-tags"}, &out)
	require.NoError(t, err)
	assert.Contains(t, out.String(), "`presence:{user_id}`")

	out.Reset()
	_, err = run(context.Background(), []string{"schema", "-json", "-prefix", "ha:", "-layout", "seed", "-owner", "lock"}, &out)
	require.NoError(t, err)
	type entry struct { // the fields of keys.Registry.JSON this test reads
		Key        string   `json:"key"`
		Template   string   `json:"template"`
		Type       string   `json:"type"`
		Owner      string   `json:"owner"`
		TTLNote    string   `json:"ttl_note"`
		Persistent string   `json:"persistent"`
		Params     []string `json:"params"`
		DB         *int     `json:"db"`
	}
	var entries []entry
	require.NoError(t, json.Unmarshal(out.Bytes(), &entries))
	require.NotEmpty(t, entries)
	var cron *entry
	for i, e := range entries {
		assert.Equal(t, "lock", e.Owner, "only lock's patterns")
		if e.Template == "cron:last-run:{job_name}" {
			cron = &entries[i]
		}
	}
	require.NotNil(t, cron, "the cron last-run pattern is listed")
	assert.Equal(t, "ha:cron:last-run:{{job_name}}", cron.Key)
	assert.Equal(t, "string", cron.Type)
	require.NotNil(t, cron.DB)
	assert.Equal(t, 6, *cron.DB, "seed 001 puts locks in DB 6")
	assert.Equal(t, []string{"job_name"}, cron.Params)
	assert.NotEmpty(t, cron.Persistent+cron.TTLNote, "why it lives as long as it does")
}

func TestAudit(t *testing.T) {
	m := miniredis.RunT(t)
	require.NoError(t, m.Set("app:presence:{42}", `{"status":"online"}`))
	m.SetTTL("app:presence:{42}", time.Minute)
	var out bytes.Buffer
	code, err := run(context.Background(), []string{"audit", "-url", "redis://" + m.Addr(), "-prefix", "app:"}, &out)
	require.NoError(t, err)
	assert.Equal(t, 0, code, out.String())
	assert.Contains(t, out.String(), "1 keys scanned")

	require.NoError(t, m.Set("app:presence:{43}", "{}")) // no TTL
	require.NoError(t, m.Set("app:stray", "x"))
	out.Reset()
	code, err = run(context.Background(), []string{"audit", "-url", "redis://" + m.Addr(), "-prefix", "app:"}, &out)
	require.NoError(t, err)
	assert.Equal(t, 1, code)
	assert.Contains(t, out.String(), `1 "presence:{user_id}" keys have no TTL`)
	assert.Contains(t, out.String(), "1 keys match no pattern")
}

// With -layout seed, audit visits every database of the layout and finds
// a key outside its area's database.
func TestAuditLayout(t *testing.T) {
	m := miniredis.RunT(t)
	require.NoError(t, m.DB(6).Set("lock:file:{a.pdf}", "o:1:60000"))
	m.DB(6).SetTTL("lock:file:{a.pdf}", time.Minute)
	var out bytes.Buffer
	code, err := run(context.Background(), []string{"audit", "-url", "redis://" + m.Addr(), "-layout", "seed"}, &out)
	require.NoError(t, err)
	assert.Equal(t, 0, code, out.String())
	for _, db := range []string{"DB 0:", "DB 5:", "DB 6: 1 keys scanned", "DB 7:"} {
		assert.Contains(t, out.String(), db)
	}
	assert.NotContains(t, out.String(), "session:index", "only patterns with keys are listed")

	require.NoError(t, m.DB(0).Set("lock:file:{b.pdf}", "o:1:60000"))
	m.DB(0).SetTTL("lock:file:{b.pdf}", time.Minute)
	out.Reset()
	code, err = run(context.Background(), []string{"audit", "-url", "redis://" + m.Addr(), "-layout", "seed"}, &out)
	require.NoError(t, err)
	assert.Equal(t, 1, code)
	assert.Contains(t, out.String(), "DB 0: 1 \"lock:file:{file_id}\" keys are outside DB 6")
}

func TestUsageErrors(t *testing.T) {
	t.Setenv("REDIS_URL", "")
	for _, args := range [][]string{nil, {"nope"}, {"audit", "-url", ""}, {"schema", "-prefix", "a{b"}, {"audit", "-url", "bad://x"}, {"schema", "-bogus"}} {
		var out bytes.Buffer
		code, err := run(context.Background(), args, &out)
		assert.Equal(t, 2, code, strings.Join(args, " "))
		assert.Error(t, err)
	}
}
