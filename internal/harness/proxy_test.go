package harness_test

import (
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

// sink is a TCP server that counts the bytes it receives.
func sink(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	var got atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					got.Add(int64(n))
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), &got
}

// The CutAfter budget is shared by all connections: concurrent writers
// together deliver exactly n bytes, never more.
func TestProxyCutAfterIsExactAcrossConnections(t *testing.T) {
	target, got := sink(t)
	p := harness.NewProxy(t, target)
	const budget = 1000
	var conns []net.Conn
	for i := 0; i < 32; i++ {
		c, err := net.Dial("tcp", p.Addr())
		require.NoError(t, err)
		defer c.Close()
		_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
		conns = append(conns, c)
	}
	time.Sleep(100 * time.Millisecond) // the proxy has accepted them all
	p.CutAfter(budget)
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			chunk := make([]byte, 64)
			for {
				if _, err := c.Write(chunk); err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	time.Sleep(50 * time.Millisecond) // let the sink read what was delivered
	assert.LessOrEqual(t, got.Load(), int64(budget))
}

// Cuts counts client connections cut by the proxy, once each, and not the
// ones that closed on their own.
func TestProxyCutsCountsConnections(t *testing.T) {
	target, _ := sink(t)
	p := harness.NewProxy(t, target)
	closed, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	_, _ = closed.Write([]byte("x"))
	require.NoError(t, closed.Close())
	live, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer live.Close()
	_, _ = live.Write([]byte("y"))
	time.Sleep(50 * time.Millisecond) // both connections are accepted and the first is gone
	p.CutNow()
	assert.Equal(t, int64(1), p.Cuts())
	_ = live.SetReadDeadline(time.Now().Add(time.Second))
	_, err = io.ReadAll(live)
	assert.NoError(t, err, "the cut connection reads EOF")
}

// LoseReply lets a command run on the server and loses its reply: go-redis
// retries it (so it runs twice), or with MaxRetries -1 reports the broken
// connection. On the cluster every node is reached through the proxy.
func TestProxyLoseReply(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	for _, retries := range []int{0, -1} {
		c, p := e.ProxyClient(&redis.Options{MaxRetries: retries})
		k := e.NS.Prefix + "{lose}:" + strconv.Itoa(retries)
		require.NoError(t, c.Ping(ctx).Err())
		p.LoseReply("marker-" + strconv.Itoa(retries))
		_, err := c.RPush(ctx, k, "marker-"+strconv.Itoa(retries)).Result()
		n, lerr := e.Client.LLen(ctx, k).Result()
		require.NoError(t, lerr)
		if retries < 0 {
			require.Error(t, err, "no retry: the lost reply is an error")
			assert.EqualValues(t, 1, n)
		} else {
			require.NoError(t, err, "retried on a new connection")
			assert.EqualValues(t, 2, n, "the command ran twice")
		}
		assert.EqualValues(t, 1, p.Lost())
		assert.Zero(t, p.Pending())
		require.NoError(t, e.Client.Expire(ctx, k, time.Minute).Err())
	}
}
